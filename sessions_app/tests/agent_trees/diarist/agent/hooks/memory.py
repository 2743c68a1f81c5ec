from agents.sdk.memory import memory_hook

hook = memory_hook()
