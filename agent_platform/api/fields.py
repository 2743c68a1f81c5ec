"""Serializer fields that take JSON as it is, without DRF's coercions."""

from __future__ import annotations

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """A string and nothing else: DRF's CharField would turn 42 or true into text."""

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class StrictBooleanField(serializers.BooleanField):
    """``true`` or ``false`` only, not "yes" or 1."""

    def to_internal_value(self, data: object) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data
