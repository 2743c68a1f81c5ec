"""The sandbox: untrusted agent trees are discovered and run in bubblewrap runner processes.

``sandboxed_surface`` discovers a tree in a runner and gives the surface whose functions
run there; ``validate_in_sandbox`` gives a tree's diagnostics without serving it. No
Django here (``agents.registry`` decides which agents are sandboxed); docs/security.md
says what the sandbox guarantees.
"""

from __future__ import annotations

from agents.sandbox.pool import live_runners, reap
from agents.sandbox.process import Limits, SandboxError, bwrap_path
from agents.sandbox.surface import SandboxLoader, is_sandboxed, sandboxed_surface, validate_in_sandbox

__all__ = [
    "Limits",
    "SandboxError",
    "SandboxLoader",
    "bwrap_path",
    "is_sandboxed",
    "live_runners",
    "reap",
    "sandboxed_surface",
    "validate_in_sandbox",
]
