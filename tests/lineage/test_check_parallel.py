"""`check` on two cores: the reference projection from a forked child gives the same report.

A child that cannot send its answer (a value msgpack cannot carry) or fails is replaced by
the reference made in-process, so the report and the errors never depend on the fork.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from kurahi.errors import KurahiError
from kurahi.lineage.check import PARALLEL_MIN_BYTES, check
from kurahi.store.twoproc import fork_is_safe
from kurahi.testing import build_session

pytestmark = pytest.mark.skipif(not fork_is_safe(), reason="fork is not available or not worth it here (one core)")

check_mod = importlib.import_module("kurahi.lineage.check")  # the package exports the function under the same name

MARKERS = ["EARLY-AMBER-FINCH", "LATE-COBALT-HERON"]


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record, per check, whether the child's answer arrived."""
    got: list[bool] = []
    real = check_mod.run_halves

    def spy(child: Any, parent: Any) -> Any:
        result, payload = real(child, parent)
        got.append(payload is not None)
        return result, payload

    monkeypatch.setattr(check_mod, "run_halves", spy)
    return got


def _report(path: Path, monkeypatch: pytest.MonkeyPatch, *, processes: int) -> dict[str, Any]:
    monkeypatch.setenv("KURAHI_SCAN_PROCESSES", str(processes))
    return check(path, markers=MARKERS, reserves=[16384, 4096], system_prompt_tokens=[0, 9000]).to_dict()


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("parallel") / "big.jsonl"
    build_session(p, entries=3000, seed=21, compact_every=400, markers=[MARKERS[0], "x", "y", MARKERS[1]])
    assert p.stat().st_size >= PARALLEL_MIN_BYTES
    return p


def test_the_forked_reference_gives_the_same_report(big: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    arrived = _spy(monkeypatch)
    forked = _report(big, monkeypatch, processes=2)
    assert arrived == [True]  # the child answered
    alone = _report(big, monkeypatch, processes=1)
    assert arrived == [True]  # no fork when told not to
    assert forked == alone and forked["projectionsAgree"]


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("lone \ud800 surrogate", id="lone-surrogate"),  # msgpack refuses lone surrogates
        pytest.param(2**70, id="huge-integer"),  # and integers beyond 64 bits
    ],
)
def test_a_value_the_child_cannot_send_is_projected_here_instead(
    big: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: Any
) -> None:
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
    arrived = _spy(monkeypatch)
    forked = _report(p, monkeypatch, processes=2)
    assert arrived == [False]  # the child could not send it ...
    assert forked == _report(p, monkeypatch, processes=1)  # ... and the report is the same anyway
    assert forked["projectionsAgree"]


def test_errors_are_the_same_with_or_without_the_child(
    big: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = big.read_bytes().rstrip(b"\n").split(b"\n")
    first, last = json.loads(lines[1]), json.loads(lines[-1])
    first["parentId"] = last["id"]  # the path now loops back to its end
    p = tmp_path / "cycle.jsonl"
    p.write_bytes(b"\n".join([lines[0], json.dumps(first).encode(), *lines[2:]]) + b"\n")
    errors = []
    for processes in (2, 1):
        with pytest.raises(KurahiError) as exc:
            _report(p, monkeypatch, processes=processes)
        errors.append((type(exc.value).__name__, str(exc.value)))
    assert errors[0] == errors[1] and errors[0][0] == "ParentCycleError"


def test_a_child_answer_that_does_not_decode_is_replaced(big: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = check_mod.run_halves

    def garbled(child: Any, parent: Any) -> Any:
        result, _ = real(child, parent)
        return result, b"\xc1 not msgpack"

    monkeypatch.setattr(check_mod, "run_halves", garbled)
    forked = _report(big, monkeypatch, processes=2)
    assert forked == _report(big, monkeypatch, processes=1) and forked["projectionsAgree"]
