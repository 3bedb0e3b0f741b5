"""Explore a protocol: record it, generate its crash states in a model, replay each, check it."""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from support.crashstates.fsmodel import generate, materialize, resolve
from support.crashstates.fstrace import Recording, record
from support.crashstates.protocols import PROTOCOLS


@dataclass
class Result:
    """What one exploration found."""

    protocol: str
    model: str
    ops: Counter[str]
    """Operations recorded after the begin mark, by kind."""
    states: int = 0
    """Distinct crash states checked."""
    violations: list[tuple[int, tuple[str, ...], list[str]]] = field(default_factory=list)
    """(crash point, acknowledged labels, problems) for each state that broke an invariant."""

    @property
    def ops_text(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(self.ops.items()))


def op_counts(rec: Recording) -> Counter[str]:
    c: Counter[str] = Counter()
    for op in rec.ops:
        if op.kind == "fsync":
            c["fdatasync" if op.data_only else "fsync"] += 1
        elif op.kind != "ack":
            c[op.kind] += 1
    return c


def explore(
    name: str,
    model: str,
    work: Path,
    *,
    budget: int = 64,
    seed: int = 0,
    tears: int = 2,
    drop: str = "",
    recording: Recording | None = None,
    stop_at_first: bool = False,
    scale: int = 1,
) -> Result:
    """Record ``name`` (unless given its ``recording``) and check every crash state ``model`` allows."""
    proto = PROTOCOLS[name]
    rec = recording or record(name, work / f"rec-{name}-{drop or 'clean'}", drop=drop, seed=seed, scale=scale)
    resolve(rec)  # fails early on an unmodelled trace
    res = Result(name, model, op_counts(rec))
    # Each state is replayed where the run's directory was (some files name their path); the
    # directory the run left is kept aside.
    where = Path(rec.root)
    if where.exists():
        where.rename(where.with_name(where.name + ".live"))
    try:
        for state in generate(rec, model, budget=budget, seed=seed, tears=tears):
            where.mkdir()
            materialize(state.tree, where)
            problems = proto.check(where, list(state.acks), rec.info)
            res.states += 1
            shutil.rmtree(where)
            if problems:
                res.violations.append((state.point, state.acks, problems))
                if stop_at_first:
                    break
    finally:
        shutil.rmtree(where, ignore_errors=True)
    return res
