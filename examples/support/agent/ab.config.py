"""Settings shared by the support agent's experiments: on, and kept out of eval sessions."""

from agents.sdk import define_ab_config

config = define_ab_config()
