"""How the triage agent's evals run."""

from agents.sdk import define_evals_config

config = define_evals_config(max_concurrency=4)
