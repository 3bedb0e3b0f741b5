"""The C extension's SHA-256 of many lines (stitch reports) against hashlib, on both code paths."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kurahi.store import native

pytestmark = pytest.mark.skipif(
    not native.available(), reason="!!! the C extension (kurahi.store._native) is not built: its tests are SKIPPED !!!"
)

# Lengths around SHA-256's block (64) and padding (55/56 bytes fit one block, 56+ need two).
BOUNDARIES = [0, 1, 54, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4095, 4096, 65537]


def _want(data: bytes) -> list[str]:
    return [hashlib.sha256(piece).hexdigest() for piece in data.split(b"\n")]


@pytest.mark.parametrize("portable", [False, True])
@pytest.mark.parametrize("n", BOUNDARIES)
def test_every_boundary_length_hashes_as_hashlib_does(n: int, portable: bool) -> None:
    line = bytes((i * 7 + 1) % 256 for i in range(n)).replace(b"\n", b"\xff")
    for data in (line, line + b"\n", b"\n" + line, line + b"\n" + line[::-1] + b"\n\n"):
        assert native._native.sha256_split(data, portable=portable) == _want(data)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=12))
def test_any_lines_hash_as_hashlib_does_on_both_paths(pieces: list[bytes]) -> None:
    data = b"\n".join(p.replace(b"\n", b"") for p in pieces)
    want = _want(data)
    assert native._native.sha256_split(data) == want
    assert native._native.sha256_split(data, portable=True) == want
    assert native._native.sha256_split(bytearray(data)) == want  # any buffer
    assert native.line_digests(data) == want


def test_without_the_extension_the_digests_come_from_hashlib(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b'{"a":1}\n{"b":2}\n'
    monkeypatch.setattr(native, "ENABLED", False)
    assert native.line_digests(data) == _want(data)


def test_the_accelerated_path_is_reported_and_a_non_buffer_is_refused() -> None:
    assert isinstance(native._native.sha256_accelerated(), bool)
    with pytest.raises(TypeError):
        native._native.sha256_split("text")
