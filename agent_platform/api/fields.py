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


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer and nothing else: not "5", 5.5 or true (5.0 is JSON Schema's integer 5)."""

    def to_internal_value(self, data: object) -> int:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        if isinstance(data, float) and not data.is_integer():
            self.fail("invalid")
        return int(super().to_internal_value(int(data)))
