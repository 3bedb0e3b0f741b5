"""Copying everything a backend holds into another one, verified by hashes (``kurahi store copy``).

What is copied, agent by agent, then the audit chain:

* every transcript, byte for byte (``export`` → ``import_bytes``), checked by SHA-256 of what
  the target then exports;
* the session catalog: the same entries in the same order, checked entry by entry;
* the record logs (ledger, jobs, queue): the same records in the same order, checked by
  SHA-256 of their encoded lines;
* the audit chain, record for record, so the target's chain verifies with the same head hash.

The target must be empty unless ``force`` is given. With ``force`` the copy merges: what the
target already holds identically is skipped, a log or chain that is a prefix of the source's
is completed, catalog entries are set to the source's; a transcript, log or chain that
differs is never overwritten (:class:`~kurahi.errors.StoreCopyError`). So a copy that was
interrupted is finished by running it again with ``force``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kurahi.errors import StoreCopyError
from kurahi.fs.durable import atomic_write
from kurahi.store.audit.lines import LineAuditLog
from kurahi.store.audit.log_file import AuditChain
from kurahi.store.base import LOG_NAMES, AgentStore, AuditLog, Backend, RecordLog
from kurahi.store.catalog import CatalogBase
from kurahi.store.catalog_format import Store
from kurahi.store.record_log import FileRecordLog, encode_record

__all__ = ["CopyReport", "Progress", "copy_store", "is_empty", "log_digest"]

Progress = Callable[[str, int, int], None]
"""Called as ``progress(what, done, total)`` after each item (transcripts, catalogs, logs, the chain)."""


@dataclass
class CopyReport:
    """What :func:`copy_store` copied and verified."""

    source: str
    target: str
    agents: list[str] = field(default_factory=list)
    transcripts: list[dict[str, Any]] = field(default_factory=list)
    """One per transcript: ``agent``, ``name``, ``bytes``, ``sha256``, ``action`` (``copied``/``present``)."""
    catalogs: list[dict[str, Any]] = field(default_factory=list)
    """One per agent: ``agent``, ``entries``."""
    logs: list[dict[str, Any]] = field(default_factory=list)
    """One per non-empty log: ``agent``, ``log``, ``records``, ``sha256``, ``copied``."""
    audit: dict[str, Any] | None = None
    """``records``, ``headHash``, ``copied``; ``None`` when the source has no chain."""

    @property
    def bytes(self) -> int:
        """Transcript bytes in the target's copies."""
        return sum(int(t["bytes"]) for t in self.transcripts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, camelCase keys."""
        return {
            "source": self.source,
            "target": self.target,
            "agents": self.agents,
            "transcripts": self.transcripts,
            "catalogs": self.catalogs,
            "logs": self.logs,
            "audit": self.audit,
            "totals": {
                "agents": len(self.agents),
                "transcripts": len(self.transcripts),
                "bytes": self.bytes,
                "catalogEntries": sum(c["entries"] for c in self.catalogs),
                "records": sum(x["records"] for x in self.logs),
                "auditRecords": self.audit["records"] if self.audit else 0,
            },
            "verified": True,
        }


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _log_lines(log: RecordLog) -> list[bytes]:
    return [encode_record(r) + b"\n" for r in log.records()]


def log_digest(log: RecordLog) -> tuple[int, str]:
    """A log's record count and the SHA-256 of its records, each encoded as Kurahi writes it, one per line."""
    lines = _log_lines(log)
    return len(lines), _sha(b"".join(lines))


def is_empty(backend: Backend) -> bool:
    """Whether ``backend`` holds no transcript, catalog entry, log record or audit record."""
    audit = backend.audit()
    if audit.exists() and audit.head() is not None:
        return False
    for agent_id in backend.agent_ids():
        agent = backend.agent(agent_id)
        if agent.transcripts.names() or agent.catalog.keys():
            return False
        for name in LOG_NAMES:
            log = agent.log(name)
            try:
                if next(iter(log.records()), None) is not None:
                    return False
            finally:
                log.close()
    return True


def copy_store(src: Backend, dst: Backend, *, force: bool = False, progress: Progress | None = None) -> CopyReport:
    """Copy everything ``src`` holds into ``dst`` and verify it (see the module docstring).

    Raises:
        StoreCopyError: ``dst`` is not empty and ``force`` is not given (nothing was written);
            something in ``dst`` differs from ``src`` and would have to be overwritten; the
            source's audit chain does not verify; or a copy did not read back the same.
    """
    if src.describe() == dst.describe():
        raise StoreCopyError(f"source and target are the same store ({src.describe()})")
    if not force and not is_empty(dst):
        raise StoreCopyError(f"{dst.describe()}: the target is not empty; copy into it with --force to merge")
    report = CopyReport(src.describe(), dst.describe())
    agents = src.agent_ids()
    plan = [(a, src.agent(a).transcripts.names()) for a in agents]
    total = sum(len(names) for _, names in plan) + len(agents) * (1 + len(LOG_NAMES)) + 1
    done = 0

    def step(what: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(what, done, total)

    for agent_id, names in plan:
        a_src, a_dst = src.agent(agent_id), dst.agent(agent_id, create=True)
        report.agents.append(agent_id)
        for name in names:
            report.transcripts.append(_copy_transcript(a_src, a_dst, name))
            step(f"{agent_id}/{name}")
        report.catalogs.append({"agent": agent_id, "entries": _copy_catalog(a_src, a_dst)})
        step(f"{agent_id} catalog")
        for log_name in LOG_NAMES:
            copied = _copy_log(a_src, a_dst, log_name)
            if copied is not None:
                report.logs.append(copied)
            step(f"{agent_id} {log_name}")
    report.audit = _copy_audit(src.audit(), dst.audit(), dst.describe())
    step("audit chain")
    return report


def _copy_transcript(a_src: AgentStore, a_dst: AgentStore, name: str) -> dict[str, Any]:
    data = a_src.transcripts.export(name)
    digest = _sha(data)
    where = a_dst.transcripts.locator(name)
    action = "copied"
    if a_dst.transcripts.exists(name):
        if _sha(a_dst.transcripts.export(name)) != digest:
            raise StoreCopyError(f"{where}: the target holds a different transcript by that name; never overwritten")
        action = "present"
    else:
        a_dst.transcripts.import_bytes(name, data)
    if _sha(a_dst.transcripts.export(name)) != digest:
        raise StoreCopyError(f"{where}: the copy does not read back the same (SHA-256 differs)")
    return {"agent": a_src.agent_id, "name": name, "bytes": len(data), "sha256": digest, "action": action}


def _copy_catalog(a_src: AgentStore, a_dst: AgentStore) -> int:
    items = a_src.catalog.items()
    if not items:
        return 0
    cat = a_dst.catalog
    fresh = not cat.keys()
    if isinstance(cat, CatalogBase):
        entries = dict(items)

        def put_all(store: Store) -> tuple[None, bool]:
            for key, entry in entries.items():
                store[key] = entry
            return None, True

        cat._transaction(put_all)  # one change for the whole catalog, in order
    else:
        for key, entry in items:
            cat.update(key, partial(_replace, entry))
    got = cat.items()
    # Into an empty catalog: the same entries in the same order. Merged into one that had
    # keys already: those keep their places, and every source entry is there as it was.
    same = got == items if fresh else all(dict(got).get(k) == v for k, v in items)
    if not same:
        raise StoreCopyError(f"{getattr(cat, 'path', a_dst.agent_id)}: the catalog does not read back the same")
    return len(items)


def _replace(entry: Mapping[str, Any], _current: object) -> Mapping[str, Any]:
    return entry


def _copy_log(a_src: AgentStore, a_dst: AgentStore, name: Any) -> dict[str, Any] | None:
    src_log, dst_log = a_src.log(name), a_dst.log(name)
    try:
        lines = _log_lines(src_log)
        if not lines:
            return None
        have = _log_lines(dst_log)
        if have != lines[: len(have)]:
            raise StoreCopyError(
                f"{a_dst.agent_id}/{name}: the target's log holds records the source's does not; never overwritten"
            )
        missing = lines[len(have) :]
        if missing:
            _append_lines(dst_log, missing, list(src_log.records())[len(have) :])
        count, digest = log_digest(dst_log)
        if (count, digest) != (len(lines), _sha(b"".join(lines))):
            raise StoreCopyError(f"{a_dst.agent_id}/{name}: the copied log does not read back the same (SHA-256)")
        return {"agent": a_src.agent_id, "log": name, "records": count, "sha256": digest, "copied": len(missing)}
    finally:
        src_log.close()
        dst_log.close()


def _append_lines(log: RecordLog, lines: list[bytes], recs: Sequence[Mapping[str, Any]]) -> None:
    if isinstance(log, FileRecordLog) and not log.path.exists():
        log.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(log.path, b"".join(lines))  # one durable write instead of an fsync per record
        return
    many = getattr(log, "append_many", None)
    if callable(many):
        many(recs)
        return
    for rec in recs:
        log.append(rec)


def _copy_audit(src: AuditLog, dst: AuditLog, where: str) -> dict[str, Any] | None:
    if not src.exists():
        return None
    result = src.verify()
    if not result.ok:
        raise StoreCopyError(
            f"{src.locator}: the source's audit chain does not verify (record {result.first_bad_seq}: "
            f"{result.reason}); copy refused"
        )
    lines = [r.to_line() for r in src.tail(result.entries)] if result.entries else []
    have = [r.to_line() for r in dst.tail(dst.verify().entries)] if dst.exists() and dst.head() is not None else []
    if have != lines[: len(have)]:
        raise StoreCopyError(f"{where}: the target's audit chain is not a prefix of the source's; never overwritten")
    missing = lines[len(have) :]
    if missing or not dst.exists():
        _import_chain(dst, have + missing, missing)
    after = dst.verify()
    if not after.ok or after.entries != result.entries or after.head_hash != result.head_hash:
        raise StoreCopyError(f"{dst.locator}: the copied audit chain does not verify with the source's head hash")
    return {"records": after.entries, "headHash": after.head_hash, "copied": len(missing)}


def _just(line: bytes, _last: bytes | None) -> bytes:
    return line


def _import_chain(dst: AuditLog, every: list[bytes], missing: list[bytes]) -> None:
    if isinstance(dst, AuditChain):
        dst.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with dst._lock().acquire(timeout=dst.lock_timeout):  # no appender in between
            atomic_write(dst.path, b"".join(every))
        return
    importer = getattr(dst, "import_lines", None)
    if callable(importer):
        importer(missing)
        return
    if isinstance(dst, LineAuditLog):
        for line in missing:
            dst._append_after_last(partial(_just, line.rstrip(b"\n")))
        return
    raise StoreCopyError(f"{dst.locator}: this store's audit chain cannot take records made elsewhere")
