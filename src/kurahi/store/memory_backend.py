"""The memory backend: everything in this process's memory, for tests and for embedding Kurahi.

It keeps every promise of :mod:`kurahi.store.base` that does not need a disk: one writer
per transcript, atomic catalog changes, byte-identical export, a verifiable audit chain.
"Durable" means "stored in this object": nothing survives the process.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from kurahi.errors import (
    AppendError,
    JournalWriteError,
    LeaseLostError,
    LockHeldError,
    TranscriptChangedError,
    TranscriptReadError,
    UsageError,
)
from kurahi.pi.transcript import Transcript
from kurahi.store.audit.lines import LineAuditLog
from kurahi.store.base import (
    AgentStore,
    Backend,
    LogName,
    RecordLog,
    TranscriptClaim,
    TranscriptHandle,
    TranscriptInfo,
    TranscriptStore,
)
from kurahi.store.catalog import CatalogBase
from kurahi.store.catalog_format import Store
from kurahi.store.names import check_agent_id, check_transcript_name
from kurahi.store.record_log import decode_records, encode_record

__all__ = ["MemoryBackend"]

T = TypeVar("T")


class _MemoryHandle(TranscriptHandle):
    def __init__(self, store: MemoryTranscripts, name: str) -> None:
        self._store = store
        self._name = self.name = name
        self.locator = store.locator(name)
        self._open = True
        self._lost = False

    def append(
        self, line: bytes, *, durable: bool, records: Sequence[tuple[RecordLog, Mapping[str, Any]]] = ()
    ) -> None:
        if not line.endswith(b"\n"):
            raise AppendError("a line must end with a newline", path=self.locator)
        with self._store._mutex:
            if self._lost:
                raise LeaseLostError("this writer's claim was taken over; nothing was appended", path=self.locator)
            if not self._open or self._store._writers.get(self._name) is not self:
                raise AppendError("session is closed", path=self.locator)
            data = self._store._data[self._name]
            if data and not data.endswith(b"\n"):
                data += b"\n"  # a torn last line is ended first, as the file and database backends do
            data += line
            self._store._modified[self._name] = time.time_ns() // 1_000_000
        for log, rec in records:
            log.append(rec)

    @property
    def fenced(self) -> bool:
        return self._lost

    def sync(self) -> None:
        pass  # nothing is ever less durable than this process

    def read(self) -> Transcript:
        return self._store.read(self._name)

    def close(self) -> None:
        with self._store._mutex:
            if self._open and self._store._writers.get(self._name) is self:
                del self._store._writers[self._name]
            self._open = False


class _MemoryClaim(TranscriptClaim):
    def __init__(self, store: MemoryTranscripts, name: str) -> None:
        self._store = store
        self.name = name
        self.locator = store.locator(name)
        self._lost = False

    def _current(self) -> str | None:
        data = self._store._data.get(self.name)
        return None if data is None else hashlib.sha256(data).hexdigest()

    def sha256(self) -> str | None:
        with self._store._mutex:
            return self._current()

    def _check(self, expected: str | None) -> None:
        if self._store._writers.get(self.name) is not self:
            raise LeaseLostError("this claim was taken over; nothing was changed", path=self.locator)
        actual = self._current()
        if actual != expected:
            raise TranscriptChangedError(
                "changed since it was looked at; nothing was written",
                path=self.locator,
                expected=expected,
                actual=actual,
            )

    def put(self, data: bytes, *, expected: str | None) -> None:
        with self._store._mutex:
            self._check(expected)
            self._store._data[self.name] = bytearray(data)
            self._store._modified[self.name] = time.time_ns() // 1_000_000

    def remove(self, *, expected: str) -> None:
        with self._store._mutex:
            self._check(expected)
            del self._store._data[self.name]
            self._store._modified.pop(self.name, None)

    def release(self) -> None:
        with self._store._mutex:
            if self._store._writers.get(self.name) is self:
                del self._store._writers[self.name]


class MemoryTranscripts(TranscriptStore):
    """An agent's transcripts as byte strings."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._data: dict[str, bytearray] = {}
        self._modified: dict[str, int] = {}
        self._writers: dict[str, _MemoryHandle | _MemoryClaim] = {}
        self._mutex = threading.Lock()

    def locator(self, name: str) -> str:
        """``memory:<agent>/<name>``."""
        return f"{self._prefix}/{check_transcript_name(name)}"

    def create(self, name: str, header_line: bytes, *, durable: bool) -> TranscriptHandle:
        """See :meth:`TranscriptStore.create`."""
        check_transcript_name(name)
        with self._mutex:
            if name in self._data:
                raise UsageError(f"{self.locator(name)}: already exists; Kurahi never overwrites a transcript")
            self._data[name] = bytearray()
            handle = self._writers[name] = _MemoryHandle(self, name)
        handle.append(header_line, durable=durable)
        return handle

    def open(self, name: str) -> TranscriptHandle:
        """See :meth:`TranscriptStore.open`."""
        check_transcript_name(name)
        with self._mutex:
            if name not in self._data:
                raise TranscriptReadError("no such transcript", path=self.locator(name))
            if name in self._writers:
                raise LockHeldError(f"transcript {name} is open for writing elsewhere", path=self.locator(name))
            handle = self._writers[name] = _MemoryHandle(self, name)
        return handle

    def read(self, name: str) -> Transcript:
        """See :meth:`TranscriptStore.read`."""
        return Transcript.from_bytes(self.export(name), name=self.locator(name))

    def claim(self, name: str, *, take_over: bool = False, tag: str | None = None) -> TranscriptClaim:
        """See :meth:`TranscriptStore.claim` (taking over marks the writer's handle lost: it appends nothing more)."""
        check_transcript_name(name)
        with self._mutex:
            holder = self._writers.get(name)
            if holder is not None:
                if not take_over:
                    raise LockHeldError(f"transcript {name} is open for writing elsewhere", path=self.locator(name))
                holder._lost = True
            claim = self._writers[name] = _MemoryClaim(self, name)
            return claim

    def exists(self, name: str) -> bool:
        """See :meth:`TranscriptStore.exists`."""
        return check_transcript_name(name) in self._data

    def names(self) -> list[str]:
        """See :meth:`TranscriptStore.names`."""
        with self._mutex:
            return sorted(self._data)

    def info(self, name: str) -> TranscriptInfo | None:
        """See :meth:`TranscriptStore.info`."""
        with self._mutex:
            data = self._data.get(check_transcript_name(name))
            return None if data is None else TranscriptInfo(len(data), self._modified.get(name, 0))

    def export(self, name: str) -> bytes:
        """See :meth:`TranscriptStore.export`."""
        with self._mutex:
            data = self._data.get(check_transcript_name(name))
            if data is None:
                raise TranscriptReadError("no such transcript", path=self.locator(name))
            return bytes(data)

    def import_bytes(self, name: str, data: bytes) -> None:
        """See :meth:`TranscriptStore.import_bytes`."""
        check_transcript_name(name)
        with self._mutex:
            if name in self._data:
                raise UsageError(f"{self.locator(name)}: already exists; Kurahi never overwrites a transcript")
            self._data[name] = bytearray(data)
            self._modified[name] = time.time_ns() // 1_000_000


