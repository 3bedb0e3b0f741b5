"""The write protocols explored, each a run (traced) and a checker (run on every crash state).

A protocol's ``setup`` prepares its directory before the begin mark (that state counts as
durable), ``act`` runs the operations under study and calls ``ctx.ack(label)`` each time one
is acknowledged (the call returned; for fsync policy ``turn``, when ``sync()`` returned).
``check`` gets a directory holding one crash state, runs the recovery Kurahi runs when it opens
those files or starts (the same library calls), and returns the broken invariants:

- every acknowledged record is present (``lost``);
- every file opens (``unreadable``), the catalog parses, the audit chain verifies;
- nothing is rewritten: each record read back is one the run wrote, byte for byte;
- the next operation on the recovered files succeeds and reads back.

A file a crash may leave behind unacknowledged (a half-made transcript, a temporary file) may
give a clear Kurahi error; a traceback of another kind is a violation.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kurahi.errors import KurahiError
from support.crashstates.fstrace import snapshot_marker


@dataclass
class Ctx:
    """What a protocol's run sees: its directory, the mark folder, and what it acknowledged."""

    root: Path
    marks: Path
    seed: int
    scale: int = 1
    """How many operations a protocol makes, as a multiple of its smallest run."""
    acks: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=lambda: {"pre": []})
    begun: bool = False

    def ack(self, label: str) -> None:
        """Record that the operation ``label`` was acknowledged (before the begin: part of the base)."""
        if not self.begun:
            self.info["pre"].append(label)
            return
        snapshot_marker(self.marks, f"ack-{len(self.acks)}")
        self.acks.append(label)


@dataclass(frozen=True)
class Protocol:
    """One write protocol: prepare, run, and check a crash state of it."""

    name: str
    setup: Callable[[Ctx], None]
    act: Callable[[Ctx], None]
    check: Callable[[Path, list[str], dict[str, Any]], list[str]]
    """(crash directory, acknowledged labels, the run's info) -> violations."""
    drops: tuple[str, ...] = ()
    """fsyncs whose removal (``driver.py --drop``) the checker must catch."""
    cost: int = 1
    """How much slower its recovery is than an append's: explorations give it that much less budget."""


def _msg(k: int) -> dict[str, Any]:
    return {"role": "user", "content": f"message {k}", "timestamp": 1764492000000 + k}


def _guard(fn: Callable[[], list[str]], what: str) -> list[str]:
    """Run a check; a Kurahi error is a finding named by ``what``, anything else a traceback."""
    try:
        return fn()
    except KurahiError as exc:
        return [f"{what}: {type(exc).__name__}: {exc}"]
    except Exception as exc:
        return [f"{what}: traceback {type(exc).__name__}: {exc}"]


# -- transcripts -----------------------------------------------------------------------------


def _transcript_lines(path: Path) -> set[bytes]:
    return set(path.read_bytes().split(b"\n")) if path.exists() else set()


def _check_transcript(path: Path, acked: set[str], live_lines: set[bytes], *, must_exist: bool) -> list[str]:
    """Open ``path`` as the writer does, find every acknowledged id, append once more, reread."""
    from kurahi.pi.transcript import Transcript
    from kurahi.store.session import Session

    if not path.exists():
        return [f"{path.name}: missing, {len(acked)} acknowledged entries lost"] if must_exist else []
    problems: list[str] = []
    try:
        with Transcript.open(path) as t:
            ids = t.entry_ids()
            for e in t.entries():
                if e.raw not in live_lines:
                    problems.append(f"{path.name}: entry {e.id} is not a line the run wrote")
    except KurahiError as exc:
        if must_exist or acked:
            return [f"{path.name}: unreadable: {type(exc).__name__}: {exc}"]
        return []
    lost = acked - ids
    if lost:
        problems.append(f"{path.name}: acknowledged entries lost: {sorted(lost)}")

    def again() -> list[str]:
        with Session.open(path, fsync="always") as s:
            new = s.append_message(_msg(999))
        with Transcript.open(path) as t:
            return [] if new in t.entry_ids() else [f"{path.name}: the next append did not read back"]

    return problems + _guard(again, f"{path.name}: next append")


