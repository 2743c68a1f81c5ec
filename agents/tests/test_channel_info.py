"""``ctx.channel`` is an object with ``id`` and ``continuation_token``, equal to its mapping form."""

from __future__ import annotations

import dataclasses

import pytest

from agents.sdk import ChannelInfo


def test_a_channel_info_equals_its_mapping_form_and_is_frozen():
    channel = ChannelInfo("slack", "slack:T1/C9/1712.0001")

    assert channel == {"id": "slack", "continuation_token": "slack:T1/C9/1712.0001"}
    assert channel == ChannelInfo("slack", "slack:T1/C9/1712.0001")
    assert channel != {"id": "slack", "continuation_token": None}
    assert channel != ChannelInfo("http", "slack:T1/C9/1712.0001") and channel != "slack"
    assert len({channel, ChannelInfo("slack", "slack:T1/C9/1712.0001")}) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        channel.id = "github"  # type: ignore[misc]
