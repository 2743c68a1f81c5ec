"""``github``: the GitHub pack as sessions_app/tests/triggers/github/test_github_pack.py drives it, against
a local fake GitHub whose URL the test puts in ``HUBBOT_GITHUB_API`` before the worker
starts (read when the tree is discovered, in each process)."""

import os

from agents.sdk import github_channel

channel = github_channel(
    secret="HUBBOT_WEBHOOK_SECRET",
    token="HUBBOT_TOKEN",
    api_url=os.environ.get("HUBBOT_GITHUB_API", "https://api.github.com"),
    bot_name="hubbot",
    repositories=["acme/app"],
)
