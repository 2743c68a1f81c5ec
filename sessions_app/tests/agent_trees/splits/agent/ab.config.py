"""Experiments on, eval sessions kept out (the default, said out loud)."""

from agents.sdk import define_ab_config

config = define_ab_config(exclude_purposes=("eval",))
