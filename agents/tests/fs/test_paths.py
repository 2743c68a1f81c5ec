"""Path normalisation: absolute posix, ``.``/``..``/``//`` collapsed, never above ``/``."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from agents.runtime.fs import FileSystemError, normalize

# Keep Hypothesis's caches out of the checkout (it would create ./.hypothesis).
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "agent-platform-hypothesis")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("./memory/x", "/memory/x"),
        ("a/../memory/x", "/memory/x"),
        ("memory/x", "/memory/x"),
        ("/memory//x/", "/memory/x"),
        ("/a/./b/../../memory/x", "/memory/x"),
        ("..", "/"),
        ("/../../..", "/"),
        ("../../etc/passwd", "/etc/passwd"),
        ("", "/"),
        (".", "/"),
        ("/a..b/...", "/a..b/..."),
    ],
)
def test_normalize(raw, expected):
    assert normalize(raw) == expected


def test_a_nul_byte_is_refused():
    with pytest.raises(FileSystemError) as raised:
        normalize("/a\x00b")
    assert str(raised.value) == "invalid path: /a\\x00b"


_segments = st.sampled_from(["", ".", "..", "a", "b", "...", "a..", "memory", " "]) | st.text(
    alphabet=st.characters(blacklist_characters="\x00/"), max_size=4
)


@settings(database=None)
@given(st.lists(_segments, max_size=12).map("/".join), st.booleans())
def test_normalize_is_idempotent_absolute_and_clean(joined, absolute):
    path = normalize(("/" if absolute else "") + joined)
    assert normalize(path) == path
    assert path.startswith("/")
    assert "//" not in path
    assert ".." not in path.split("/")
    assert "." not in path.split("/")
    assert path == "/" or not path.endswith("/")


@pytest.mark.parametrize("raw", ["/a\ud800", "\udc80/x", "/ok/\udfff"])
def test_a_lone_surrogate_is_refused_and_shown_escaped(raw):
    with pytest.raises(FileSystemError) as raised:
        normalize(raw)
    assert str(raised.value).startswith("invalid path: ")
    str(raised.value).encode("utf-8")  # the message itself is valid text
