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

from fstrace import snapshot_marker

from kurahi.errors import KurahiError


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
    from kurahi.store.session import Session
    from kurahi.store.transcript import Transcript

    if not path.exists():
        return [f"{path.name}: missing, {len(acked)} acknowledged entries lost"] if must_exist else []
    problems: list[str] = []
    try:
        with Transcript.open(path) as t:
            ids = t.entry_ids()
            for e in t.entries():
                raw = bytes(e.raw) if hasattr(e, "raw") else None
                if raw is not None and raw not in live_lines:
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


def _check_session(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    return _check_transcript(d / "s.jsonl", set(acks) | set(info["pre"]), set(info["lines"]), must_exist=True)


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
    from kurahi.store.transcript import Transcript

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
    from kurahi.store.transcript import Transcript

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


# -- catalog ---------------------------------------------------------------------------------


def _catalog_setup(ctx: Ctx) -> None:
    from kurahi.store.catalog import Catalog

    cat = Catalog(ctx.root / "sessions.json")
    for k in range(2):
        cat.upsert(f"agent:main:a{k}", {"sessionId": f"sid-a{k}", "sessionFile": f"a{k}.jsonl"})
        ctx.ack(f"agent:main:a{k}")


def _catalog_act(ctx: Ctx) -> None:
    from kurahi.store.catalog import Catalog

    cat = Catalog(ctx.root / "sessions.json")
    for k in range(3 * ctx.scale):
        cat.upsert(f"agent:main:n{k}", {"sessionId": f"sid-n{k}", "sessionFile": f"n{k}.jsonl"})
        ctx.ack(f"agent:main:n{k}")
    cat.upsert_many({"agent:main:a0": {"status": "done"}, "agent:main:a1": {"status": "done"}})
    ctx.ack("agent:main:a0#done")


def _catalog_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.store.catalog import Catalog

    def run() -> list[str]:
        cat = Catalog(d / "sessions.json")
        have = {k for k, _ in cat.items()}
        if cat.get("agent:main:a0") and cat.get("agent:main:a0").get("status") == "done":  # type: ignore[union-attr]
            have.add("agent:main:a0#done")
        lost = (set(acks) | set(info["pre"])) - have
        out = [f"sessions.json: acknowledged keys lost: {sorted(lost)}"] if lost else []
        cat.upsert("agent:main:next", {"sessionId": "sid-next", "sessionFile": "next.jsonl"})
        if Catalog(d / "sessions.json").get("agent:main:next") is None:
            out.append("sessions.json: the next upsert did not read back")
        return out

    return _guard(run, "sessions.json")


# -- journals: ledger, jobs, queue -------------------------------------------------------------


def _ledger_act(ctx: Ctx) -> None:
    from kurahi.agent.ledger import Ledger, action_id
    from kurahi.store.journal import Journal

    led = Ledger(Journal(ctx.root / "state" / "ledger.jsonl"))
    for k in range(2 * ctx.scale):
        a = led.intent("sess", f"c{k}", "write", {"path": f"f{k}"})
        ctx.ack(f"intent:{a.action_id}")
        led.outcome(action_id("sess", f"c{k}"), status="ok", result=f"done {k}", settled_by="run")
        ctx.ack(f"outcome:{action_id('sess', f'c{k}')}")
    led.close()


def _ledger_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.agent.ledger import Ledger
    from kurahi.store.journal import Journal

    def run() -> list[str]:
        path = d / "state" / "ledger.jsonl"
        led = Ledger(Journal(path))
        have = {f"{rec['kind']}:{aid}" for aid, a in led.actions().items() for rec in a.history}
        lost = set(acks) - have
        out = [f"ledger.jsonl: acknowledged records lost: {sorted(lost)}"] if lost else []
        out += _foreign_lines(path, info)
        a = led.intent("sess", "next", "write", {"path": "n"})
        if Ledger(Journal(path)).get(a.action_id, fresh=True) is None:
            out.append("ledger.jsonl: the next intent did not read back")
        led.close()
        return out

    return _guard(run, "ledger.jsonl")


def _foreign_lines(path: Path, info: dict[str, Any]) -> list[str]:
    """Whole lines (ending in a newline) that the run never wrote: a record rewritten."""
    if not path.exists():
        return []
    live = _lines_of(info)
    data = path.read_bytes()
    whole = data.split(b"\n")[:-1]
    bad = [i + 1 for i, line in enumerate(whole) if line and line not in live and b"\0" not in line]
    return [f"{path.name}: line {bad[0]} is not a line the run wrote"] if bad else []


def _jobs_act(ctx: Ctx) -> None:
    from kurahi.agent.jobs import JobStore
    from kurahi.store.journal import Journal

    jobs = JobStore(Journal(ctx.root / "state" / "jobs.jsonl"))
    for _ in range(2 * ctx.scale):
        jid = jobs.create("agent:main:main")
        ctx.ack(f"{jid}:queued")
        jobs.mark(jid, "running")
        ctx.ack(f"{jid}:running")
    jobs.mark(jid, "succeeded")
    ctx.ack(f"{jid}:succeeded")
    jobs.close()


def _jobs_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.agent.jobs import JobStore
    from kurahi.store.journal import Journal

    def run() -> list[str]:
        path = d / "state" / "jobs.jsonl"
        out = _foreign_lines(path, info)
        store = JobStore(Journal(path))
        store.recover()  # what a start does: every job left queued or running is interrupted
        jobs = store.jobs()
        order = ["queued", "running", "succeeded"]
        for label in acks:
            jid, status = label.split(":")
            j = jobs.get(jid)
            if j is None:
                out.append(f"jobs.jsonl: acknowledged job {jid} lost")
            elif status == "succeeded" and j.status != "succeeded":
                out.append(f"jobs.jsonl: job {jid} acknowledged succeeded, reads {j.status}")
            elif j.status not in ("interrupted", *order[order.index(status) :]):
                out.append(f"jobs.jsonl: job {jid} acknowledged {status}, reads {j.status}")
        left = [j.id for j in jobs.values() if j.status in ("queued", "running")]
        if left:
            out.append(f"jobs.jsonl: jobs left running after recovery: {left}")
        store.close()
        return out

    return _guard(run, "jobs.jsonl")


def _queue_act(ctx: Ctx) -> None:
    from kurahi.store.journal import Journal

    j = Journal(ctx.root / "state" / "queue.jsonl")
    for k in range(3 * ctx.scale):
        j.append({"op": "queued", "qid": f"q{k}", "text": f"message {k}"})
        ctx.ack(f"queued:q{k}")
    j.append({"op": "delivered", "qid": "q0"})
    ctx.ack("delivered:q0")
    j.close()


def _queue_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.store.journal import Journal

    def run() -> list[str]:
        path = d / "state" / "queue.jsonl"
        j = Journal(path)
        have = {f"{r['op']}:{r['qid']}" for r in j.records()}
        lost = set(acks) - have
        out = [f"queue.jsonl: acknowledged records lost: {sorted(lost)}"] if lost else []
        out += _foreign_lines(path, info)
        j.append({"op": "queued", "qid": "next"})
        if "queued:next" not in {f"{r['op']}:{r['qid']}" for r in Journal(path).records()}:
            out.append("queue.jsonl: the next record did not read back")
        j.close()
        return out

    return _guard(run, "queue.jsonl")


# -- audit chain -------------------------------------------------------------------------------


def _audit_act(ctx: Ctx) -> None:
    from kurahi.store.audit_file import AuditChain

    chain = AuditChain(ctx.root / "audit" / "chain.jsonl")
    for k in range(4 * ctx.scale):
        ctx.ack(f"seq{chain.append('cli', 'test.op', {'k': k}).seq}")


def _audit_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.store.audit_file import AuditChain

    def run() -> list[str]:
        path = d / "audit" / "chain.jsonl"
        want = max((int(a[3:]) for a in acks), default=0)
        if not path.exists():
            return [f"chain.jsonl: missing, {want} acknowledged records lost"] if want else []
        out = _foreign_lines(path, info)
        chain = AuditChain(path)
        # What a gateway start does first: append its lifecycle record (which moves a torn tail aside).
        chain.append("gateway", "gateway.start", {})
        result = chain.verify()
        if not result.ok:
            out.append(f"chain.jsonl: does not verify after recovery: {result.reason}")
        elif result.entries - 1 < want:
            out.append(f"chain.jsonl: {result.entries - 1} records, {want} acknowledged")
        return out

    return _guard(run, "chain.jsonl")


def _nothing(ctx: Ctx) -> None:
    pass


def _journal_protocol(name: str, act: Callable[[Ctx], None], check: Any, file: str) -> Protocol:
    return Protocol(name, _nothing, _with_lines(act, file), check, ("fdatasync", "dirfsync"))


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
        Protocol("catalog-upsert", _catalog_setup, _catalog_act, _catalog_check, ("filefsync", "dirfsync")),
        _journal_protocol("ledger", _ledger_act, _ledger_check, "state/ledger.jsonl"),
        _journal_protocol("jobs", _jobs_act, _jobs_check, "state/jobs.jsonl"),
        _journal_protocol("queue-journal", _queue_act, _queue_check, "state/queue.jsonl"),
        Protocol(
            "audit-chain",
            _nothing,
            _with_lines(_audit_act, "audit/chain.jsonl"),
            _audit_check,
            ("fdatasync", "dirfsync"),
        ),
    ]
}


def dump_info(info: dict[str, Any]) -> str:
    """The run's info as JSON (live objects dropped)."""
    return json.dumps({k: v for k, v in info.items() if isinstance(v, str | int | list | dict)})


from protocols_wide import WIDE  # noqa: E402  (it builds on the names above)

PROTOCOLS.update((p.name, p) for p in WIDE)

from protocols_sqlite import SQLITE  # noqa: E402

PROTOCOLS.update((p.name, p) for p in SQLITE)
