"""``fsio.file_sha256``: the digest of a whole file, or of its first bytes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from kurahi.fs.durable import file_sha256


@pytest.mark.parametrize("limit", [None, 0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 7, 3 << 20])
def test_file_sha256_of_the_first_bytes(tmp_path: Path, limit: int | None) -> None:
    data = bytes(range(256)) * ((5 << 20) // 256 + 3)  # more than four read blocks
    p = tmp_path / "f"
    p.write_bytes(data)
    assert file_sha256(p, limit=limit) == hashlib.sha256(data if limit is None else data[:limit]).hexdigest()


def test_a_limit_past_the_end_is_the_whole_file(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"short")
    assert file_sha256(p, limit=10**9) == hashlib.sha256(b"short").hexdigest()
