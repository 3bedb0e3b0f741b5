"""What a storage backend is: the interfaces the rooms above ``store`` write through.

A :class:`Backend` is built from a home (``file``), ``memory:`` or a ``postgres://`` URL
(:func:`kurahi.store.open.open_backend`) and handed to the runtime, the gateway, the
continuity manifest and the CLI. Above ``store`` nothing opens a transcript, a journal, the
catalog or the audit chain by path; everything goes through these objects::

    Backend
    ├── agent(agent_id) -> AgentStore
    │   ├── transcripts: TranscriptStore    create / open (one writer) / read / export / import
    │   │   └── claim(name) -> TranscriptClaim   replace or remove a transcript whole (an activation)
    │   ├── catalog: SessionCatalog         sessions.json's entries: get / upsert / update / delete / set_entry
    │   └── log(name) -> RecordLog          the ledger, jobs and queue journals
    └── audit() -> AuditLog                 the hash-chained audit log

Every backend keeps the same promises, and one conformance suite
(:mod:`kurahi.testing`'s ``*Conformance`` classes, bound once per backend) checks them:

* A write that returns is durable under the caller's policy; a write that raises left
  nothing behind (no half entry, no half record).
* A transcript has one writer at a time: a second :meth:`TranscriptStore.open` fails with
  :class:`~kurahi.errors.LockHeldError` while the first is open; a writer that lost its claim
  (a lease taken over after it expired) fails its next write instead of writing.
* A transcript reads back byte for byte as it was written, and exports as the file backend
  would hold it, so a copy between backends is verified by hashes.
* A transcript is replaced or removed only whole, by a compare-and-swap on its sha256,
  under its writer's claim (:meth:`TranscriptStore.claim`): never while a writer appends to it.
* Names are checked before they touch storage: a transcript name is a plain file name
  (:func:`check_transcript_name`), never a path.

The file backend (:mod:`kurahi.store.file_backend`) is today's home layout, byte for byte;
the memory backend (:mod:`kurahi.store.memory_backend`) is for tests and embedding.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kurahi.errors import TranscriptReadError, UsageError
from kurahi.pi.transcript import Transcript
from kurahi.store.audit.record import AuditRecord, ChainVerification
from kurahi.store.catalog_format import Entry as CatalogEntry
from kurahi.store.names import check_transcript_name

__all__ = [
    "LOG_NAMES",
    "AgentStore",
    "AuditLog",
    "Backend",
    "CatalogEntry",
    "LogName",
    "RecordLog",
    "SessionCatalog",
    "TranscriptClaim",
    "TranscriptHandle",
    "TranscriptInfo",
    "TranscriptStore",
    "check_transcript_name",
    "transcript_name",
]

_PROCESS_INSTANCE = uuid.uuid4().hex[:16]

LogName = Literal["ledger", "jobs", "queue"]
"""The record logs of an agent: the action-outcome ledger, job events, queued messages."""
LOG_NAMES: tuple[LogName, ...] = ("ledger", "jobs", "queue")


def transcript_name(entry: Mapping[str, Any] | None) -> str | None:
    """The transcript a catalog entry points at, or ``None`` when it names none.

    OpenClaw's entries carry ``sessionFile`` (sometimes a full path, from another machine or
    a moved home); only its last component is used, so an entry can never lead outside the
    agent's sessions. Without it the name is ``<sessionId>.jsonl``. This is the one place
    that turns a catalog entry into a transcript.
    """
    if entry is None or not isinstance(entry.get("sessionId"), str):
        return None
    raw = entry.get("sessionFile")
    name = os.path.basename(raw.replace("\\", "/")) if isinstance(raw, str) and raw else f"{entry['sessionId']}.jsonl"
    try:
        return check_transcript_name(name)
    except UsageError:
        return None


# -- transcripts -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TranscriptInfo:
    """What a store knows about a transcript without reading it."""

    size: int
    """Bytes, as :meth:`TranscriptStore.export` would return them."""
    modified_ms: int
    """When it last changed (epoch milliseconds): a file's mtime, a row's commit time."""


class TranscriptHandle(ABC):
    """One transcript open for appending: the only writer of it until :meth:`close`.

    :class:`kurahi.store.session.Session` builds entries in Pi's shapes and hands each one
    here as a whole line; the handle only makes bytes durable. Implementations hold the
    writer's claim (a lock file, a lease row) from open to close.
    """

    name: str
    """The transcript's name in its store."""
    locator: str
    """Where the transcript lives, for messages and for a successor's ``parentSession``
    (the file's path for the file backend)."""

    @abstractmethod
    def append(
        self, line: bytes, *, durable: bool, records: Sequence[tuple[RecordLog, Mapping[str, Any]]] = ()
    ) -> None:
        r"""Append one whole line (ending in ``\n``), and then ``records`` to their logs.

        Args:
            line: the entry's JSON and its newline.
            durable: make it durable before returning (policy ``always``); otherwise it is
                written (a killed process loses nothing) and :meth:`sync` makes it durable.
            records: ledger records that belong with this entry (a tool call's intent, a tool
                result's outcome). A backend with transactions commits them with the line;
                the file backend appends them right after it, each flushed.

        Raises:
            AppendError: nothing was appended (the line is not in the transcript).
            LockHeldError: this writer lost its claim to another (a lease taken over).
            JournalWriteError: the line is in, a record could not be appended.
        """

    @property
    def fenced(self) -> bool:
        """Whether this writer is known to have lost its claim (a lease taken over): it appends nothing more.

        Known once an append or the background renewal found the claim gone; a writer that
        sees it lets the transcript go and opens the session afresh.
        """
        return False

    @abstractmethod
    def sync(self) -> None:
        """Make every appended line durable.

        Raises:
            AppendError: it could not be made durable.
        """

    @abstractmethod
    def read(self) -> Transcript:
        """A fresh read view of everything appended so far (the caller closes it)."""

    @abstractmethod
    def close(self) -> None:
        """Sync, then give up the writer's claim. Closing twice is harmless."""


