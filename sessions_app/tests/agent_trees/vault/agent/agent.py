"""``vault``: an agent that declares secrets, as the secrets tests drive it
(agents/tests/test_secrets_api.py, sessions_app/tests/test_secrets_live.py)."""

from agents.sdk import define_agent

agent = define_agent(secrets=["VAULT_TOKEN", "VAULT_FILE_TOKEN"])
