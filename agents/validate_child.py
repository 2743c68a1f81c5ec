"""The child process of ``agents.deployments.validate_revision``: discovers one tree and
prints its diagnostics as JSON, with nothing of the platform's (no Django, no settings, an
empty environment). What the tree's code prints goes to stderr, never into the answer.

    python -I agents/validate_child.py PROJECT_ROOT FOLDER SLUG OUTBOUND_ALLOW_JSON
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    project, folder, slug, allow = sys.argv[1:5]
    answer = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the tree's prints, even os.write(1, ...), land on stderr
    sys.path.insert(0, project)
    from pathlib import Path

    from agents.discovery import discover
    from agents.runtime.outbound import OutboundPolicy

    surface, _ = discover(Path(folder), slug, outbound=OutboundPolicy(allow=tuple(json.loads(allow))))
    answer.write(json.dumps({"diagnostics": [d.as_dict() for d in surface.all_diagnostics()]}))
    answer.flush()


if __name__ == "__main__":
    main()
