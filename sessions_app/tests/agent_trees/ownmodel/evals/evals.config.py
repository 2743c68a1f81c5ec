from agents.sdk import define_evals_config

# A model id no provider serves: a turn that runs on it fails naming it.
config = define_evals_config(model="nowhere:eval-model")
