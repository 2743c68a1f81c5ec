"""The deployed trees the sandbox tests serve: one that tries everything a hostile tenant
would, and one that uses the host APIs and misbehaves on request."""

from __future__ import annotations

ATTACKER = {
    "agent/agent.py": "from agents.sdk import define_agent\n\nagent = define_agent()\n",
    "agent/instructions.md": "You try things.",
    "agent/tools/attack.py": '''
        import os
        import signal
        import socket
        import time

        from agents.sdk import tool


        def _read(path):
            try:
                with open(path, "rb") as handle:
                    return "read %d bytes" % len(handle.read())
            except OSError as refused:
                return "refused: %s" % type(refused).__name__


        def _listing(path):
            try:
                return sorted(os.listdir(path))
            except OSError as refused:
                return "refused: %s" % type(refused).__name__


        def _connect(host, port):
            try:
                with socket.create_connection((host, port), timeout=1):
                    return "connected"
            except OSError as refused:
                return "refused: %s" % type(refused).__name__


        def _fork_bomb(limit=500):
            children = []
            outcome = "forked %d without refusal" % limit
            for _ in range(limit):
                try:
                    pid = os.fork()
                except OSError as refused:
                    outcome = "refused after %d: %s" % (len(children), type(refused).__name__)
                    break
                if pid == 0:
                    time.sleep(30)
                    os._exit(0)
                children.append(pid)
            for pid in children:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            return outcome


        def _fill(path, megabytes):
            chunk = b"x" * (1024 * 1024)
            written = 0
            try:
                with open(path, "wb") as handle:
                    for _ in range(megabytes):
                        handle.write(chunk)
                        handle.flush()
                        written += 1
                return "wrote %d MiB" % written
            except OSError as refused:
                return "refused after %d MiB: %s" % (written, type(refused).__name__)
            finally:
                if os.path.exists(path):
                    os.remove(path)


        @tool
        def attack(ctx, paths: list[str], folders: list[str]) -> dict:
            """Tries to reach what a tenant must never reach.

            Args:
                paths: Files to read.
                folders: Folders to list.
            """
            return {
                "environ": dict(os.environ),
                "proc1": _read("/proc/1/environ"),
                "proc1_environ": open("/proc/1/environ", "rb").read().decode(errors="replace"),
                "uid": os.getuid(),
                "session": ctx.session.id,
                "paths": {path: _read(path) for path in paths},
                "folders": {folder: _listing(folder) for folder in folders},
                "workspaces": _listing(str(ctx.workspace.parent)) if ctx.workspace else None,
                "postgres": _connect("127.0.0.1", 5432),
                "redis": _connect("127.0.0.1", 6379),
                "metadata": _connect("169.254.169.254", 80),
                "fork_bomb": _fork_bomb(),
                "fill_tmp": _fill("/tmp/filler", 200),
                "fill_workspace": _fill(str(ctx.workspace / "filler") if ctx.workspace else "/tmp/w", 200),
            }
    ''',
}

MISBEHAVING = {
    "agent/agent.py": "from agents.sdk import define_agent\n\nagent = define_agent()\n",
    "agent/instructions.md": "You keep notes.",
    "agent/artifacts.py": 'from agents.sdk import define_artifacts\n\nartifacts = define_artifacts(kinds=["note"])\n',
    "agent/tools/keep.py": '''
        from agents.sdk import ToolContext, tool


        @tool(effect="write")
        async def keep(ctx: ToolContext, key: str, text: str) -> dict:
            """Keeps a note in kv, in the session's files and as an artifact."""
            await ctx.host.kv.put(key, {"text": text})
            etag = await ctx.host.files.write(f"notes/{key}.md", text)
            content, again = await ctx.host.files.read(f"notes/{key}.md")
            artifact = await ctx.artifacts.tag(f"{key}.md", text, kind="note")
            return {
                "kv": await ctx.host.kv.get(key),
                "keys": await ctx.host.kv.list(),
                "file": content.decode(),
                "sameEtag": etag == again,
                "files": await ctx.host.files.list("/"),
                "artifact": artifact,
            }
    ''',
    "agent/hooks/audit.py": """
        from agents.sdk import define_hook


        async def completed(event, ctx):
            await ctx.host.kv.put(f"hooked:{ctx.session.id}", event["type"])


        hook = define_hook(events={"turn.completed": completed})
    """,
    "agent/tools/crash.py": '''
        import os
        import signal

        from agents.sdk import tool


        @tool
        def crash() -> str:
            """Kills its own runner in the middle of the call."""
            os.kill(os.getpid(), signal.SIGKILL)
            return "unreachable"
    ''',
    "agent/tools/hog.py": '''
        from agents.sdk import tool


        @tool
        def hog(megabytes: int) -> int:
            """Allocates memory."""
            return len(bytearray(megabytes * 1024 * 1024))
    ''',
    "agent/tools/hang.py": '''
        import time

        from agents.sdk import tool


        @tool(timeout=1)
        def hang() -> str:
            """Never finishes in time."""
            time.sleep(60)
            return "late"
    ''',
    "agent/tools/ping.py": '''
        from agents.sdk import tool


        @tool
        def ping(word: str = "pong") -> str:
            """Answers."""
            return word
    ''',
}

SECRETIVE = {
    "agent/agent.py": 'from agents.sdk import define_agent\n\nagent = define_agent(secrets=["API_TOKEN"])\n',
    "agent/instructions.md": "You hold a token.",
    "agent/tools/token.py": """
        import os

        from agents.sdk import tool


        @tool
        def token(ctx) -> dict:
            \"\"\"What the runner was given.\"\"\"
            return {"environ": dict(os.environ), "secrets": ctx.secrets}
    """,
}
