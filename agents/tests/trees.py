"""Agent trees on disk for tests: ``{relative path: text}`` becomes files."""

from __future__ import annotations

import textwrap
from pathlib import Path

from agents.discovery import AgentSurface, Diagnostic

# The one file every root agent needs; trees include it unless a test is about its absence.
INSTRUCTIONS = {"agent/instructions.md": "You help people."}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write each ``{relative path: text}`` under ``root`` (text dedented) and return ``root``."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def codes(surface: AgentSurface) -> list[str]:
    """The diagnostic ids of the agent and its subagents, in discovery order."""
    return [d.code.id for d in surface.all_diagnostics()]


def only(surface: AgentSurface, code: str) -> Diagnostic:
    """The single diagnostic with this id (fails when there is none or several)."""
    found = [d for d in surface.all_diagnostics() if d.code.id == code]
    assert len(found) == 1, [str(d) for d in surface.all_diagnostics()]
    return found[0]


_TOOL = '''
from agents.sdk import tool


@tool
def f(text: str) -> str:
    """Echo the text."""
    return text
'''
_MOUNT = 'from agents.sdk import mount\n\nextension = mount("../../vendor/crm"{arguments})\n'

# One broken agent tree per error id (INSTRUCTIONS added unless the tree is about them):
# ``agent validate`` and ``manage.py check`` must report each with its id.
BROKEN_TREES: dict[str, dict[str, str]] = {
    "agents.E001": {"agent/tools/echo.py": "raise ValueError('broken at import')\n"},
    "agents.E002": {"agent/tools/echo.py": "TEXT = 'no definition here'\n"},
    "agents.E003": {"agent/tools/echo.py": _TOOL + '\n\n@tool\ndef g() -> str:\n    """Another."""\n    return ""\n'},
    "agents.E004": {"agent/tools/echo.py": "from agents.sdk import define_hook\n\nhook = define_hook(events={})\n"},
    "agents.E005": {"agent/tools/a__b.py": _TOOL},
    "agents.E006": {"agent/tools/Read.py": _TOOL},
    "agents.E007": {"agent/tools/echo.py": _TOOL, "agent/instructions.md": ""},
    "agents.E009": {
        "agent/subagents/helper/agent.py": "from agents.sdk import define_agent\n\nagent = define_agent()\n"
    },
    "agents.E010": {"agent/schedules/daily.md": "---\ncron: 'every day'\n---\nSummarise.\n"},
    "agents.E013": {"agent/agent.py": "from agents.sdk import define_agent\n\nagent = define_agent(model='gpt')\n"},
    "agents.E014": {"agent/skills/escalate.md": "Call a human.\n"},
    "agents.E015": {
        "evals/smoke.eval.py": "from agents.sdk import define_eval\n\ncase = define_eval(test=lambda t: None)\n"
    },
    "agents.E017": {"agent/tools/bad name.py": _TOOL},
    "agents.E019": {
        "agent/skills/a.md": "---\ndescription: A.\n---\nA.\n",
        "agent/skills/a/SKILL.md": "---\ndescription: A.\n---\nA.\n",
    },
    "agents.E020": {"agent/extensions/crm.py": 'from agents.sdk import mount\n\nextension = mount("./nowhere")\n'},
    "agents.E021": {
        "agent/extensions/crm.py": _MOUNT.format(arguments=', config={"region": "eu"}'),
        "vendor/crm/tools/lookup.py": _TOOL,
    },
    "agents.E022": {
        "agent/extensions/crm.py": "from agents.sdk import disable_tool, mount\n\n"
        'extension = mount("../../vendor/crm", disable=[disable_tool("ghost")])\n',
        "vendor/crm/tools/lookup.py": _TOOL,
    },
    "agents.E024": {
        "agent/extensions/crm.py": "from agents.sdk import plugin_mount\n\n"
        'extension = plugin_mount(path="../../vendor/p")\n',
        "vendor/p/README.md": "no plugin.json",
    },
    "agents.E025": {
        "agent/extensions/crm/extension.py": 'from agents.sdk import mount\n\nm = mount("../../../vendor/crm")\n',
        "agent/extensions/crm/tools/ghost.py": _TOOL,
        "vendor/crm/tools/lookup.py": _TOOL,
    },
    "agents.E029": {
        "agent/agent.py": "from agents.sdk import define_agent, temp_fs\n\n"
        "agent = define_agent(root=temp_fs(), tools=['Cat'])\n"
    },
    "agents.E030": {"agent/agent.py": "from agents.sdk import define_agent\n\nagent = define_agent(tools=['Read'])\n"},
    "agents.E032": {
        "agent/hooks/audit.py": "from agents.sdk import define_hook\n\n\n"
        "def on_done(ctx, event):\n    return None\n\n\nhook = define_hook(events={'turn.completed': on_done})\n"
    },
}


def write_broken_trees(agents_dir: Path) -> dict[str, str]:
    """Write every broken tree as an agent of ``agents_dir``; returns ``{slug: error id}``."""
    slugs = {}
    for code, files in BROKEN_TREES.items():
        slug = "broken-" + code.removeprefix("agents.").lower()
        write_tree(agents_dir / slug, {**INSTRUCTIONS, **files})
        slugs[slug] = code
    return slugs
