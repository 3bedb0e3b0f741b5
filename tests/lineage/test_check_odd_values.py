"""`check` on values a projection must carry unchanged, and on a loop: both projections agree.

The reference projection and the fast one run in the same process (no forked child): values
that no wire format between processes would carry (a lone surrogate, an integer beyond 64
bits) reach the report as they are, and a loop in the path is the store's error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kurahi.errors import ParentCycleError
from kurahi.lineage.check import check
from kurahi.testing import build_session

MARKERS = ["EARLY-AMBER-FINCH", "LATE-COBALT-HERON"]


def _report(path: Path) -> dict[str, Any]:
    return check(path, markers=MARKERS, reserves=[16384, 4096], system_prompt_tokens=[0, 9000]).to_dict()


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("check") / "big.jsonl"
    build_session(p, entries=3000, seed=21, compact_every=400, markers=[MARKERS[0], "x", "y", MARKERS[1]])
    return p


def test_a_large_file_is_checked_and_both_projections_agree(big: Path) -> None:
    report = _report(big)
    assert report["projectionsAgree"], report
    assert report["sha256"] == report["referenceSha256"]


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("lone \ud800 surrogate", id="lone-surrogate"),
        pytest.param(2**70, id="huge-integer"),
    ],
)
def test_odd_values_reach_both_projections_unchanged(big: Path, tmp_path: Path, content: Any) -> None:
    lines = big.read_bytes().rstrip(b"\n").split(b"\n")
    last = json.loads(lines[-1])
    odd = {
        "type": "message",
        "id": "odd00001",
        "parentId": last["id"],
        "timestamp": "2026-11-30T09:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "odd"}], "timestamp": 1, "extra": content},
    }
    p = tmp_path / "odd.jsonl"
    p.write_bytes(b"\n".join([*lines, json.dumps(odd).encode("utf-8", "surrogatepass")]) + b"\n")
    report = _report(p)
    assert report["projectionsAgree"], report
    assert report["messages"] == _report(big)["messages"] + 1


def test_a_loop_in_the_path_is_named(big: Path, tmp_path: Path) -> None:
    lines = big.read_bytes().rstrip(b"\n").split(b"\n")
    first, last = json.loads(lines[1]), json.loads(lines[-1])
    first["parentId"] = last["id"]  # the path now loops back to its end
    p = tmp_path / "cycle.jsonl"
    p.write_bytes(b"\n".join([lines[0], json.dumps(first).encode(), *lines[2:]]) + b"\n")
    with pytest.raises(ParentCycleError) as exc:
        _report(p)
    assert first["id"] in str(exc.value) and last["id"] in str(exc.value)
