"""A session open for turns: the transcript writer plus its projection, kept current in memory.

Re-projecting the file before every model call would make a long session quadratic. A
:class:`Conversation` projects once when it opens (exactly as Pi would) and then extends
the projection as entries are appended on the leaf, rebuilding it from the in-memory path
only when an entry can change more than the tail (a compaction, a leaf move).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kurahi.context.llm import convert_to_llm
from kurahi.context.project import SessionContext, build_context
from kurahi.context.tokens import estimate_context_tokens, estimate_tokens
from kurahi.errors import UsageError
from kurahi.fs.durable import FsyncPolicy
from kurahi.js.values import MISSING
from kurahi.pi.vocab import MESSAGE
from kurahi.store.base import RecordLog, TranscriptStore
from kurahi.store.session import Session

__all__ = ["Conversation", "PathItem"]


@dataclass(slots=True)
class PathItem:
    """An entry on the current path, as projection and the pairing guard need it."""

    id: Any
    type: Any
    data: dict[str, Any]
    line: int = 0

    @property
    def message(self) -> Any:
        """The entry's message (``None`` for other entry types)."""
        return self.data.get("message") if self.type == MESSAGE else None


class Conversation:
    """One session's transcript and its live context (see the module docstring).

    Attributes:
        session: the writer (holds the transcript's writer lock).
        path: entries from the root to the leaf.
        context: Pi's projection of ``path``.
        llm: ``convert_to_llm(context.messages)``, kept in step.
        paired_upto: how much of ``path`` the pairing guard has already checked.
    """

    def __init__(self, session: Session, path: list[PathItem]) -> None:
        self.session = session
        self.path = path
        self.paired_upto = 0
        self.context: SessionContext = build_context(path, session.leaf_id)
        self.llm: list[Any] = convert_to_llm(self.context.messages)
        self.size_tokens = sum(_estimate(m) for m in self.context.messages)
        """The heuristic size of the live context (sum of Pi's per-message estimates), kept current."""

    @classmethod
    def create(
        cls,
        file: str | os.PathLike[str],
        *,
        fsync: FsyncPolicy | str,
        cwd: str,
        session_id: str | None = None,
        parent_session: str | None = None,
    ) -> Conversation:
        """Start a new transcript (its header is on disk when this returns)."""
        session = Session.create(file, cwd=cwd, session_id_=session_id, fsync=fsync, parent_session=parent_session)
        return cls(session, [])

    @classmethod
    def create_in(
        cls,
        store: TranscriptStore,
        name: str,
        *,
        fsync: FsyncPolicy | str,
        cwd: str,
        session_id: str | None = None,
        parent_session: str | None = None,
    ) -> Conversation:
        """Start transcript ``name`` in ``store`` (its header is durable when this returns)."""
        session = Session.create_in(
            store, name, cwd=cwd, session_id_=session_id, fsync=fsync, parent_session=parent_session
        )
        return cls(session, [])

    @classmethod
    def open(cls, file: str | os.PathLike[str], *, fsync: FsyncPolicy | str) -> Conversation:
        """Open an existing transcript file at its append position (Pi's leaf, or a durable leaf move)."""
        return cls._opened(Session.open(file, fsync=fsync))

    @classmethod
    def open_in(cls, store: TranscriptStore, name: str, *, fsync: FsyncPolicy | str) -> Conversation:
        """Open transcript ``name`` of ``store`` at its append position."""
        return cls._opened(Session.open_in(store, name, fsync=fsync))

    @classmethod
    def _opened(cls, session: Session) -> Conversation:
        try:
            with session.transcript() as t:
                leaf = session.leaf_id
                entries = t.path(leaf) if leaf is not None else []
                path = [PathItem(e.id, e.type, e.data, e.line) for e in entries]
            return cls(session, path)
        except BaseException:
            session.close()
            raise

    # -- state ----------------------------------------------------------------------------

    @property
    def file(self) -> Path:
        """Where the transcript lives (the file, for the file backend)."""
        return self.session.path

    @property
    def name(self) -> str:
        """The transcript's name in its store."""
        return self.session.name

    @property
    def session_id(self) -> str:
        """The header's id."""
        return self.session.session_id

    @property
    def leaf_id(self) -> str | None:
        """The current leaf."""
        return self.session.leaf_id

    def context_tokens(self) -> int:
        """Pi's ``estimateContextTokens`` of the live context."""
        return int(estimate_context_tokens(self.context.messages).tokens)

    # -- appending (each returns once the entry is written under the fsync policy) ---------

    def append_message(
        self,
        message: Mapping[str, Any],
        *,
        extra: Mapping[str, Any] | None = None,
        records: Sequence[tuple[RecordLog, Mapping[str, Any]]] = (),
    ) -> str:
        """Append a message on the leaf and extend the projection (``records``: see :meth:`Session.append_message`)."""
        eid = self.session.append_message(message, extra=extra, records=records)
        data: dict[str, Any] = {"type": "message", "id": eid, "parentId": self._parent(), "message": dict(message)}
        if extra:
            data.update(extra)
        self.path.append(PathItem(eid, "message", data))
        msg = data["message"]
        self.context.messages.append(msg)
        self.size_tokens += _estimate(msg)
        self.llm.extend(convert_to_llm([msg]))
        if msg.get("role") == "assistant":
            self.context.model = {"provider": msg.get("provider"), "modelId": msg.get("model")}
        self.context.leaf_id = eid
        return eid

    def append_model_change(self, provider: str, model_id: str) -> str:
        """Record a model swap on the path."""
        eid = self.session.append_model_change(provider, model_id)
        data = {"type": "model_change", "id": eid, "provider": provider, "modelId": model_id}
        self.path.append(PathItem(eid, "model_change", data))
        self.context.model = {"provider": provider, "modelId": model_id}
        self.context.leaf_id = eid
        return eid

    def append_compaction(
        self, summary: str, first_kept_entry_id: str, tokens_before: int, details: Any, *, system_message: Any = MISSING
    ) -> str:
        """Append a compaction and re-project (the summary replaces what lies before the kept entry).

        ``system_message`` is :meth:`kurahi.store.session.Session.append_compaction`'s.
        """
        eid = self.session.append_compaction(
            summary, first_kept_entry_id, tokens_before, details=details, system_message=system_message
        )
        with self.session.transcript() as t:
            e = t.entry(eid)
            self.path.append(PathItem(e.id, e.type, e.data, e.line))
        self._reproject()
        return eid

    def reload(self) -> None:
        """Re-read the path from the file and re-project (after a leaf move or a replay)."""
        with self.session.transcript() as t:
            leaf = self.session.leaf_id
            entries = t.path(leaf) if leaf is not None else []
            self.path = [PathItem(e.id, e.type, e.data, e.line) for e in entries]
        self.paired_upto = min(self.paired_upto, len(self.path))
        self._reproject()

    def _reproject(self) -> None:
        self.context = build_context(self.path, self.session.leaf_id)
        self.llm = convert_to_llm(self.context.messages)
        self.size_tokens = sum(_estimate(m) for m in self.context.messages)

    def _parent(self) -> Any:
        return self.path[-1].id if self.path else None

    def sync(self) -> None:
        """Force everything appended to stable storage (policies ``turn`` and ``always``)."""
        self.session.sync()

    def close(self) -> None:
        """Sync, close, release the writer lock."""
        self.session.close()


def _estimate(message: Any) -> int:
    try:
        return int(estimate_tokens(message))
    except UsageError:
        return 0  # a message Pi could not size either; projection already warned about it
