"""Three readers, one answer: backward reader, forward index, and the plain reference walk.

Random transcripts are damaged the ways real files get damaged (garbage and blank lines,
CRLF, a repeated line, lines longer than a read chunk, a torn tail) and every reader must
still project exactly the same messages.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kurahi.context import build_context
from kurahi.context.files import project_file
from kurahi.context.reference import reference_projection
from kurahi.errors import ParentCycleError
from kurahi.lineage.check import messages_sha256
from kurahi.pi import Transcript
from support.damage import KINDS, base_session, damage
from support.peer import PiPeer


def _forward(p: Path) -> list[object]:
    with Transcript.open(p) as t:
        if not len(t):
            return []
        return build_context(t.path_entries(t.path_indices(len(t) - 1)), t.leaf_id).messages


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 5),
    kinds=st.lists(st.sampled_from(KINDS), max_size=6),
    salt=st.integers(0, 2**32),
)
def test_backward_forward_and_reference_agree(tmp_path: Path, seed: int, kinds: list[str], salt: int) -> None:
    p = tmp_path / f"d{seed}-{salt}.jsonl"
    p.write_bytes(damage(base_session(tmp_path, seed), random.Random(salt), kinds))
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
    files = []
    for salt in range(40):
        rnd = random.Random(salt)
        kinds = [rnd.choice(KINDS) for _ in range(rnd.randrange(1, 6))]
        p = tmp_path / f"pi{salt}.jsonl"
        p.write_bytes(damage(base_session(tmp_path, salt % 6), rnd, kinds))
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
