"""The record logs and whole-file stores: the catalog, the ledger, jobs, the queue journal, the audit chain."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.crashstates.protocols import Ctx, Protocol, _guard, _lines_of, _with_lines

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
        if (cat.get("agent:main:a0") or {}).get("status") == "done":
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
    from kurahi.store.record_log import FileRecordLog

    led = Ledger(FileRecordLog(ctx.root / "state" / "ledger.jsonl"))
    for k in range(2 * ctx.scale):
        a = led.intent("sess", f"c{k}", "write", {"path": f"f{k}"})
        ctx.ack(f"intent:{a.action_id}")
        led.outcome(action_id("sess", f"c{k}"), status="ok", result=f"done {k}", settled_by="run")
        ctx.ack(f"outcome:{action_id('sess', f'c{k}')}")
    led.close()


def _ledger_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.agent.ledger import Ledger
    from kurahi.store.record_log import FileRecordLog

    def run() -> list[str]:
        path = d / "state" / "ledger.jsonl"
        led = Ledger(FileRecordLog(path))
        have = {f"{rec['kind']}:{aid}" for aid, a in led.actions().items() for rec in a.history}
        lost = set(acks) - have
        out = [f"ledger.jsonl: acknowledged records lost: {sorted(lost)}"] if lost else []
        out += _foreign_lines(path, info)
        a = led.intent("sess", "next", "write", {"path": "n"})
        if Ledger(FileRecordLog(path)).get(a.action_id, fresh=True) is None:
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
    from kurahi.store.record_log import FileRecordLog

    jobs = JobStore(FileRecordLog(ctx.root / "state" / "jobs.jsonl"))
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
    from kurahi.store.record_log import FileRecordLog

    def run() -> list[str]:
        path = d / "state" / "jobs.jsonl"
        out = _foreign_lines(path, info)
        store = JobStore(FileRecordLog(path))
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
    from kurahi.store.record_log import FileRecordLog

    j = FileRecordLog(ctx.root / "state" / "queue.jsonl")
    for k in range(3 * ctx.scale):
        j.append({"op": "queued", "qid": f"q{k}", "text": f"message {k}"})
        ctx.ack(f"queued:q{k}")
    j.append({"op": "delivered", "qid": "q0"})
    ctx.ack("delivered:q0")
    j.close()


def _queue_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.store.record_log import FileRecordLog

    def run() -> list[str]:
        path = d / "state" / "queue.jsonl"
        j = FileRecordLog(path)
        have = {f"{r['op']}:{r['qid']}" for r in j.records()}
        lost = set(acks) - have
        out = [f"queue.jsonl: acknowledged records lost: {sorted(lost)}"] if lost else []
        out += _foreign_lines(path, info)
        j.append({"op": "queued", "qid": "next"})
        if "queued:next" not in {f"{r['op']}:{r['qid']}" for r in FileRecordLog(path).records()}:
            out.append("queue.jsonl: the next record did not read back")
        j.close()
        return out

    return _guard(run, "queue.jsonl")


# -- audit chain -------------------------------------------------------------------------------


def _audit_act(ctx: Ctx) -> None:
    from kurahi.store.audit.log_file import AuditChain

    chain = AuditChain(ctx.root / "audit" / "chain.jsonl")
    for k in range(4 * ctx.scale):
        ctx.ack(f"seq{chain.append('cli', 'test.op', {'k': k}).seq}")


def _audit_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.store.audit.log_file import AuditChain

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


LOGS = [
    Protocol("catalog-upsert", _catalog_setup, _catalog_act, _catalog_check, ("filefsync", "dirfsync")),
    _journal_protocol("ledger", _ledger_act, _ledger_check, "state/ledger.jsonl"),
    _journal_protocol("jobs", _jobs_act, _jobs_check, "state/jobs.jsonl"),
    _journal_protocol("queue-journal", _queue_act, _queue_check, "state/queue.jsonl"),
    Protocol(
        "audit-chain", _nothing, _with_lines(_audit_act, "audit/chain.jsonl"), _audit_check, ("fdatasync", "dirfsync")
    ),
]