class MemoryCatalog(CatalogBase):
    """A catalog in a dict, changed under a lock."""

    def __init__(self, locator: str, *, clock: Callable[[], int] | None = None) -> None:
        self.path = locator
        self._clock = clock or (lambda: time.time_ns() // 1_000_000)
        self._store: Store = {}
        self._mutex = threading.RLock()

    def _load(self) -> Store:
        with self._mutex:
            return dict(self._store)  # a consistent version: changes replace entries, never edit them

    def _transaction(self, change: Callable[[Store], tuple[T, bool]]) -> T:
        with self._mutex:
            work = dict(self._store)
            result, changed = change(work)
            if changed:
                self._store = work
            return result


class MemoryLog(RecordLog):
    """A record log as a list of encoded lines (so a record is a copy, as on disk)."""

    def __init__(self, name: str, lines: list[bytes], mutex: threading.Lock, locator: str) -> None:
        self.name = name
        self._lines = lines
        self._mutex = mutex
        self._locator = locator

    def append(self, rec: Mapping[str, Any]) -> None:
        """See :meth:`RecordLog.append`."""
        try:
            line = encode_record(rec)
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            raise JournalWriteError(f"not a JSON record: {exc}", path=self._locator) from exc
        with self._mutex:
            self._lines.append(line)

    def records(self) -> Iterator[dict[str, Any]]:
        """See :meth:`RecordLog.records`."""
        with self._mutex:
            lines = list(self._lines)
        yield from decode_records(lines)

    def close(self) -> None:
        """Nothing to release."""


class MemoryAgentStore(AgentStore):
    """One agent's stores in memory."""

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        self.transcripts = MemoryTranscripts(f"memory:{agent_id}")
        self.catalog = MemoryCatalog(f"memory:{agent_id}/sessions.json")
        self._logs: dict[str, list[bytes]] = {}
        self._mutex = threading.Lock()

    def log(self, name: LogName, *, durable: bool = True) -> MemoryLog:
        """See :meth:`AgentStore.log`."""
        with self._mutex:
            lines = self._logs.setdefault(name, [])
        return MemoryLog(name, lines, self._mutex, f"memory:{self.agent_id}/{name}")


class _MemoryAudit(LineAuditLog):
    def __init__(self, clock: Callable[[], datetime] | None = None) -> None:
        super().__init__("memory:audit", clock=clock)
        self.lines: list[bytes] | None = None
        self._mutex = threading.Lock()

    def _lines(self) -> list[bytes] | None:
        with self._mutex:
            return None if self.lines is None else list(self.lines)

    def _append_after_last(self, make: Callable[[bytes | None], bytes]) -> None:
        with self._mutex:
            lines = self.lines if self.lines is not None else []
            line = make(lines[-1] if lines else None)
            lines.append(line)
            self.lines = lines


class MemoryBackend(Backend):
    """Everything in memory (see the module docstring).

    Args:
        home: where the home's files (identity, memory, config, secrets) live; the backend
            itself touches no file.
    """

    kind = "memory"
    shared = False  # one process's own
    fences_writers = True  # a claim taken over marks the writer's handle lost
    persistent = False  # gone with the process
    directory = None

    def __init__(self, home: str | Path | None = None) -> None:
        self.home = Path(home) if home is not None else Path("/nonexistent-kurahi-memory-home")
        self._agents: dict[str, MemoryAgentStore] = {}
        self._audit = _MemoryAudit()
        self._mutex = threading.Lock()

    def describe(self) -> str:
        """``memory:``."""
        return "memory:"

    def agent(self, agent_id: str, *, create: bool = False) -> MemoryAgentStore:
        """See :meth:`Backend.agent`."""
        check_agent_id(agent_id)
        with self._mutex:
            store = self._agents.get(agent_id)
            if store is None:
                store = self._agents[agent_id] = MemoryAgentStore(agent_id)
            return store

    def agent_ids(self) -> list[str]:
        """See :meth:`Backend.agent_ids`."""
        with self._mutex:
            return sorted(self._agents)

    def audit(self) -> LineAuditLog:
        """See :meth:`Backend.audit`."""
        return self._audit
