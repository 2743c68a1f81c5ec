"""The runner protocol refuses what it does not define: frames of another version or type,
fields of the wrong type, and objects the platform was not built to make."""

from __future__ import annotations

import socket
import struct

import pytest

from agents.sandbox import protocol
from agents.sandbox.protocol import Decoder, ProtocolError, message


@pytest.mark.parametrize(
    ("frame", "why"),
    [
        ([], "JSON object"),
        ({"version": 2, "type": "ready"}, "version 2"),
        ({"version": 1, "type": "exec"}, "unknown message type 'exec'"),
        ({"version": 1, "type": "call", "id": "1", "ref": "tool:0", "args": []}, "call.id must be int"),
        (
            {"version": 1, "type": "host", "id": 1, "call": True, "method": "kv.get", "args": [], "kwargs": {}},
            "host.call",
        ),
        ({"version": 1, "type": "result", "id": 1, "ok": False}, "needs an error object"),
    ],
)
def test_a_frame_outside_the_protocol_is_refused(frame, why):
    with pytest.raises(ProtocolError, match=why):
        protocol.check(frame)


def test_frames_round_trip_over_a_socket_and_an_oversized_one_is_refused():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        protocol.send(ours, message("cancel", id=3))
        assert protocol.receive(theirs) == {"version": 1, "type": "cancel", "id": 3}
        ours.sendall(struct.pack(">I", protocol.MAX_FRAME_BYTES + 1))
        with pytest.raises(ProtocolError, match="over the"):
            protocol.receive(theirs)


def test_values_keep_their_types_and_only_the_sdks_classes_are_built():
    from agents.sdk import SessionInfo

    value = {"when": (1, b"\x00\xff"), "session": SessionInfo(id="ses_1", agent="a")}
    assert Decoder()(protocol.encode(value)) == value
    with pytest.raises(ProtocolError, match="not a class the protocol may build"):
        Decoder()({"$dc": "subprocess.Popen", "f": {"args": ["sh"]}})
    with pytest.raises(ProtocolError, match="has no fields"):
        Decoder()({"$dc": "agents.sdk._context.SessionInfo", "f": {"id": "s", "agent": "a", "evil": 1}})
    with pytest.raises(ProtocolError, match="a function is not allowed here"):
        Decoder()({"$fn": "plain:0"})
