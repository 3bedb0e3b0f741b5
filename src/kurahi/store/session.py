"""Appending to a transcript: one writer per file, one line per entry, never deferred.

:class:`Session` writes entries in Pi's exact shapes (key order, 8-hex ids, ISO
timestamps) so Pi opens the file with the same context. Where Pi loses data, it does
better on purpose:

* Nothing is deferred. Pi keeps a new session in memory until the first assistant
  message; here the header is on disk when :meth:`Session.create` returns and every
  entry is on disk when its ``append_*`` returns.
* Each entry is one ``write(2)`` of one whole line on an ``O_APPEND`` descriptor, so a
  crash leaves at most a torn last line, which readers skip and ``repair`` moves aside.
* Leaf moves are durable: :meth:`Session.branch` appends a ``custom`` marker entry that
  is a child of the target, so the file's last line (Pi's leaf on open) projects the
  target's context in Pi and in Kurahi alike.
* One writer at a time, through a lock file; a second writer gets a clear error and a
  lock left by a dead process is reclaimed.
* Pi 1.6.0's entry kinds are written as it writes them: ``context_edit`` (with its checks:
  a target that is unknown, off the active branch or not editable is refused with a
  :class:`~kurahi.errors.ContextEditError` and nothing appended), ``usage``, and
  compactions that carry the folded ``systemMessage``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import AppendError, ContextEditError, EntryNotFoundError, UsageError
from kurahi.fs.durable import FsyncPolicy
from kurahi.js.values import MISSING, date_ms, js_whitespace_strip
from kurahi.pi.effective import EDITABLE_ROLES, is_editable
from kurahi.pi.entry import Entry
from kurahi.pi.ids import entry_id, iso_now, session_id
from kurahi.pi.system import current_system_message, path_system_messages
from kurahi.pi.transcript import Transcript, is_leaf_marker
from kurahi.pi.vocab import (
    BRANCH_SUMMARY,
    COMPACTION,
    CONTEXT_EDIT,
    CUSTOM,
    CUSTOM_MESSAGE,
    FIRST_KEPT_ENTRY_ID,
    FROM_ID,
    LABEL,
    LEAF_ID,
    LEAF_MARKER_TYPE,
    MESSAGE,
    MODEL_CHANGE,
    SESSION,
    SESSION_INFO,
    TARGET_ID,
    THINKING_LEVEL_CHANGE,
    USAGE,
)
from kurahi.store.base import RecordLog, TranscriptHandle, TranscriptStore

__all__ = ["CURRENT_VERSION", "Session"]

CURRENT_VERSION = 3
"""The session format version Kurahi writes (Pi 0.73.1's ``CURRENT_SESSION_VERSION``)."""

_fast_encode = msgspec.json.Encoder().encode


def _encode(entry: dict[str, Any]) -> bytes:
    r"""One entry as a JSON line's bytes.

    msgspec for nearly everything; a string holding a lone surrogate (which a JSON text may
    carry as ``\ud800``, and which UTF-8 cannot) is written as ``JSON.stringify`` writes it.
    """
    try:
        return _fast_encode(entry)
    except UnicodeEncodeError:
        from kurahi.js.stringify import js_json

        return js_json(entry)


def _present(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {k: v for k, v in pairs if v is not MISSING}


class Session:
    """A transcript open for appending. Create with :meth:`create` or :meth:`open`.

    Example::

        with Session.create(path, cwd="/home/ava") as s:
            s.append_message({"role": "user", "content": "hi", "timestamp": 1764492000000})
            s.sync()

    Attributes:
        path: the transcript file.
        header: the session header as stored.
        fsync: when entries are forced to stable storage (see :class:`FsyncPolicy`).
    """

    def __init__(
        self,
        handle: TranscriptHandle,
        header: dict[str, Any],
        ids: set[str],
        leaf: str | None,
        fsync: FsyncPolicy,
    ) -> None:
        self._handle: TranscriptHandle | None = handle
        self.path = Path(handle.locator)
        """Where the transcript lives: the file for the file backend, a locator for others."""
        self.name = handle.name
        """The transcript's name in its store."""
        self.header = header
        self._ids = ids
        self._leaf = leaf
        self.fsync = fsync
        self._mutex = threading.Lock()

    # -- opening ----------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        cwd: str | None = None,
        session_id_: str | None = None,
        parent_session: str | None = None,
        fsync: FsyncPolicy | str = FsyncPolicy.TURN,
    ) -> Session:
        """Create a new transcript file; the header is on disk when this returns.

        The file-backend shorthand for :meth:`create_in` (``path``'s folder is the store).

        Raises:
            UsageError: the file already exists (it is never overwritten).
            TranscriptReadError: the directory is missing or not writable.
        """
        p = Path(path)
        return cls.create_in(
            _files(p.parent), p.name, cwd=cwd, session_id_=session_id_, parent_session=parent_session, fsync=fsync
        )

    @classmethod
    def create_in(
        cls,
        store: TranscriptStore,
        name: str,
        *,
        cwd: str | None = None,
        session_id_: str | None = None,
        parent_session: str | None = None,
        fsync: FsyncPolicy | str = FsyncPolicy.TURN,
    ) -> Session:
        """Create transcript ``name`` in ``store``; its header is durable when this returns.

        Raises:
            UsageError: a transcript by that name exists (it is never overwritten), or a bad name.
            TranscriptReadError: the store cannot create it.
        """
        policy = FsyncPolicy(fsync)
        header = _present(
            [
                ("type", SESSION),
                ("version", CURRENT_VERSION),
                ("id", session_id_ or session_id()),
                ("timestamp", iso_now()),
                ("cwd", cwd if cwd is not None else os.getcwd()),
                ("parentSession", parent_session if parent_session is not None else MISSING),
            ]
        )
        handle = store.create(name, _encode(header) + b"\n", durable=policy is not FsyncPolicy.NEVER)
        return cls(handle, header, set(), None, policy)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, fsync: FsyncPolicy | str = FsyncPolicy.TURN) -> Session:
        """Open an existing transcript file for appending (takes the writer lock).

        The file-backend shorthand for :meth:`open_in`.

        Raises:
            LockHeldError: another process is writing it.
            NotASessionError, TranscriptReadError: it cannot be read as a session.
            UsageError: it is a v1/v2 file (Pi would rewrite it; Kurahi will not append to it).
        """
        p = Path(path)
        return cls.open_in(_files(p.parent), p.name, fsync=fsync)

    @classmethod
    def open_in(cls, store: TranscriptStore, name: str, *, fsync: FsyncPolicy | str = FsyncPolicy.TURN) -> Session:
        """Open transcript ``name`` of ``store`` for appending, as its only writer.

        Raises:
            LockHeldError: another writer has it.
            NotASessionError, TranscriptReadError: it cannot be read as a session.
            UsageError: it is a v1/v2 file (Pi would rewrite it; Kurahi will not append to it).
        """
        handle = store.open(name)
        try:
            with handle.read() as t:
                if t.migrated_from is not None or t.version is MISSING:
                    raise UsageError(
                        f"{handle.locator}: session format version {t.version if t.version is not MISSING else 1} "
                        f"is older than {CURRENT_VERSION}; appending would break its migration. "
                        "Stitch or copy it first."
                    )
                ids = t.entry_ids()
                leaf = _append_position(t)
                header = t.header
            return cls(handle, header, ids, leaf, FsyncPolicy(fsync))
        except BaseException:
            handle.close()
            raise

    # -- state --------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The header's id."""
        return str(self.header["id"])

    @property
    def leaf_id(self) -> str | None:
        """Where the next entry attaches (``None``: a new root)."""
        return self._leaf

    def __contains__(self, entry_id_: object) -> bool:
        return entry_id_ in self._ids

    @property
    def entry_count(self) -> int:
        """How many entries the file holds (the header not counted)."""
        return len(self._ids)

    @property
    def fenced(self) -> bool:
        """Whether its writer's claim was taken over (an activation, another gateway): it appends nothing more."""
        handle = self._handle
        return handle is not None and handle.fenced

    def transcript(self) -> Transcript:
        """A fresh read view of the transcript (the caller closes it).

        Raises:
            AppendError: the session is closed.
        """
        if self._handle is None:
            raise AppendError("session is closed", path=self.path)
        return self._handle.read()

    # -- appending ----------------------------------------------------------------------

    def _append(
        self,
        build: Any,
        *,
        move_leaf_to: Any = MISSING,
        parent: Any = MISSING,
        timestamp: str | None = None,
        records: Sequence[tuple[RecordLog, Mapping[str, Any]]] = (),
    ) -> str:
        with self._mutex:
            if self._handle is None:
                raise AppendError("session is closed", path=self.path)
            new_id = entry_id(self._ids)
            parent_id = self._leaf if parent is MISSING else parent
            entry = build(new_id, parent_id, timestamp if timestamp is not None else iso_now())
            self._handle.append(_encode(entry) + b"\n", durable=self.fsync is FsyncPolicy.ALWAYS, records=records)
            self._ids.add(new_id)
            self._leaf = new_id if move_leaf_to is MISSING else move_leaf_to
            return new_id

    def append_entry(self, entry: Mapping[str, Any], *, keep_timestamp: bool = False) -> str:
        """Append an entry of any type; ``id``, ``parentId`` and ``timestamp`` are filled in.

        Keys come out in Pi's order (``type, id, parentId, timestamp``, then the rest).

        Args:
            entry: the entry (its own ``id`` and ``parentId`` are ignored).
            keep_timestamp: keep the entry's string ``timestamp`` instead of now; entries
                carried from another transcript keep theirs, so they project the same.
        """
        if not isinstance(entry.get("type"), str) or entry.get("type") == SESSION:
            raise UsageError('an entry needs a string "type" other than "session"')
        rest = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}

        def build(i: str, p: str | None, ts: str) -> dict[str, Any]:
            return {"type": entry["type"], "id": i, "parentId": p, "timestamp": ts, **rest}

        kept = entry.get("timestamp") if keep_timestamp and isinstance(entry.get("timestamp"), str) else None
        return self._append(build, timestamp=kept)

    def append_message(
        self,
        message: Mapping[str, Any],
        *,
        extra: Mapping[str, Any] | None = None,
        records: Sequence[tuple[RecordLog, Mapping[str, Any]]] = (),
    ) -> str:
        """Append a ``message`` entry (any role: user, assistant, toolResult, bashExecution, custom).

        Args:
            message: the message.
            extra: fields stored on the entry after ``message`` (Pi keeps and ignores them;
                the runtime records a queued message's id there, for exactly-once delivery).
            records: log records that belong with this entry (a tool call's ledger intent, a
                tool result's outcome), written with it (see :meth:`TranscriptHandle.append`).
        """
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise UsageError('a message needs a string "role"')
        msg = dict(message)
        more = {k: v for k, v in (extra or {}).items() if k not in ("type", "id", "parentId", "timestamp", "message")}
        return self._append(
            lambda i, p, ts: {"type": "message", "id": i, "parentId": p, "timestamp": ts, "message": msg, **more},
            records=records,
        )

    def append_thinking_level_change(self, thinking_level: str) -> str:
        """Append a ``thinking_level_change``."""
        return self._append(
            lambda i, p, ts: {
                "type": THINKING_LEVEL_CHANGE,
                "id": i,
                "parentId": p,
                "timestamp": ts,
                "thinkingLevel": thinking_level,
            }
        )

    def append_model_change(self, provider: str, model_id: str) -> str:
        """Append a ``model_change``."""
        return self._append(
            lambda i, p, ts: {
                "type": MODEL_CHANGE,
                "id": i,
                "parentId": p,
                "timestamp": ts,
                "provider": provider,
                "modelId": model_id,
            }
        )

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: int,
        details: Any = MISSING,
        from_hook: Any = MISSING,
        timestamp: str | None = None,
        *,
        usage: Any = MISSING,
        system_message: Any = MISSING,
    ) -> str:
        """Append a ``compaction``: the summary replaces what lies before ``first_kept_entry_id``.

        As Pi 1.6.0 writes it: with no first kept entry, ``firstKeptEntryId`` is the
        compaction's own id (nothing before it is kept), and when the context being
        compacted holds system-role messages, they are folded into one ``systemMessage``
        stamped with the compaction's time, which the projection puts before the summary.

        Args:
            summary: the summary text.
            first_kept_entry_id: the first entry kept raw, or ``None``.
            tokens_before: the context's size before compacting.
            details: Pi's ``details`` (omitted when not given).
            from_hook: Pi's ``fromHook`` (omitted when not given).
            timestamp: an ISO time instead of now, for a compaction carried from another
                transcript.
            usage: the summarising call's usage (1.6.0; omitted when not given).
            system_message: the folded system message to store; by default it is worked out
                from the context at the leaf, as Pi does; ``None`` stores none.
        """
        if first_kept_entry_id is not None and first_kept_entry_id not in self._ids:
            raise EntryNotFoundError(first_kept_entry_id, path=self.path)
        if system_message is not MISSING and system_message is not None and not isinstance(system_message, Mapping):
            raise UsageError("system_message must be a message object or None")

        def build(i: str, p: str | None, ts: str) -> dict[str, Any]:
            sm = self._system_message_at(p) if system_message is MISSING else system_message
            return _present(
                [
                    ("type", COMPACTION),
                    ("id", i),
                    ("parentId", p),
                    ("timestamp", ts),
                    ("summary", summary),
                    (FIRST_KEPT_ENTRY_ID, first_kept_entry_id if first_kept_entry_id is not None else i),
                    ("tokensBefore", tokens_before),
                    ("details", details),
                    ("usage", usage),
                    ("fromHook", from_hook),
                    ("systemMessage", {**sm, "timestamp": date_ms(ts)} if sm else MISSING),
                ]
            )

        return self._append(build, timestamp=timestamp)

    def _system_message_at(self, leaf: str | None) -> dict[str, Any] | None:
        """Pi's ``getCurrentSystemMessage`` of the context at ``leaf``."""
        if leaf is None:
            return None
        with self.transcript() as t:
            return current_system_message(path_system_messages(t.path(leaf)))

    def append_system_message(
        self,
        content: str | list[Any],
        *,
        sections: Mapping[str, str | None] | None = None,
        tools_added: list[Any] | None = None,
        tools_removed: list[Any] | None = None,
        timestamp: int | None = None,
    ) -> str:
        """Append a system-role message (Pi 1.6.0): a change to the system prompt or the tools.

        Args:
            content: instruction text (on the first one, the base prompt), or text blocks.
            sections: named prompt sections to set (``None`` removes one).
            tools_added: tool definitions that become available here.
            tools_removed: tools (``{"name": ...}``) that stop being available here.
            timestamp: milliseconds since the epoch (default: now).
        """
        if not isinstance(content, (str, list)):
            raise UsageError("a system message's content is text or a list of text blocks")
        msg = _present(
            [
                ("role", "system"),
                ("content", content),
                ("sections", dict(sections) if sections is not None else MISSING),
                ("toolsAdded", list(tools_added) if tools_added is not None else MISSING),
                ("toolsRemoved", list(tools_removed) if tools_removed is not None else MISSING),
                ("timestamp", timestamp if timestamp is not None else _now_ms()),
            ]
        )
        return self.append_message(msg)

    def append_usage(
        self, kind: str, provider: str, model: str, usage: Mapping[str, Any], note: str | None = None
    ) -> str:
        """Append a ``usage`` entry (Pi 1.6.0): model usage that is not part of the context.

        Pi records, for example, a cache warm-up call this way (``kind`` ``"cache_warm"``).
        ``note`` is written only when it is a non-empty string, as Pi writes it.
        """
        for name, value in (("kind", kind), ("provider", provider), ("model", model)):
            if not isinstance(value, str):
                raise UsageError(f"usage {name} must be a string, not {type(value).__name__}")
        if not isinstance(usage, Mapping):
            raise UsageError(f"usage must be an object (Pi's Usage), not {type(usage).__name__}")
        if note is not None and not isinstance(note, str):
            raise UsageError(f"usage note must be a string, not {type(note).__name__}")
        body = dict(usage)
        return self._append(
            lambda i, p, ts: _present(
                [
                    ("type", USAGE),
                    ("id", i),
                    ("parentId", p),
                    ("timestamp", ts),
                    ("kind", kind),
                    ("provider", provider),
                    ("model", model),
                    ("usage", body),
                    ("note", note if note else MISSING),
                ]
            )
        )

    def append_context_edit(self, target_id: str, replacement: str | list[Any] | Mapping[str, Any] | None) -> str:
        """Change what the model sees of an earlier entry, by appending (Pi 1.6.0's ``appendContextEdit``).

        The file keeps every byte it had: the edit is a new ``context_edit`` entry, and
        from it on (on this branch) the projection shows the target with the replacement
        content, or not at all.

        Args:
            target_id: a user, assistant or toolResult message or a ``custom_message`` on
                the active branch (the path to the leaf).
            replacement: ``None`` takes the entry out of the model's view; text or a list of
                content blocks (or Pi's own ``{"content": ...}``) replaces its content. Text
                for an assistant or toolResult message becomes one text block, as Pi stores it.

        Returns:
            The new entry's id.

        Raises:
            ContextEditError: the replacement is of the wrong type, the target is unknown,
                off the active branch, or not editable (an edit of an edit included);
                nothing is appended.
        """
        if not isinstance(target_id, str):
            raise ContextEditError(
                f"the target id must be a string, not {type(target_id).__name__}; nothing appended",
                target_id=str(target_id),
                reason="not-found",
                path=self.path,
            )
        wanted = _replacement(replacement, target_id, self.path)

        def build(i: str, p: str | None, ts: str) -> dict[str, Any]:
            target = self._edit_target(target_id, p)
            role = target.data["message"].get("role") if target.type == MESSAGE else "custom"
            stored = wanted
            if stored is not None and role in ("assistant", "toolResult") and isinstance(stored["content"], str):
                stored = {"content": [{"type": "text", "text": stored["content"]}]}
            return {
                "type": CONTEXT_EDIT,
                "id": i,
                "parentId": p,
                "timestamp": ts,
                TARGET_ID: target_id,
                "replacement": stored,
            }

        return self._append(build)

    def _edit_target(self, target_id: str, leaf: str | None) -> Entry:
        """The entry a new edit at ``leaf`` may target, checked as Pi 1.6.0 checks it."""
        with self.transcript() as t:
            idx = t.index_of(target_id)
            if idx is None:
                raise ContextEditError(
                    f"no entry with id {target_id!r}; nothing appended",
                    target_id=target_id,
                    reason="not-found",
                    path=self.path,
                )
            target = t.entry_at(idx)
            target.data  # noqa: B018 - decoded while the file is open
            leaf_at = t.index_of(leaf) if leaf is not None else None
            branch = set(t.ids_of(t.path_indices(leaf_at))) if leaf_at is not None else set()
        if target_id not in branch:
            raise ContextEditError(
                f"entry {target_id!r} (line {target.line}) is not on the active branch (the path to "
                f"{leaf if leaf is not None else 'an empty leaf'}); an edit changes what the model sees from here, "
                "so it can only name an entry on this path; nothing appended",
                target_id=target_id,
                reason="off-branch",
                path=self.path,
                line=target.line,
            )
        if not is_editable(target):
            raise ContextEditError(
                f"entry {target_id!r} (line {target.line}) is {_kind_of(target)}, which has no editable model "
                f"content (only {', '.join(EDITABLE_ROLES)} messages and custom_message entries do); nothing appended",
                target_id=target_id,
                reason="not-editable",
                path=self.path,
                line=target.line,
            )
        return target

    def append_branch_summary(
        self, branch_from_id: str | None, summary: str, details: Any = MISSING, from_hook: Any = MISSING
    ) -> str:
        """Pi's ``branchWithSummary``: move to ``branch_from_id`` and attach a summary there."""
        self._check_known(branch_from_id)
        return self._append(
            lambda i, p, ts: _present(
                [
                    ("type", BRANCH_SUMMARY),
                    ("id", i),
                    ("parentId", p),
                    ("timestamp", ts),
                    (FROM_ID, branch_from_id if branch_from_id is not None else "root"),
                    ("summary", summary),
                    ("details", details),
                    ("fromHook", from_hook),
                ]
            ),
            parent=branch_from_id,
        )

    def append_custom(self, custom_type: str, data: Any = MISSING) -> str:
        """Append a ``custom`` entry (extension state; never sent to the model)."""
        if custom_type == LEAF_MARKER_TYPE:
            raise UsageError(f"customType {LEAF_MARKER_TYPE!r} is reserved for leaf moves; use Session.branch()")
        return self._append(
            lambda i, p, ts: _present(
                [
                    ("type", CUSTOM),
                    ("customType", custom_type),
                    ("data", data),
                    ("id", i),
                    ("parentId", p),
                    ("timestamp", ts),
                ]
            )
        )

    def append_custom_message(self, custom_type: str, content: Any, display: bool, details: Any = MISSING) -> str:
        """Append a ``custom_message`` entry (sent to the model as a user message)."""
        return self._append(
            lambda i, p, ts: _present(
                [
                    ("type", CUSTOM_MESSAGE),
                    ("customType", custom_type),
                    ("content", content),
                    ("display", display),
                    ("details", details),
                    ("id", i),
                    ("parentId", p),
                    ("timestamp", ts),
                ]
            )
        )

    def append_label(self, target_id: str, label: str | None) -> str:
        """Set (or, with ``None``/``""``, clear) the label on ``target_id``. Like Pi, moves the leaf."""
        self._check_known(target_id)
        return self._append(
            lambda i, p, ts: _present(
                [
                    ("type", LABEL),
                    ("id", i),
                    ("parentId", p),
                    ("timestamp", ts),
                    (TARGET_ID, target_id),
                    ("label", label if label is not None else MISSING),
                ]
            )
        )

    def append_session_info(self, name: str) -> str:
        """Name the session (Pi trims the name)."""
        trimmed = js_whitespace_strip(name)
        return self._append(
            lambda i, p, ts: {
                "type": SESSION_INFO,
                "id": i,
                "parentId": p,
                "timestamp": ts,
                "name": trimmed,
            }
        )

    def branch(self, entry_id_: str | None) -> str:
        """Move the leaf to ``entry_id_`` (``None``: before the first entry), durably.

        Pi's ``branch()`` changes only memory and is forgotten on reopen. Kurahi appends a
        ``custom`` entry of type ``kurahi.leaf`` as a child of the target: it is the file's
        last line, so Pi's leaf on open is the marker and its context is the target's. The
        next entry attaches to the target, not to the marker.
        """
        self._check_known(entry_id_)
        return self._append(
            lambda i, p, ts: {
                "type": CUSTOM,
                "customType": LEAF_MARKER_TYPE,
                "data": {LEAF_ID: entry_id_},
                "id": i,
                "parentId": entry_id_,
                "timestamp": ts,
            },
            parent=entry_id_,
            move_leaf_to=entry_id_,
        )

    def _check_known(self, entry_id_: str | None) -> None:
        if entry_id_ is not None and entry_id_ not in self._ids:
            raise EntryNotFoundError(entry_id_, path=self.path)

    # -- durability and lifetime --------------------------------------------------------

    def sync(self) -> None:
        """Force appended entries to stable storage (the end of a turn, under policy ``turn``)."""
        with self._mutex:
            if self._handle is not None and self.fsync is not FsyncPolicy.NEVER:
                self._handle.sync()

    def close(self) -> None:
        """Sync (unless the policy is ``never``), then give up the writer's claim."""
        handle = self._handle
        if handle is None:
            return
        try:
            self.sync()
        finally:
            self._handle = None
            handle.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            self.close()


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _kind_of(entry: Entry) -> str:
    if entry.type == CONTEXT_EDIT:
        target = entry.data.get(TARGET_ID)
        return f"a context_edit (of {target!r}: edit that entry instead; an edit of an edit is refused)"
    if entry.type == MESSAGE:
        msg = entry.data.get("message")
        return f"a {msg.get('role') if isinstance(msg, dict) else '(role-less)'} message"
    return f"a {entry.type} entry"