def _session_run(policy: str, appends: int, turn: int) -> tuple[Callable[[Ctx], None], Callable[[Ctx], None]]:
    def setup(ctx: Ctx) -> None:
        from kurahi.store.session import Session

        ctx.info["session"] = Session.create(ctx.root / "s.jsonl", cwd="/home/ava", fsync=policy)
        for k in range(2):
            ctx.ack(ctx.info["session"].append_message(_msg(k)))
        ctx.info["session"].sync()

    def act(ctx: Ctx) -> None:
        s = ctx.info.pop("session")
        ids: list[str] = []
        for k in range(appends * ctx.scale):
            ids.append(s.append_message(_msg(100 + k)))
            if policy == "always":
                ctx.ack(ids.pop())
            elif policy == "turn" and (k + 1) % turn == 0:
                s.sync()
                for i in ids:
                    ctx.ack(i)
                ids.clear()
        s.close()
        if policy == "turn":
            for i in ids:
                ctx.ack(i)  # close() syncs

    return setup, act


def _with_lines(act: Callable[[Ctx], None], *names: str) -> Callable[[Ctx], None]:
    """Run ``act``, then keep the lines of the named files as the run left them (for 'nothing rewritten')."""

    def run(ctx: Ctx) -> None:
        act(ctx)
        lines: set[bytes] = set()
        for name in names:
            for p in ctx.root.glob(name):
                lines |= _transcript_lines(p)
        ctx.info["lines"] = sorted(x.decode("utf-8", "surrogateescape") for x in lines)

    return run


def _lines_of(info: dict[str, Any]) -> set[bytes]:
    return {x.encode("utf-8", "surrogateescape") for x in info["lines"]}


def _session_protocol(policy: str, appends: int = 6, turn: int = 2) -> Protocol:
    setup, act = _session_run(policy, appends, turn)

    def check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
        acked = set(acks) | set(info["pre"])
        if policy == "never":
            acked = set(info["pre"])  # under `never` a power cut may take anything unsynced
        return _check_transcript(d / "s.jsonl", acked, _lines_of(info), must_exist=True)

    drops = ("fdatasync",) if policy != "never" else ()
    return Protocol(f"append-{policy}", setup, _with_lines(act, "s.jsonl"), check, drops)


def _create_setup(ctx: Ctx) -> None:
    (ctx.root / "sessions").mkdir()


def _create_act(ctx: Ctx) -> None:
    from kurahi.store.session import Session

    for k in range(3 * ctx.scale):
        with Session.create(ctx.root / "sessions" / f"c{k}.jsonl", cwd="/home/ava", fsync="turn") as s:
            first = s.append_message(_msg(k))
        ctx.ack(f"c{k}.jsonl:{s.session_id}:{first}")


def _create_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.pi.transcript import Transcript

    problems: list[str] = []
    acked = {a.split(":")[0]: a.split(":")[1:] for a in acks}
    lines = _lines_of(info)
    for p in sorted((d / "sessions").glob("*.jsonl")) if (d / "sessions").is_dir() else []:
        if p.name in acked:
            continue
        problems += _check_transcript(p, set(), lines, must_exist=False)
    for name, (sid, first) in acked.items():
        p = d / "sessions" / name
        problems += _check_transcript(p, {first}, lines, must_exist=True)
        if p.exists() and not problems:
            with Transcript.open(p) as t:
                if t.session_id != sid:
                    problems.append(f"{name}: session id {t.session_id}, acknowledged {sid}")
    return problems


def _branch_setup(ctx: Ctx) -> None:
    from kurahi.store.session import Session

    s = Session.create(ctx.root / "s.jsonl", cwd="/home/ava", fsync="turn")
    ids = [s.append_message(_msg(k)) for k in range(4)]
    s.sync()
    ctx.info["session"] = s
    ctx.info["ids"] = ids


