"""Kurahi against Pi 1.6.0 on files Pi's own ``SessionManager`` wrote from random programs.

``tests/peers/pi_fuzz.mjs`` draws the programs, runs them through Pi and prints, for each
file, Pi's ``JSON.stringify`` of ``{leafId, thinkingLevel, model, messages}`` at the leaf
and at a few other entries. :func:`compare` asks every way Kurahi has of reading a file for
the same, byte for byte:

- ``project``: :func:`kurahi.context.files.project_file` with stored messages copied, what
  ``kurahi session context FILE [--leaf ID] --json`` prints (the quick way when the C
  scanner is on, the backward reader when it is off);
- ``backward``: the backward reader (:mod:`kurahi.pi.read.backward`) itself;
- ``full``: the whole-file reader (:class:`kurahi.pi.Transcript`) and the projection;
- ``reference`` (at the leaf only): ``lineage check``'s reference projection, whose messages
  must equal Pi's as JSON values.

The first three run with the C scanner and without it. A point where Pi throws is
*explained* when Kurahi documents the difference (``docs/store.md``): a message entry without
a message (``appendMessage(undefined)``), which Pi cannot build a context over and Kurahi
skips with a warning. Every other difference is *unexplained*.

Used by ``tests/conformance/test_pi_fuzz.py`` (a few hundred files) and
``benchmarks/pi_fuzz.py`` (thousands, by hand).
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.peer import NODE, ROOT, PiPeer

FUZZ_JS = ROOT / "tests" / "peers" / "pi_fuzz.mjs"


def run_pi(
    seed: int, count: int, out: Path, *, points: int = 3, deep: bool = True, max_levels: int = 30_000
) -> list[dict[str, Any]]:
    """Run ``count`` programs of ``seed`` through Pi 1.6.0; one record per file it wrote.

    ``deep``: some ``details`` nest past CPython's decoders, up to ``max_levels`` levels.
    """
    pi = PiPeer("1.6.0")
    assert NODE is not None
    flags = ["--seed", str(seed), "--count", str(count), "--out", str(out), "--points", str(points)]
    flags += ["--deep", "--max-levels", str(max_levels)] if deep else []
    proc = subprocess.run(
        [NODE, str(FUZZ_JS), *flags],
        capture_output=True,
        text=True,
        timeout=1800,
        env=pi.env,
        check=False,
    )
    assert proc.returncode == 0, f"pi_fuzz.mjs --seed {seed} failed:\n{proc.stderr[-4000:]}"
    return [json.loads(line) for line in proc.stdout.split("\n") if line.strip()]


@contextmanager
def c_scanner(on: bool) -> Iterator[None]:
    """The C scanner switched on or off (as ``KURAHI_NATIVE=0`` does) for the block."""
    from kurahi.pi.read import native

    saved = native.ENABLED
    native.ENABLED = on
    try:
        yield
    finally:
        native.ENABLED = saved


def _project(path: Path, leaf: str | None) -> bytes:
    from kurahi.context.files import project_file

    return project_file(path, leaf, copy_stored=True).context.to_json()


def _backward(path: Path, leaf: str | None) -> bytes:
    from kurahi.context.files import _project_read

    return _project_read(path, leaf, False).context.to_json()


def _full(path: Path, leaf: str | None) -> bytes:
    from kurahi.context.files import _project_full

    return _project_full(path, leaf, False).context.to_json()


READERS = {"project": _project, "backward": _backward, "full": _full}


@dataclass
class Tally:
    """What a run compared, and every difference not documented."""

    programs: int = 0
    calls: int = 0
    files: int = 0
    projections: int = 0
    identical: int = 0
    explained: int = 0
    flags: Counter[str] = field(default_factory=Counter)
    unexplained: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One line for a report."""
        return (
            f"{self.programs} programs ({self.calls} calls), {self.files} files, "
            f"{self.projections} projections: {self.identical} identical, "
            f"{self.explained} explained, {len(self.unexplained)} unexplained; flags {dict(self.flags)}"
        )


def _undefined_message(path: Path) -> bool:
    """Whether some message entry of the file has no ``message`` (``appendMessage(undefined)``)."""
    return any(b'"type":"message"' in line and b'"message":' not in line for line in path.read_bytes().split(b"\n"))


def compare(records: list[dict[str, Any]], tally: Tally) -> None:
    """Compare Kurahi's readers with Pi on every point of every record, adding to ``tally``."""
    from kurahi.context.reference import reference_projection

    for rec in records:
        path = Path(rec["file"])
        tally.files += 1
        tally.calls += rec["calls"]
        tally.programs += rec["calls"] > 0
        tally.flags.update(rec["flags"])
        data = path.read_bytes()
        # Files whose entries Pi stamped before year 1 or after 9999 (toISOString's signed years).
        tally.flags.update(
            name
            for name, mark in (("yearBefore1", b'"timestamp":"-'), ("yearAfter9999", b'"timestamp":"+'))
            if mark in data
        )
        for point in rec["points"]:
            at = point["at"]
            where = f"{path.name} (seed {rec['seed']}, program {rec['program']}) at {at or 'the leaf'}"
            if "error" in point:
                if "reading 'role'" in point["error"] and _undefined_message(path):
                    for on in (True, False):
                        with c_scanner(on):
                            _project(path, at)  # Kurahi answers (and warns) where Pi throws
                    tally.projections += 1
                    tally.explained += 1
                else:
                    tally.projections += 1
                    tally.unexplained.append(f"{where}: Pi threw {point['error']!r}")
                continue
            want = point["json"].encode("utf-8")
            for on in (True, False):
                with c_scanner(on):
                    for name, read in READERS.items():
                        tally.projections += 1
                        try:
                            got = read(path, at)
                        except Exception as exc:
                            tally.unexplained.append(f"{where}: {name} (C scanner {on}) raised {exc!r}")
                            continue
                        if got == want:
                            tally.identical += 1
                        else:
                            tally.unexplained.append(f"{where}: {name} (C scanner {on}) differs\n{_diff(want, got)}")
            if at is None:
                tally.projections += 1
                try:
                    ref = reference_projection(path).messages
                except Exception as exc:
                    tally.unexplained.append(f"{where}: reference raised {exc!r}")
                    continue
                if _same(ref, _loads(point["json"])["messages"]):
                    tally.identical += 1
                else:
                    tally.unexplained.append(f"{where}: the reference projection differs")


def _loads(text: str) -> Any:
    from kurahi.js import deepjson

    try:
        return json.loads(text)
    except RecursionError:
        return deepjson.loads(text)


def _same(ours: Any, theirs: Any) -> bool:
    """Equal as JavaScript values once written (``-0`` is ``0``, a 70-bit integer its double)."""
    from kurahi.js.stringify import js_json

    return js_json(ours) == js_json(theirs)


def _diff(want: bytes, got: bytes) -> str:
    i = next((k for k, (a, b) in enumerate(zip(want, got, strict=False)) if a != b), min(len(want), len(got)))
    lo = max(0, i - 120)
    return f"  Pi:     …{want[lo : i + 120]!r}\n  Kurahi: …{got[lo : i + 120]!r}"
