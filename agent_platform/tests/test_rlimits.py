"""The serving process raises its open-files limit: at Linux's default soft limit
(1,024) daphne would refuse connections at about the thousandth open stream."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Started as a server would be, with a low soft limit; then the ASGI application is loaded.
PROBE = """
import json, resource
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
import agent_platform.asgi
print(json.dumps({"soft": resource.getrlimit(resource.RLIMIT_NOFILE)[0], "hard": hard}))
"""


def test_loading_the_asgi_application_raises_the_soft_limit_to_the_hard_one(tmp_path):
    resource = pytest.importorskip("resource")
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] <= 256:
        pytest.skip("the hard limit leaves nothing to raise")
    env = {key: value for key, value in os.environ.items() if key in {"PATH", "HOME", "LANG"}}
    env["PLATFORM_VAR_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    limits = json.loads(done.stdout.strip().splitlines()[-1])
    assert limits["soft"] == limits["hard"] > 256
