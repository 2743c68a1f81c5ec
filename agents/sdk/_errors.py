"""Errors an author sees when a definition is wrong."""

from __future__ import annotations


class DefinitionError(ValueError):
    """A helper was called with something that cannot work; raised when the
    authored module is imported, naming the file and the reason."""
