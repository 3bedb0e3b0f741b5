"""SIGKILL a process appending to a Kurahi transcript, many times, and check nothing is lost.

Each round starts a child (``python -c``) that opens the same transcript with
``Session.open`` (fsync policy ``never`` and ``always``, alternating by round), prints
``ready`` and then appends realistic messages in a tight loop, printing each entry's id
on stdout (flushed) once its ``append_message`` returned. The parent reads those ids
(the *acknowledged* entries), SIGKILLs the child at a random moment (a few ms to tens of
ms after ``ready``; in a tenth of the rounds counted from spawn instead, so some kills
land while the child is opening the file and holds the lock) and then checks:

* the file opens with ``Transcript.open`` and with ``project_file`` (else *unreadable*);
* every id acknowledged so far, in any round, is in the transcript (else *lost*);
* the only warnings are a torn last line, or lines that were torn tails in an earlier
  round (else *damaged*); the entries form one unbroken path from the leaf to the root;
* ``Session.open`` on the same file succeeds (the dead child's writer lock is reclaimed)
  and continues appending: the parent appends one entry itself, with ``always``.

The next round runs on the same, growing file. The function :func:`run_campaign` is
imported by ``tests/store/test_crash.py``.

Usage::

    .venv/bin/python benchmarks/crash_append.py [--rounds 200] [--seed N] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kurahi.context.files import project_file
from kurahi.pi import Transcript
from kurahi.store.session import Session

ROOT = Path(__file__).resolve().parents[1]

CHILD_SRC = r"""
import os, random, sys
from kurahi.store.session import Session

path, policy, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(seed)
words = "alpha beta gamma delta notes todo file write read session branch marker tool result".split()
s = Session.open(path, fsync=policy)
os.write(1, b"ready\n")
ts = 1791360000000
i = 0
while True:
    i += 1
    ts += 7000
    text = " ".join(rng.choice(words) for _ in range(rng.randint(20, 90)))
    if i % 2:
        msg = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}
    else:
        msg = {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "anthropic-messages",
               "provider": "anthropic", "model": "claude-sonnet-4-5",
               "usage": {"input": 10, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 30},
               "stopReason": "stop", "timestamp": ts}
    eid = s.append_message(msg)
    os.write(1, eid.encode() + b"\n")
