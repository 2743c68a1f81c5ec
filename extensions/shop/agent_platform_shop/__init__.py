"""The shop extension, as a package: a tree laid out like ``agent/`` (``extension.py``,
``tools/``, ``skills/``, ``hooks/``, ``instructions.md``, ``instructions.py``, ``lib/``).

The platform never imports it as a library: it finds its folder through the entry point
``shop`` of the group ``agent_platform.extensions`` and discovers the tree, as it does
an agent's."""