class TranscriptClaim(ABC):
    """The writer's claim on one transcript name, held to replace or remove the transcript whole.

    What an activation holds while it swaps a session: as long as the claim is held no writer
    can open the transcript (the file backend: its lock file; a database: its lease, renewed
    in the background, with a fencing token checked by every write), so the swap never
    interleaves with a gateway's appends. Every change is a compare-and-swap on the
    transcript's sha256, so a step that already happened is refused rather than done twice::

        with store.claim("s1.jsonl") as claim:
            claim.put(candidate, expected=claim.sha256())

    Attributes:
        name: the transcript's name in its store.
        locator: where it lives, for messages.
    """

    name: str
    locator: str

    @abstractmethod
    def sha256(self) -> str | None:
        """The sha256 of the transcript's bytes now (as :meth:`TranscriptStore.export` returns them), or ``None``."""

    @abstractmethod
    def put(self, data: bytes, *, expected: str | None) -> None:
        """Make ``data`` the transcript's bytes, whole and durably, only if it now has sha256 ``expected``.

        Args:
            data: the new bytes, stored byte for byte.
            expected: the sha256 it must have now; ``None``: there must be no transcript by
                that name (it is created, never written over).

        Raises:
            TranscriptChangedError: it is not as expected; nothing was changed.
            LeaseLostError: the claim was taken from us (a database lease); nothing was changed.
        """

    @abstractmethod
    def remove(self, *, expected: str) -> None:
        """Remove the transcript, durably, only if it now has sha256 ``expected``.

        Raises:
            TranscriptChangedError: it is not as expected (or absent); nothing was changed.
            LeaseLostError: the claim was taken from us; nothing was changed.
        """

    @abstractmethod
    def release(self) -> None:
        """Give the claim up. Releasing twice is harmless."""

    def __enter__(self) -> TranscriptClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class TranscriptStore(ABC):
    """An agent's transcripts, by name (``<sessionId>.jsonl`` unless the catalog says otherwise)."""

    @abstractmethod
    def locator(self, name: str) -> str:
        """Where ``name`` lives (see :attr:`TranscriptHandle.locator`)."""

    @abstractmethod
    def create(self, name: str, header_line: bytes, *, durable: bool) -> TranscriptHandle:
        """Create a transcript holding only its header line, and open it for appending.

        Raises:
            UsageError: a bad name, or a transcript by that name exists (never overwritten).
            TranscriptReadError: the store cannot create it.
            AppendError: the header could not be made durable (nothing is left behind).
        """

    @abstractmethod
    def open(self, name: str) -> TranscriptHandle:
        """Open an existing transcript for appending, as its only writer.

        Raises:
            LockHeldError: another writer has it.
            TranscriptReadError: there is no transcript by that name.
        """

    @abstractmethod
    def read(self, name: str) -> Transcript:
        """A read view of the transcript (no writer's claim is taken; the caller closes it).

        Raises:
            TranscriptReadError: there is no transcript by that name, or it cannot be read.
            NotASessionError: it is not a session.
        """

    @abstractmethod
    def exists(self, name: str) -> bool:
        """Whether a transcript by that name exists."""

    @abstractmethod
    def names(self) -> list[str]:
        """Every transcript's name, sorted."""

    @abstractmethod
    def info(self, name: str) -> TranscriptInfo | None:
        """Its size and when it last changed, or ``None`` when there is no transcript by that name."""

    @abstractmethod
    def export(self, name: str) -> bytes:
        """The transcript's bytes exactly as the file backend holds them.

        Raises:
            TranscriptReadError: there is no transcript by that name.
        """

    @abstractmethod
    def import_bytes(self, name: str, data: bytes) -> None:
        """Store ``data`` as a new transcript, byte for byte, durably (a copy, an activation).

        Raises:
            UsageError: a bad name, or a transcript by that name exists.
        """

    @abstractmethod
    def claim(self, name: str, *, take_over: bool = False, tag: str | None = None) -> TranscriptClaim:
        """Take the writer's claim on ``name`` (which may not exist yet), to replace or remove it whole.

        Args:
            name: the transcript.
            take_over: a backend with fenced claims (a database) takes the claim even from a
                live writer: that writer's next append fails (``LeaseLostError``) and writes
                nothing. A backend whose writers cannot be fenced (files: a lock held by a
                live process) refuses whatever this says.
            tag: names the temporary files a backend may leave if the process dies mid-write
                (the file backend: ``.<name>.<tag>``), so :meth:`AgentStore.discard_leftovers`
                finds them.

        Raises:
            UsageError: a bad name.
            LockHeldError: a writer holds the transcript (and it was not, or cannot be, taken over).
        """

    def sha256(self, name: str) -> str | None:
        """The sha256 of the transcript's bytes (as :meth:`export` returns them), or ``None`` when there is none."""
        try:
            data = self.export(name)
        except TranscriptReadError:
            if self.exists(name):
                raise
            return None
        return hashlib.sha256(data).hexdigest()


