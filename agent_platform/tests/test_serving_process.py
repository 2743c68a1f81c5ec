"""A serving process is set up for many open streams when it loads the ASGI application:
its open-files limit raised (at Linux's default soft limit, 1,024, daphne would refuse
connections at about the thousandth open stream) and the garbage collector's thresholds
those of ``agent_platform.serving``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_platform.serving import GC_THRESHOLDS

ROOT = Path(__file__).resolve().parents[2]

# Started as a server would be, with a low soft limit; then the ASGI application is loaded.
PROBE = """
import gc, json, resource
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
import agent_platform.asgi
print(json.dumps({"soft": resource.getrlimit(resource.RLIMIT_NOFILE)[0], "hard": hard, "gc": gc.get_threshold()}))
"""


def test_loading_the_asgi_application_prepares_the_process_for_many_streams(tmp_path):
    resource = pytest.importorskip("resource")
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] <= 256:
        pytest.skip("the hard limit leaves nothing to raise")
    env = {key: value for key, value in os.environ.items() if key in {"PATH", "HOME", "LANG"}}
    env["PLATFORM_VAR_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["soft"] == found["hard"] > 256
    assert tuple(found["gc"]) == GC_THRESHOLDS
