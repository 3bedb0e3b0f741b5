"""Crash states of every write protocol, small cases (issue 20); the full run is benchmarks/crash_states.py.

Each protocol runs under strace; every crash state the ext4 and the strict model allow at each
fsync (a few choices per point here) is replayed and checked. Then one fsync each checker
relies on is left out of the run (``driver.py --drop``), and the ext4 model must catch it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.crashstates.explore import explore
from support.crashstates.fsmodel import generate, resolve
from support.crashstates.fstrace import Op, Recording, record
from support.crashstates.protocols import PROTOCOLS

pytestmark = pytest.mark.skipif(
    shutil.which("strace") is None,
    reason="strace not found (`make strace` installs the Debian package): the power-cut crash states are not explored",
)


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    """Where protocols run and states are replayed: memory when the machine has ``/dev/shm``.

    The model decides what a power cut keeps; the replayed states are checked, not made
    durable, so their fsyncs need not wait for a disk (the suite runs four times faster).
    """
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    where = Path(tempfile.mkdtemp(prefix="kurahi-crashstates-", dir=shm))
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


BUDGET = 8
TEARS = 1


def _budget(name: str) -> int:
    # An activation's recovery reruns the whole apply (hashes, catalog, audit) for each state:
    # fewer states here, all of them in the benchmark.
    return 1 if "sqlite" in name else 2 if PROTOCOLS[name].cost > 1 else BUDGET


# The SQLite era's recovery copies and reopens the whole store for every state: one of its
# protocols here, in the ext4 model only; both, in both models, in the benchmark.
SQLITE_HERE = "activation-apply-sqlite"
FAST = [n for n in PROTOCOLS if "sqlite" not in n]


@pytest.mark.parametrize("name", [*FAST, SQLITE_HERE])
def test_no_crash_state_breaks_an_invariant(name: str, work: Path) -> None:
    rec = record(name, work / "rec")
    assert any(op.kind in ("write", "create", "rename", "link") for op in rec.ops), "nothing was recorded"
    for model in ("ext4",) if name == SQLITE_HERE else ("ext4", "strict"):
        res = explore(name, model, work, budget=_budget(name), tears=TEARS, recording=rec)
        print(f"\nCRASH {name} {model}: {res.states} states, ops [{res.ops_text}]")
        assert res.states > 0
        assert not res.violations, f"{model}: {res.violations[:3]}"


@pytest.mark.parametrize(
    ("name", "drop"), [(n, PROTOCOLS[n].drops[0]) for n in FAST if PROTOCOLS[n].drops], ids=lambda x: str(x)
)
def test_a_checker_catches_a_left_out_fsync(name: str, drop: str, work: Path) -> None:
    # One fsync per checker here; benchmarks/crash_states.py leaves out each kind in turn.
    res = explore(name, "ext4", work, budget=_budget(name), drop=drop, stop_at_first=True)
    assert res.violations, f"{name} without its {drop}: no crash state broke an invariant"


def _rec(ops: list[Op]) -> Recording:
    return Recording(files={}, dirs=[""], links={}, fds={}, ops=ops, acks=[o.label for o in ops if o.kind == "ack"])


def test_the_models_keep_and_lose_what_they_say() -> None:
    """A new file written and fdatasynced, without a directory fsync, then with one."""
    ops = [
        Op("create", "f"),
        Op("write", "f", offset=0, data=b"x" * 5000),
        Op("fsync", "f", data_only=True),
        Op("ack", label="written"),
        Op("rename", "f", dest="g"),
        Op("fsync", ""),
        Op("ack", label="renamed"),
    ]
    _, resolved, live = resolve(_rec(ops))
    assert live.tree() == {"g": b"x" * 5000} and len(resolved) == len(ops)
    ext4 = list(generate(_rec(ops), "ext4", budget=100))
    strict = list(generate(_rec(ops), "strict", budget=20_000))  # every byte cut: exhaustive
    for states in (ext4, strict):
        written = [s.tree for s in states if s.acks == ("written",)]
        assert {} in written, "a new name is not durable before its directory is fsynced"
        assert {"g": b"x" * 5000} in written or {"f": b"x" * 5000} in written
        assert all(s.tree == {"g": b"x" * 5000} for s in states if s.acks == ("written", "renamed"))
    before_sync = [s.tree for s in ext4 if not s.acks]
    # ext4: data survives only as a prefix cut at a 4 KiB page, never with zeros in it.
    assert {"f": b"x" * 4096} in before_sync and {"f": b""} in before_sync
    assert all(set(t.get("f", b"")) <= {ord("x")} for t in before_sync)
    torn = [s.tree.get("f", b"") for s in strict if not s.acks]
    assert any(0 < len(t) < 5000 and len(t) != 4096 for t in torn), "strict: no write torn at a byte"
    assert any(t and set(t) == {0} for t in torn), "strict: no write whose size landed without its data"
