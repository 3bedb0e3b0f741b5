"""The C extension's SHA-256 of many lines (stitch reports) against hashlib, on both code paths."""

from __future__ import annotations

import hashlib
import os
import platform
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kurahi.errors import TranscriptReadError
from kurahi.pi import Transcript
from kurahi.pi.read import native
from kurahi.testing import build_session

pytestmark = pytest.mark.skipif(
    not native.available(),
    reason="!!! the C extension (kurahi.pi.read._native) is not built: its tests are SKIPPED !!!",
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


def test_the_sha_instructions_are_used_exactly_when_the_processor_has_them() -> None:
    cpuinfo = Path("/proc/cpuinfo")
    if platform.machine() not in ("x86_64", "AMD64") or not cpuinfo.exists():
        pytest.skip("!!! not Linux on x86-64: whether SHA-NI is used is not checked here !!!")
    flags = set(cpuinfo.read_text().split())
    assert native._native.sha256_accelerated() == ({"sha_ni", "sse4_1", "ssse3"} <= flags)


def test_a_non_buffer_is_refused() -> None:
    with pytest.raises(TypeError):
        native._native.sha256_split("text")


@pytest.mark.parametrize("portable", [False, True])
@pytest.mark.parametrize("size", [0, 63, 64, 65, (1 << 20) - 1, 1 << 20, (1 << 20) + 65, 3 * (1 << 20) + 7])
def test_a_file_is_hashed_as_hashlib_does_across_read_blocks(tmp_path: Path, size: int, portable: bool) -> None:
    data = bytes(random.Random(size).getrandbits(8) for _ in range(min(size, 4096))) * (size // 4096 + 1)
    p = tmp_path / "f.bin"
    p.write_bytes(data[:size] + b"appended later")
    fd = os.open(p, os.O_RDONLY)
    try:
        got = native._native.sha256_fd(fd, size, portable=portable)
    finally:
        os.close(fd)
    assert got == hashlib.sha256(data[:size]).hexdigest()  # only the first size bytes


def test_a_short_file_or_a_bad_descriptor_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "f.bin"
    p.write_bytes(b"x" * 100)
    fd = os.open(p, os.O_RDONLY)
    try:
        with pytest.raises(EOFError, match="after 100 of 101 bytes"):
            native._native.sha256_fd(fd, 101)
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        native._native.sha256_fd(fd, 10)  # closed now


@pytest.mark.parametrize("c_hash", [True, False])
def test_a_transcripts_digest_is_of_the_bytes_it_was_opened_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, c_hash: bool
) -> None:
    p = tmp_path / "t.jsonl"
    build_session(p, entries=400, seed=3)
    opened = p.read_bytes()
    with Transcript.open(p) as t:
        monkeypatch.setattr(native, "ENABLED", c_hash)  # off: hashlib reads the file instead
        with p.open("ab") as fh:
            fh.write(b'{"type":"message","id":"late","parentId":null}\n')  # after the open
        assert t.content_sha256() == hashlib.sha256(opened).hexdigest()
        os.truncate(p, len(opened) // 2)
        with pytest.raises(TranscriptReadError, match="shrank"):
            t.content_sha256()
    assert Transcript.from_bytes(opened).content_sha256() == hashlib.sha256(opened).hexdigest()