def _replacement(value: Any, target_id: str, path: Path) -> dict[str, Any] | None:
    """``{"content": ...}`` or ``None`` from what the caller gave (Pi's check, plus block shapes)."""
    if value is None:
        return None
    if isinstance(value, (str, list)):
        value = {"content": value}
    if isinstance(value, Mapping) and "content" in value:
        content = value["content"]
        if isinstance(content, str) or (
            isinstance(content, list)
            and all(isinstance(b, Mapping) and isinstance(b.get("type"), str) for b in content)
        ):
            return dict(value)
        what = (
            "a list holding something other than content blocks"
            if isinstance(content, list)
            else type(content).__name__
        )
    else:
        what = type(value).__name__ if not isinstance(value, Mapping) else "an object without content"
    raise ContextEditError(
        f"the replacement for {target_id!r} must be None, text, a list of content blocks (objects with a "
        f'"type") or {{"content": ...}} holding one of those, not {what}; nothing appended',
        target_id=target_id,
        reason="replacement",
        path=path,
    )


def _files(directory: Path) -> TranscriptStore:
    from kurahi.store.file_backend import FileTranscripts

    return FileTranscripts(directory)


def _append_position(t: Transcript) -> str | None:
    """Where appends continue: Pi's leaf, or the target of a trailing leaf marker."""
    if not len(t):
        return None
    last = t.entry_at(len(t) - 1)
    if is_leaf_marker(last.type, last.data, last.parent_id):
        target = last.parent_id
        return target if isinstance(target, str) else None
    leaf = last.id
    return leaf if isinstance(leaf, str) else None
