"""Three readers, one answer: backward reader, forward index, and the plain reference walk.

Random transcripts are damaged the ways real files get damaged (garbage and blank lines,
CRLF, a repeated line, lines longer than a read chunk, a torn tail) and every reader must
still project exactly the same messages.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kurahi.context import build_context
from kurahi.context.files import project_file
from kurahi.errors import ParentCycleError
from kurahi.lineage.check import messages_sha256
from kurahi.lineage.reference import reference_projection
from kurahi.store import Transcript
from kurahi.testing import build_session
from peer import PiPeer

_BASES: dict[int, bytes] = {}


def _base(tmp: Path, seed: int) -> bytes:
    if seed not in _BASES:
        p = tmp / f"base{seed}.jsonl"
        build_session(p, entries=150 + 50 * seed, seed=seed, compact_every=60 + 10 * seed)
        _BASES[seed] = p.read_bytes()
    return _BASES[seed]


def _damage(data: bytes, rnd: random.Random, kinds: list[str]) -> bytes:
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
            entry = json.loads(body[i])
            if entry.get("type") == "message" and isinstance(entry["message"].get("content"), str):
                entry["message"]["content"] += "x" * rnd.randrange(70_000, 200_000)
                body[i] = json.dumps(entry).encode()
        elif kind == "header":
            body.insert(at, header)
    out = b"\n".join([header, *body]) + b"\n"
    if "torn" in kinds:
        out += b'{"type":"message","id":"torn","parentId":null,"mess'
    return out


def _forward(p: Path) -> list[object]:
    with Transcript.open(p) as t:
        if not len(t):
            return []
        return build_context(t.path_entries(t.path_indices(len(t) - 1)), t.leaf_id).messages


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 5),
    kinds=st.lists(st.sampled_from(["garbage", "blank", "crlf", "repeat", "long", "header", "torn"]), max_size=6),
    salt=st.integers(0, 2**32),
)
def test_backward_forward_and_reference_agree(tmp_path: Path, seed: int, kinds: list[str], salt: int) -> None:
    p = tmp_path / f"d{seed}-{salt}.jsonl"
    p.write_bytes(_damage(_base(tmp_path, seed), random.Random(salt), kinds))
    try:
        fast = project_file(p).context.messages
    except ParentCycleError:
        with pytest.raises(ParentCycleError):
            reference_projection(p)
        return
    forward = _forward(p)
    reference = reference_projection(p).messages
    assert messages_sha256(fast) == messages_sha256(forward) == messages_sha256(reference), (kinds, salt)


@pytest.mark.pi
def test_damaged_files_read_as_pi_reads_them(tmp_path: Path, pi: PiPeer) -> None:
    kinds_all = ["garbage", "blank", "crlf", "repeat", "long", "header", "torn"]
    files = []
    for salt in range(40):
        rnd = random.Random(salt)
        kinds = [rnd.choice(kinds_all) for _ in range(rnd.randrange(1, 6))]
        p = tmp_path / f"pi{salt}.jsonl"
        p.write_bytes(_damage(_base(tmp_path, salt % 6), rnd, kinds))
        files.append(p)
    for p, live in zip(files, pi.contexts(files), strict=True):
        assert "error" not in live, (p, live)
        got = project_file(p).context.to_dict()
        assert messages_sha256(got["messages"]) == messages_sha256(live["messages"]), p
        assert (got["leafId"], got.get("thinkingLevel"), got["model"]) == (
            live["leafId"],
            live.get("thinkingLevel"),
            live["model"],
        ), p
