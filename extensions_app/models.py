"""Extension mounts are read from agent trees at discovery time; nothing of them
is stored yet, so this app has no models."""