MOVES = (1, 3, 0)
"""The entries (by index) the leaf-move protocol moves the leaf to, in order."""


def _branch_act(ctx: Ctx) -> None:
    s = ctx.info.pop("session")
    ctx.info["moves"] = [ctx.info["ids"][k] for k in MOVES * ctx.scale]
    for k in MOVES * ctx.scale:
        s.branch(ctx.info["ids"][k])
        s.sync()
        ctx.ack(ctx.info["ids"][k])
    s.close()


def _branch_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.store.session import Session

    # Reopened, the writer must stand on the last acknowledged move, or on a later one that
    # also reached the disk; with none acknowledged, on the last entry or a move.
    moves = info["moves"]
    allowed = set(moves[len(acks) - 1 :]) if acks else {*moves, info["ids"][-1]}

    def leaf() -> list[str]:
        with Session.open(d / "s.jsonl") as s:
            return [] if s.leaf_id in allowed else [f"leaf after recovery is {s.leaf_id}, allowed {sorted(allowed)}"]

    problems = _guard(leaf, "s.jsonl: reopen")  # before the next append moves the leaf
    return problems + _check_transcript(d / "s.jsonl", set(info["ids"]), _lines_of(info), must_exist=True)


def _repair_setup(ctx: Ctx) -> None:
    from kurahi.store.session import Session

    with Session.create(ctx.root / "s.jsonl", cwd="/home/ava", fsync="always") as s:
        ids = [s.append_message(_msg(k)) for k in range(3)]
    with open(ctx.root / "s.jsonl", "ab") as fh:
        fh.write(b'{"type":"message","id":"torn","parentId":"x","mess')
        fh.flush()
        os.fsync(fh.fileno())
    ctx.info["ids"] = ids
    ctx.info["fragment"] = '{"type":"message","id":"torn","parentId":"x","mess'


def _repair_act(ctx: Ctx) -> None:
    from kurahi.store.repair import repair_torn_tail

    report = repair_torn_tail(ctx.root / "s.jsonl")
    ctx.ack(f"repaired:{Path(report.sidecar or '').name}")


def _repair_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.pi.transcript import Transcript

    path = d / "s.jsonl"
    problems = _check_transcript(path, set(info["ids"]), _lines_of(info), must_exist=True)
    fragment = info["fragment"].encode()
    sidecars = [p for p in d.glob("s.jsonl.torn-*") if p.read_bytes() == fragment]
    with_tail = path.exists() and fragment in path.read_bytes()
    if not sidecars and not with_tail:
        problems.append("the torn bytes are neither in the file nor in a complete sidecar")
    if acks:
        with Transcript.open(path) as t:
            if t.torn_tail is not None and not sidecars:
                problems.append("repair acknowledged, but the torn tail is back and no sidecar holds it")
    return problems


PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in [
        _session_protocol("always"),
        _session_protocol("turn"),
        _session_protocol("never", appends=4),
        Protocol(
            "session-create",
            _create_setup,
            _with_lines(_create_act, "sessions/*.jsonl"),
            _create_check,
            ("fdatasync", "dirfsync"),
        ),
        Protocol("leaf-move", _branch_setup, _with_lines(_branch_act, "s.jsonl"), _branch_check, ("fdatasync",)),
        Protocol("torn-tail-repair", _repair_setup, _with_lines(_repair_act, "s.jsonl"), _repair_check),
    ]
}
"""Every protocol by name: the transcripts here, then the logs, the wider ones and the SQLite era."""


def dump_info(info: dict[str, Any]) -> str:
    """The run's info as JSON (live objects dropped)."""
    return json.dumps({k: v for k, v in info.items() if isinstance(v, str | int | list | dict)})


# The other modules build on the names above, so they are imported last.
from support.crashstates.protocols_logs import LOGS  # noqa: E402
from support.crashstates.protocols_sqlite import SQLITE  # noqa: E402
from support.crashstates.protocols_wide import WIDE  # noqa: E402

PROTOCOLS.update((p.name, p) for p in [*LOGS, *WIDE, *SQLITE])