"""


@dataclass
class Summary:
    """What a campaign found. ``lost``, ``unreadable``, ``damaged``, ``reopen_failures`` must be 0."""

    rounds: int = 0
    acknowledged: int = 0
    """Entries whose append returned (ids the children printed, plus the parent's own)."""
    lost: int = 0
    """Acknowledged ids missing from the file (counted once each)."""
    unreadable: int = 0
    """Rounds after which ``Transcript.open`` or ``project_file`` failed."""
    torn_tails: int = 0
    """Rounds after which the file ended in a torn line."""
    damaged: int = 0
    """Rounds with a warning other than a torn tail, or a broken parent chain."""
    reopen_failures: int = 0
    """Rounds after which ``Session.open`` + append failed (e.g. the dead child's lock kept)."""
    child_errors: int = 0
    """Children that exited on their own (an exception) instead of being killed."""
    killed_before_ready: int = 0
    """Kills that landed before the child finished ``Session.open``."""
    unacknowledged_written: int = 0
    """Entries in the file whose id the child did not get to print (harmless)."""
    entries_in_file: int = 0
    file_mb: float = 0.0
    seconds: float = 0.0
    seed: int = 0
    errors: list[str] = field(default_factory=list)
    """The first few failures, described."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Reader(threading.Thread):
    """Collects the child's complete stdout lines as they come."""

    def __init__(self, stream: Any) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.lines: list[str] = []
        self.ready = threading.Event()

    def run(self) -> None:
        for raw in iter(self.stream.readline, b""):
            if not raw.endswith(b"\n"):  # cut off by the kill: not an acknowledgement
                break
            line = raw[:-1].decode("ascii", "replace")
            if line == "ready":
                self.ready.set()
            else:
                self.lines.append(line)
        self.ready.set()


def _note(summary: Summary, message: str) -> None:
    if len(summary.errors) < 20:
        summary.errors.append(f"round {summary.rounds}: {message}")


def run_round(
    path: Path,
    policy: str,
    rng: random.Random,
    *,
    min_delay: float,
    max_delay: float,
    early_fraction: float,
    summary: Summary,
) -> list[str]:
    """One child, killed at a random moment. Returns the ids it acknowledged."""
    early = rng.random() < early_fraction
    delay = rng.uniform(0.0, 0.25) if early else rng.uniform(min_delay, max_delay)
    with subprocess.Popen(
        [sys.executable, "-c", CHILD_SRC, str(path), policy, str(rng.getrandbits(32))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        reader = _Reader(proc.stdout)
        reader.start()
        if not early:
            reader.ready.wait(timeout=60)
        time.sleep(delay)
        ready_before_kill = reader.ready.is_set()
        proc.send_signal(signal.SIGKILL)
        rc = proc.wait()
        reader.join(timeout=30)
        err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    if rc != -signal.SIGKILL:
        summary.child_errors += 1
        _note(summary, f"child exited with {rc} before the kill: {err.strip()[-600:]}")
    elif early and not ready_before_kill:
        summary.killed_before_ready += 1
    return reader.lines


def check_file(path: Path, acked: list[str], known_torn: set[int], summary: Summary) -> bool:
    """Open and verify the transcript after a kill. Returns False if it is unreadable."""
    try:
        with Transcript.open(path) as t:
            missing = [i for i in acked if i not in t]
            if missing:
                summary.lost += len(missing)
                _note(summary, f"{len(missing)} acknowledged ids missing, e.g. {missing[:5]}")
            torn = t.torn_tail
            if torn is not None:
                summary.torn_tails += 1
            allowed = set(known_torn)
            if torn is not None:
                allowed.add(torn[0])
            bad = [w for w in t.warnings if w.line not in allowed]
            if bad:
                summary.damaged += 1
                _note(summary, "warnings beyond a torn tail: " + "; ".join(f"line {w.line}: {w.message}" for w in bad))
            if torn is not None:
                known_torn.add(torn[0])
            n = len(t)
            if n and len(t.path_indices(n - 1)) != n:
                summary.damaged += 1
                _note(summary, f"the leaf's path has {len(t.path_indices(n - 1))} entries, the file {n}")
            summary.entries_in_file = n
        project_file(path)
    except Exception as exc:
        summary.unreadable += 1
        _note(summary, f"unreadable: {type(exc).__name__}: {exc}")
        return False
    return True


def reopen_and_append(path: Path, summary: Summary) -> str | None:
    """``Session.open`` after the kill (reclaiming the lock) and append one entry."""
    try:
        with Session.open(path, fsync="always") as s:
            return s.append_message(
                {"role": "user", "content": f"after round {summary.rounds}", "timestamp": 1791360000000}
            )
    except Exception as exc:
        summary.reopen_failures += 1
        _note(summary, f"Session.open after the kill failed: {type(exc).__name__}: {exc}")
        return None


def run_campaign(
    rounds: int = 200,
    *,
    directory: Path | None = None,
    seed: int | None = None,
    min_delay: float = 0.002,
    max_delay: float = 0.05,
    early_fraction: float = 0.1,
    log: Callable[[str], None] | None = None,
) -> Summary:
    """Run ``rounds`` kill rounds on one growing transcript and return what was found.

    Args:
        rounds: how many children to kill.
        directory: where the transcript goes (default: a temporary directory under
            ``bench-data/``, removed afterwards; a given directory is left in place).
        seed: for the kill moments and the messages (default: random, reported).
        min_delay, max_delay: the kill comes this long after the child's ``ready``.
        early_fraction: share of rounds whose delay (0-250 ms) counts from spawn instead.
        log: called with a progress line now and then.
    """
    seed = seed if seed is not None else random.SystemRandom().getrandbits(32)
    rng = random.Random(seed)
    summary = Summary(seed=seed)
    own_dir = directory is None
    if directory is None:
        (ROOT / "bench-data").mkdir(exist_ok=True)
        directory = Path(tempfile.mkdtemp(prefix="crash-append-", dir=ROOT / "bench-data"))
    path = directory / "crash.jsonl"
    t0 = time.perf_counter()
    acked: list[str] = []
    known_torn: set[int] = set()
    try:
        with Session.create(path, cwd="/home/crash", fsync="always") as s:
            acked.append(s.append_message({"role": "user", "content": "start", "timestamp": 1791360000000}))
        for r in range(rounds):
            policy = "never" if r % 2 == 0 else "always"
            acked.extend(
                run_round(
                    path,
                    policy,
                    rng,
                    min_delay=min_delay,
                    max_delay=max_delay,
                    early_fraction=early_fraction,
                    summary=summary,
                )
            )
            summary.rounds += 1
            if not check_file(path, acked, known_torn, summary):
                break  # nothing more can be learnt from an unreadable file
            extra = reopen_and_append(path, summary)
            if extra is not None:
                acked.append(extra)
            if log is not None and (r + 1) % 25 == 0:
                log(
                    f"round {r + 1}/{rounds}: {len(acked)} acknowledged, {summary.entries_in_file} entries, "
                    f"lost {summary.lost}, unreadable {summary.unreadable}, torn tails {summary.torn_tails}"
                )
        summary.acknowledged = len(acked)
        with Transcript.open(path) as t:
            summary.entries_in_file = len(t)
        summary.unacknowledged_written = summary.entries_in_file - len(set(acked))
        summary.file_mb = round(path.stat().st_size / 1e6, 2)
    finally:
        summary.seconds = round(time.perf_counter() - t0, 1)
        if own_dir:
            shutil.rmtree(directory, ignore_errors=True)
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=200, help="children to kill (default 200)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: random, printed)")
    ap.add_argument("--min-delay-ms", type=float, default=2.0, help="earliest kill after ready (default 2)")
    ap.add_argument("--max-delay-ms", type=float, default=50.0, help="latest kill after ready (default 50)")
    ap.add_argument("--dir", type=Path, default=None, help="keep the transcript in this directory")
    ap.add_argument("--json", action="store_true", help="print the full summary as JSON")
    args = ap.parse_args(argv)
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        if (args.dir / "crash.jsonl").exists():
            ap.error(f"{args.dir / 'crash.jsonl'} exists; use an empty directory")

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    s = run_campaign(
        args.rounds,
        directory=args.dir,
        seed=args.seed,
        min_delay=args.min_delay_ms / 1000,
        max_delay=args.max_delay_ms / 1000,
        log=log,
    )
    if args.json:
        print(json.dumps(s.to_dict(), indent=2))
    else:
        keys = ("rounds", "acknowledged", "lost", "unreadable", "torn_tails")
        print(json.dumps({k: getattr(s, k) for k in keys}))
        print(
            f"(also: damaged {s.damaged}, reopen failures {s.reopen_failures}, child errors {s.child_errors}, "
            f"killed before ready {s.killed_before_ready}, written but unacknowledged {s.unacknowledged_written}, "
            f"{s.entries_in_file} entries / {s.file_mb} MB, {s.seconds} s, seed {s.seed})"
        )
        for e in s.errors:
            print(f"!!! {e}")
    bad = s.lost or s.unreadable or s.damaged or s.reopen_failures or s.child_errors
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