# -- the catalog -------------------------------------------------------------------------------


class SessionCatalog(ABC):
    """Session key → entry (OpenClaw's ``sessions.json`` shape: ``sessionId``, ``sessionFile``, clocks, ...).

    Entries handed out are copies; every change is atomic against other writers of the same
    catalog, in this process or another.
    """

    @abstractmethod
    def get(self, key: str) -> CatalogEntry | None:
        """The entry for ``key`` (a copy), or ``None``.

        Raises:
            CatalogCorruptError: the stored catalog cannot be read; nothing is ever written over it.
        """

    @abstractmethod
    def items(self) -> list[tuple[str, CatalogEntry]]:
        """Every ``(key, entry)`` of one consistent version, in catalog order."""

    def keys(self) -> list[str]:
        """Every key of one consistent version, in catalog order."""
        return [k for k, _ in self.items()]

    @abstractmethod
    def upsert(self, key: str, fields: Mapping[str, Any], *, touch: bool = False) -> CatalogEntry:
        """Merge ``fields`` into the entry for ``key`` (creating it); ``touch`` sets ``updatedAt`` to now.

        Raises:
            CatalogEntryError: a bad key or field value; nothing changed.
        """

    @abstractmethod
    def upsert_many(self, changes: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge fields into several existing entries in one change (missing keys are skipped)."""

    @abstractmethod
    def update(self, key: str, fn: Callable[[CatalogEntry | None], Mapping[str, Any] | None]) -> CatalogEntry | None:
        """Replace the entry for ``key`` by ``fn(current)`` atomically (``None`` deletes it); the result."""

    @abstractmethod
    def delete(self, key: str) -> bool:
        """Remove ``key``; whether it was there."""

    def compare_and_set(self, key: str, expected: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
        """Set the entry for ``key`` to ``new`` (``None``: delete) only if it is still ``expected``.

        Equality is of the JSON values. Returns whether the change was made.
        """
        won = False

        def swap(current: CatalogEntry | None) -> Mapping[str, Any] | None:
            nonlocal won
            if (None if current is None else dict(current)) != (None if expected is None else dict(expected)):
                return current
            won = True
            return new

        self.update(key, swap)
        return won

    def snapshot(self) -> bytes | None:
        """The whole catalog as bytes, for :meth:`set_entry` to put back (``None``: there is no catalog).

        The file backend returns ``sessions.json`` byte for byte; others the catalog's JSON.
        """
        from kurahi.store.catalog_format import serialize_catalog

        items = self.items()
        return serialize_catalog(dict(items)) if items else None

    def set_entry(
        self,
        key: str,
        new: Mapping[str, Any] | None,
        *,
        check: Callable[[CatalogEntry | None], None],
        restore: bytes | Literal[False] | None = False,
        tag: str | None = None,
    ) -> None:
        """Set the entry for ``key`` to ``new`` (``None``: delete) once ``check(current)`` passes, atomically.

        ``check`` sees the entry as it is inside the change (under the catalog's lock or in
        its transaction) and raises to refuse; nothing is written then. An entry already
        equal to ``new`` is left alone.

        Args:
            key: the session key.
            new: the entry it gets.
            check: raises when the current entry is not one this change may replace.
            restore: a :meth:`snapshot` being put back: when the catalog, with ``new`` in
                place, holds the same JSON as the snapshot, it becomes the snapshot exactly
                (the file backend: its bytes and layout; no catalog at all for ``None``).
            tag: names a temporary file a backend may leave if the process dies mid-write
                (see :meth:`TranscriptStore.claim`).

        Raises:
            CatalogCorruptError: the stored catalog cannot be read; nothing is written over it.
            Whatever ``check`` raises.
        """

        def change(current: CatalogEntry | None) -> Mapping[str, Any] | None:
            check(current)
            return new

        self.update(key, change)


# -- record logs and the audit chain ------------------------------------------------------------


class RecordLog(ABC):
    """An append-only log of JSON objects (the ledger, job events, queued messages), folded on read."""

    name: str
    """Which log (see :data:`LOG_NAMES`)."""

    @abstractmethod
    def append(self, rec: Mapping[str, Any]) -> None:
        """Append one record, durably unless the log was opened with ``durable=False``.

        Raises:
            JournalWriteError: it was not appended; every earlier record is still there.
        """

    @abstractmethod
    def records(self) -> Iterator[dict[str, Any]]:
        """Every whole record, in the order appended (damaged ones skipped)."""

    def records_where(self, field: str, value: str) -> Iterator[dict[str, Any]]:
        """The records whose ``field`` is ``value``, in the order appended.

        What a gateway taking a session over asks the ledger about one action: a backend
        that can find them without reading the whole log (a database) overrides this, so
        the cost of a takeover is what the session holds, not what the agent ever did.
        """
        for rec in self.records():
            if rec.get(field) == value:
                yield rec

    @abstractmethod
    def close(self) -> None:
        """Release what the log holds open."""


class AuditLog(ABC):
    """The hash-chained audit log (records as :mod:`kurahi.store.audit.record` describes)."""

    locator: str
    """Where the chain lives, for messages and reports."""

    @abstractmethod
    def append(self, actor: str, action: str, details: Mapping[str, Any] | None = None) -> AuditRecord:
        """Chain one record (details redacted) and make it durable before returning it.

        Raises:
            UsageError, CanonicalJSONError: the record cannot be made; nothing was written.
            AuditChainError: the last stored record is damaged; nothing was written.
            AuditWriteError: it could not be made durable; the chain is as it was.
        """

    @abstractmethod
    def exists(self) -> bool:
        """Whether a chain was ever started here (an empty chain exists; a missing one does not)."""

    @abstractmethod
    def head(self) -> AuditRecord | None:
        """The last record, checked against its own hash (``None``: an empty chain)."""

    @abstractmethod
    def tail(self, count: int = 20) -> list[AuditRecord]:
        """The last ``count`` records, oldest first (not verified)."""

    @abstractmethod
    def get(self, seq: int) -> AuditRecord | None:
        """The record with this seq, or ``None`` (not verified)."""

    @abstractmethod
    def verify(self) -> ChainVerification:
        """Check every record against the one before it; name the first that breaks the chain.

        Raises:
            AuditNotFoundError: there is no chain at all.
        """

    @abstractmethod
    def is_ancestor(self, seq: int, *, of_head: str | None = None) -> bool:
        """Whether seq lies on the verified chain ending at ``of_head`` (default: the last record)."""


# -- the bundle ----------------------------------------------------------------------------------


class AgentStore(ABC):
    """One agent's stores."""

    agent_id: str
    transcripts: TranscriptStore
    catalog: SessionCatalog

    sessions_dir: Path | None = None
    """The folder the agent's transcripts (``<name>.jsonl``) and catalog (``sessions.json``) are files in,
    for a caller that reads or hashes them by path; ``None`` when they are not files (see
    :attr:`Backend.directory`)."""

    @abstractmethod
    def log(self, name: LogName, *, durable: bool = True) -> RecordLog:
        """The agent's record log ``name`` (a new object each call; the caller closes it)."""

    def discard_leftovers(self, tag: str) -> None:  # noqa: B027 - a transactional store leaves nothing
        """Remove temporary files a write tagged ``tag`` left when its process died (:meth:`TranscriptStore.claim`)."""


class Backend(ABC):
    """Where everything Kurahi stores lives (see the module docstring).

    Code above ``store`` asks a backend what it can do (:attr:`shared`, :attr:`fences_writers`,
    :attr:`persistent`, :attr:`directory`), never what it is: :attr:`kind` is a label for
    messages and reports, and nothing branches on it. Every backend sets each capability.

    Attributes:
        kind: ``file``, ``memory`` or ``postgres``: a label to print, not to test.
        home: the Kurahi home. Its identity, memory and config files, secrets and run files
            stay files whatever the backend; the backend holds sessions, logs and the chain.
    """

    kind: str
    home: Path

    shared: bool
    """Whether several gateways (processes, on this machine or others) may use this store at once.

    On a shared store a writer's claim is a lease another process may take over, and a process
    that starts settles only what dead writers left, never a live one's work: it asks
    :meth:`live_instances`, which answers for a shared store and is ``None`` otherwise. Not
    shared: one gateway at a time (a home's files, guarded by ``run/gateway.lock``; memory,
    one process's own).
    """

    fences_writers: bool
    """Whether :meth:`TranscriptStore.claim` can take a transcript from a live writer and fence it off.

    ``True`` (a database's leases, memory): a claim made with ``take_over`` wins, and the old
    writer's next append fails and writes nothing; an activation uses this to switch a session
    a gateway still holds. ``False`` (a home's files: a lock held by a live process): a claim
    on a transcript being written is refused whatever ``take_over`` says.
    """

    persistent: bool
    """Whether what is written outlives this process: another process opening the same store reads it.

    ``False`` (memory) is for tests and embedding; a command that ends when its work is
    done has nothing left to show from such a store.
    """

    directory: Path | None
    """The local directory that holds this store as a Kurahi home's files (``agents/<id>/sessions/``,
    ``audit/chain.jsonl``), or ``None`` when the data lives elsewhere (a database, memory).

    A caller that reads or checks a home by path (lineage and provenance tools, OpenClaw-shaped
    catalogs beside the home's, whether the home is writable, a plan in the home's files)
    works only on a store that has one; each agent's folder is :attr:`AgentStore.sessions_dir`.
    """

    @property
    def instance(self) -> str:
        """The identity of this process as a writer, recorded with the work it starts (jobs, queued messages)."""
        return _PROCESS_INSTANCE

    def live_instances(self) -> frozenset[str] | None:
        """The writers alive now, by :attr:`instance`; ``None`` when only this process writes here.

        A process that starts settles what dead writers left (jobs cut off, messages still
        queued), never what a live one is doing. A single-writer backend (files, memory)
        has no live writer but this process, so everything left is a dead writer's.
        """
        return None

    @abstractmethod
    def describe(self) -> str:
        """Where the data lives, safe to print (no password)."""

    @abstractmethod
    def agent(self, agent_id: str, *, create: bool = False) -> AgentStore:
        """The stores of ``agent_id``.

        Args:
            agent_id: the agent.
            create: make what its stores need before a first write (the file backend's
                directories, mode 0700); reading never creates anything.

        Raises:
            UsageError: not a safe agent id.
        """

    @abstractmethod
    def agent_ids(self) -> list[str]:
        """Agents that have anything stored, sorted."""

    @abstractmethod
    def audit(self) -> AuditLog:
        """The audit chain."""

    def close(self) -> None:  # noqa: B027 - most backends hold nothing open
        """Release connections and files."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
