"""Generated transcripts damaged the ways real files get damaged, shared by the reader tests."""

from __future__ import annotations

import json
import random
from pathlib import Path

from kurahi.testing import build_session

__all__ = ["KINDS", "base_session", "damage"]

KINDS = ["garbage", "blank", "crlf", "repeat", "long", "header", "torn"]
"""Every kind of damage :func:`damage` knows."""

_BASES: dict[int, bytes] = {}


def base_session(tmp: Path, seed: int) -> bytes:
    """A generated transcript (150 + 50 × seed entries), built once per seed per run."""
    if seed not in _BASES:
        p = tmp / f"base{seed}.jsonl"
        build_session(p, entries=150 + 50 * seed, seed=seed, compact_every=60 + 10 * seed)
        _BASES[seed] = p.read_bytes()
    return _BASES[seed]


def damage(data: bytes, rnd: random.Random, kinds: list[str]) -> bytes:
    """``data`` with garbage and blank lines, CRLF, a repeated line, lines longer than a read
    chunk, a second header and a torn tail, as ``kinds`` asks."""
    lines = data.split(b"\n")[:-1]
    header, body = lines[0], lines[1:]
    for kind in kinds:
        at = rnd.randrange(1, len(body) + 1)
        if kind == "garbage":
            body.insert(at, b'{"type":"message","id":"zz' + bytes([rnd.randrange(97, 123)]))
        elif kind == "blank":
            body.insert(at, rnd.choice([b"", b"   ", b"\t"]))
        elif kind == "crlf":
            i = rnd.randrange(len(body))
            body[i] = body[i] + b"\r"
        elif kind == "repeat":
            body.insert(at, body[rnd.randrange(len(body))])
        elif kind == "long":
            i = rnd.randrange(len(body))
            try:
                entry = json.loads(body[i])
            except ValueError:
                continue  # a garbage, blank or CRLF line an earlier kind put there: nothing to lengthen
            if (
                isinstance(entry, dict)
                and entry.get("type") == "message"
                and isinstance(entry["message"].get("content"), str)
            ):
                entry["message"]["content"] += "x" * rnd.randrange(70_000, 200_000)
                body[i] = json.dumps(entry).encode()
        elif kind == "header":
            body.insert(at, header)
    out = b"\n".join([header, *body]) + b"\n"
    if "torn" in kinds:
        out += b'{"type":"message","id":"torn","parentId":null,"mess'
    return out
