"""Projection of a leaf's path into the messages Pi sends to the model.

A pure function of the path: :func:`build_context` takes the entries from the root to
the leaf and returns exactly what Pi 1.6.0's ``buildSessionContext`` returns (its
``buildSessionProjection``): the compaction-aware context entries, each projected with
its latest ``context_edit``. On files that use only Pi 0.73.1's vocabulary this is also
what 0.73.1 returns. It reads an entry's full JSON only when the entry can contribute (a
message in the compaction window, the last settings change), so a 200k-entry path costs
little more than a walk.

What 1.6.0 does, step by step (``dist/core/session-manager.js``):

1. The settings: the last ``thinking_level_change`` and the last model (a
   ``model_change`` or an assistant message) on the whole path.
2. The context entries: the whole path without a compaction. With one, the newest
   compaction (found again on the path by its ``id`` alone), then the entries from its
   ``firstKeptEntryId`` up to it *without system-role messages*, then everything after it.
3. The edits: for every ``context_edit`` among the context entries, by ``targetId``, the
   latest wins. Edits outside the context entries (summarized away, on another branch)
   do nothing; an edit before its target on the path still applies.
4. Each context entry's messages (:func:`entry_messages`: null content normalised, a
   compaction's ``systemMessage`` before its summary), then its edit: ``replacement:
   null`` drops them all; otherwise user, assistant, toolResult and custom messages get
   the replacement's ``content`` (a string becomes one text block for assistant and
   toolResult). Only the compaction that opens the context contributes; an older one in
   the retained range contributes nothing.
"""

from __future__ import annotations

from kurahi._record import FrozenRecord, Record
from kurahi.js.values import MISSING, date_ms, js_truthy
from kurahi.pi.effective import context_entries, id_key
from kurahi.pi.vocab import (
    BRANCH_SUMMARY,
    COMPACTION,
    CONTEXT_EDIT,
    CUSTOM_MESSAGE,
    FIRST_KEPT_ENTRY_ID,
    FROM_ID,
    MESSAGE,
    MODEL_CHANGE,
    TARGET_ID,
    THINKING_LEVEL_CHANGE,
)

# Nothing here needs typing or msgspec at run time, and a process that only projects a file
# would pay ~35 ms to import them (see kurahi._record).
TYPE_CHECKING = False  # mypy reads it as typing.TYPE_CHECKING
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from kurahi.pi.shapes import PathEntry

__all__ = [
    "EDITABLE_ROLES",
    "PathEntry",
    "ProjectedEntry",
    "ProjectionWarning",
    "SessionContext",
    "apply_context_edit",
    "build_context",
    "entry_message",
    "entry_messages",
    "project_from_leaf",
]

EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})
"""Message roles whose content a ``context_edit`` replacement changes."""

_NULL_CONTENT_TO_LIST = frozenset({"user", "assistant", "toolResult"})
_TEXT_BLOCK_ROLES = frozenset({"assistant", "toolResult"})


def __getattr__(name: str) -> Any:
    # PathEntry lives with the other Protocols (kurahi.pi.shapes): typing loads on first use.
    if name == "PathEntry":
        from kurahi.pi import shapes

        return shapes.PathEntry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ProjectionWarning(FrozenRecord):
    """An entry Pi would crash on, read the way Kurahi chose instead.

    Attributes:
        line: the entry's line number.
        message: what Kurahi did.
    """

    __slots__ = ("line", "message")
    line: int
    message: str

    def __init__(self, line: int, message: str) -> None:
        self._init(line=line, message=message)


class ProjectedEntry(Record):
    """One context entry and the messages it contributes (Pi's ``buildSessionProjection`` entries).

    Attributes:
        source: the :class:`PathEntry`.
        messages: what it contributes after its edit (possibly nothing).
        part: ``messages`` (the path has no compaction), ``summary``, ``retained`` or ``later``.
        edit: the ``context_edit`` entry that applies to it, if any.
    """

    __slots__ = ("edit", "messages", "part", "source")

    def __init__(self, source: Any, messages: list[Any], part: str = "messages", edit: Any = None) -> None:
        self.source = source
        self.messages = messages
        self.part = part
        self.edit = edit


class SessionContext(Record):
    """The projected context: what Pi's ``buildSessionContext`` returns, plus the leaf used.

    Attributes:
        leaf_id: the leaf the path ends at (``None``: explicitly empty; ``MISSING``: Pi's undefined).
        messages: messages in order, as Pi emits them (stored message objects and synthesized ones).
        thinking_level: the last ``thinking_level_change`` on the path (default ``"off"``).
        model: ``{provider, modelId}`` from the last model change or assistant message, or ``None``.
        compaction_id: id of the compaction whose summary opens the context entries, if any.
        warnings: entries Pi would crash on, and what Kurahi did instead.
        entries: the context entries and what each contributes, when asked for (``with_entries``).
    """

    __slots__ = ("compaction_id", "entries", "leaf_id", "messages", "model", "thinking_level", "warnings")

    def __init__(
        self,
        leaf_id: Any,
        messages: list[Any],
        thinking_level: Any = "off",
        model: dict[str, Any] | None = None,
        compaction_id: Any = None,
        warnings: list[ProjectionWarning] | None = None,
        entries: list[ProjectedEntry] | None = None,
    ) -> None:
        self.leaf_id = leaf_id
        self.messages = messages
        self.thinking_level = thinking_level
        self.model = model
        self.compaction_id = compaction_id
        self.warnings: list[ProjectionWarning] = [] if warnings is None else warnings
        self.entries = entries

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape ``{leafId, thinkingLevel, model, messages}``.

        Keys whose JavaScript value would be ``undefined`` are left out, as ``JSON.stringify``
        leaves them out.
        """
        out: dict[str, Any] = {"leafId": None if self.leaf_id is MISSING else self.leaf_id}
        if self.thinking_level is not MISSING:
            out["thinkingLevel"] = self.thinking_level
        out["model"] = self.model
        out["messages"] = self.messages
        return out

    def to_json(self) -> bytes:
        """:meth:`to_dict` as Node's ``JSON.stringify`` writes it (UTF-8, compact).

        Messages kept as their stored bytes (:func:`project_from_leaf` with ``copy_stored``)
        are copied as they are: they are already those bytes.
        """
        from kurahi.js.stringify import js_json
        from kurahi.pi.read.native import join_json

        opening, closing = self._json_frame()
        out = join_json(self.messages, opening, closing, encode=js_json)
        assert out is not None  # no descriptor: the bytes are returned
        return out

    def write_json(self, fd: int) -> None:
        """Write :meth:`to_json` and a newline to the descriptor ``fd``, without building it in memory.

        Raises:
            OSError: writing failed (``BrokenPipeError`` for a closed pipe), or a stored
                message could not be read back from its transcript.
        """
        from kurahi.js.stringify import js_json
        from kurahi.pi.read.native import join_json

        opening, closing = self._json_frame()
        join_json(self.messages, opening, closing + b"\n", fd, encode=js_json)

    def _json_frame(self) -> tuple[bytes, bytes]:
        from kurahi.js.stringify import js_json

        head = self.to_dict()
        del head["messages"]
        # The messages after the rest (their key is last), each encoded alone by join_json (a
        # message kept as its stored bytes copied as it is): a 100 MB document is never
        # checked or copied whole.
        return js_json(head)[:-1] + b',"messages":[', b"]}"


def _present(**kv: Any) -> dict[str, Any]:
    return {k: v for k, v in kv.items() if v is not MISSING}


def _normalised(msg: Any) -> Any:
    """A stored message with ``null``/missing content normalised, as 1.6.0 reads it."""
    if type(msg) is dict and msg.get("content") is None:
        role = msg.get("role")
        if type(role) is str:
            if role == "system":
                return {**msg, "content": ""}
            if role in _NULL_CONTENT_TO_LIST:
                return {**msg, "content": []}
    return msg


def _stored_message(entry: PathEntry, warnings: list[ProjectionWarning] | None) -> Any:
    msg = entry.data.get("message", MISSING)
    if msg is MISSING or msg is None:
        if warnings is not None:
            what = "without a message" if msg is MISSING else "whose message is null"
            warnings.append(
                ProjectionWarning(entry.line, f"a message entry {what} (Pi throws reading its role); skipped")
            )
        return MISSING
    return _normalised(msg)


def _custom(d: dict[str, Any]) -> dict[str, Any]:
    content = d.get("content", MISSING)
    return _present(
        role="custom",
        customType=d.get("customType", MISSING),
        content=[] if content is MISSING or content is None else content,
        display=d.get("display", MISSING),
        details=d.get("details", MISSING),
        timestamp=date_ms(d.get("timestamp", MISSING)),
    )


def _branch_summary(d: dict[str, Any]) -> Any:
    summary = d.get("summary", MISSING)
    if summary is MISSING or not js_truthy(summary):
        return MISSING
    return _present(
        role="branchSummary",
        summary=summary,
        fromId=d.get(FROM_ID, MISSING),
        timestamp=date_ms(d.get("timestamp", MISSING)),
    )


def _compaction_summary(d: dict[str, Any]) -> dict[str, Any]:
    return _present(
        role="compactionSummary",
        summary=d.get("summary", MISSING),
        tokensBefore=d.get("tokensBefore", MISSING),
        timestamp=date_ms(d.get("timestamp", MISSING)),
    )


def entry_message(entry: PathEntry, warnings: list[ProjectionWarning] | None = None) -> Any:
    """The one message a ``message``, ``custom_message`` or ``branch_summary`` entry contributes.

    ``MISSING`` for every other entry (a compaction's messages come from
    :func:`entry_messages`), and for a message entry without a message.
    """
    t = entry.type
    if t == MESSAGE:
        return _stored_message(entry, warnings)
    if t == CUSTOM_MESSAGE:
        return _custom(entry.data)
    if t == BRANCH_SUMMARY:
        return _branch_summary(entry.data)
    return MISSING


def entry_messages(entry: PathEntry, warnings: list[ProjectionWarning] | None = None) -> list[Any]:
    """Pi 1.6.0's ``sessionEntryToContextMessages``: what one entry contributes, before edits.

    * ``message``: the stored message; ``null``/missing content becomes ``""`` for a system
      message and ``[]`` for user, assistant and toolResult. A message entry without a
      message (Pi throws reading its role) contributes nothing, with a warning.
    * ``custom_message``: a ``custom`` message, content ``?? []``.
    * ``branch_summary`` with a truthy summary: a ``branchSummary`` message.
    * ``compaction``: its truthy ``systemMessage`` (as stored), then its ``compactionSummary``.
    * anything else (``context_edit``, ``usage``, settings, labels, ...): nothing.
    """
    t = entry.type
    if t == COMPACTION:
        d = entry.data
        summary = _compaction_summary(d)
        system = d.get("systemMessage", MISSING)
        return [system, summary] if system is not MISSING and js_truthy(system) else [summary]
    msg = entry_message(entry, warnings)
    return [] if msg is MISSING else [msg]


def apply_context_edit(
    messages: list[Any], edit: PathEntry, warnings: list[ProjectionWarning] | None = None
) -> list[Any]:
    """Pi 1.6.0's ``projectContextEntry`` for an entry with an edit: its messages after ``edit``.

    ``replacement: null`` drops every message. Otherwise user, assistant, toolResult and
    custom messages take ``replacement.content`` (a string becomes one text block for
    assistant and toolResult; a replacement without ``content`` leaves the message without
    content, as Pi's spread of ``undefined`` does); other roles are kept as they are.

    An edit with no ``replacement`` key makes Pi throw (``replacement.content`` of
    ``undefined``) as soon as it meets a message it would change. Kurahi fails closed
    instead: the target contributes nothing, and a warning names the edit's line.
    """
    replacement = edit.data.get("replacement", MISSING)
    if replacement is None:
        return []
    out: list[Any] = []
    for m in messages:
        role = m.get("role", MISSING) if type(m) is dict else MISSING
        if type(role) is not str or role not in EDITABLE_ROLES:
            out.append(m)
            continue
        if replacement is MISSING:
            if warnings is not None:
                warnings.append(
                    ProjectionWarning(
                        edit.line,
                        "a context_edit without a replacement (Pi throws reading replacement.content); "
                        f"its target {edit.data.get(TARGET_ID, MISSING)!r} is left out of the context",
                    )
                )
            return []
        content = replacement.get("content", MISSING) if type(replacement) is dict else MISSING
        if type(content) is str and role in _TEXT_BLOCK_ROLES:
            content = [{"type": "text", "text": content}]
        new = dict(m)
        if content is MISSING:
            new.pop("content", None)  # {...m, content: undefined}: JSON.stringify leaves it out
        else:
            new["content"] = content
        out.append(new)
    return out


def build_context(path: Sequence[PathEntry], leaf_id: Any = MISSING, *, with_entries: bool = False) -> SessionContext:
    """Project a path (root first) into Pi's session context.

    Args:
        path: the entries from the root to the leaf, every type included.
        leaf_id: the leaf id to report; ``None`` means Pi's explicit empty leaf.
        with_entries: also fill :attr:`SessionContext.entries`.
    """
    return project_from_leaf(reversed(path), leaf_id, with_entries=with_entries)


def project_from_leaf(
    back: Iterable[PathEntry], leaf_id: Any = MISSING, *, with_entries: bool = False, copy_stored: bool = False
) -> SessionContext:
    """Project a path given leaf first, reading only as far towards the root as Pi's result needs.

    Pi's projection depends on the whole path only through the last thinking level, the
    last model, and the last compaction with the entries it keeps. Once all three are
    found walking up from the leaf, nothing nearer the root can change the result: the
    context entries (and so every edit that counts) all lie below that point, so the walk
    stops there. Without a compaction every entry is a context entry and the walk goes to
    the root.

    Args:
        back: the path from the leaf up to the root (consumed lazily).
        leaf_id: the leaf id to report; ``None`` means Pi's explicit empty leaf.
        with_entries: also fill :attr:`SessionContext.entries`.
        copy_stored: where a message entry carries a ``raw_message`` (the stored bytes of a
            message Pi reads unchanged, fit to copy into JSON output, or a reference to them:
            :func:`kurahi.pi.read.native.is_copied`), emit it instead of decoding the message;
            only for a context that is written out as JSON (:meth:`SessionContext.to_json`),
            and only where no edit applies.
    """
    if leaf_id is None:
        return SessionContext(leaf_id=None, messages=[], entries=[] if with_entries else None)
    ctx = SessionContext(leaf_id=leaf_id, messages=[])
    warnings = ctx.warnings
    up: list[PathEntry] = []  # leaf first
    thinking_found = model_found = False
    comp: PathEntry | None = None
    comp_at = -1
    kept_key: Any = MISSING
    kept_settled = False  # the first kept entry found, or known not to be on the path
    has_edits = False
    # Pi finds the compaction again by id alone; a string id is on the path once (every
    # entry but the leaf is reached by a lookup of its id), any other id needs the whole path.
    exact_walk = False
    for entry in back:
        up.append(entry)
        t = entry.type
        if t == MESSAGE:
            if not model_found:
                msg = entry.data.get("message", MISSING)
                if type(msg) is dict and msg.get("role") == "assistant":
                    ctx.model = _present(provider=msg.get("provider", MISSING), modelId=msg.get("model", MISSING))
                    model_found = True
        elif t == CONTEXT_EDIT:
            has_edits = True
        elif t == THINKING_LEVEL_CHANGE:
            if not thinking_found:
                ctx.thinking_level = entry.data.get("thinkingLevel", MISSING)
                thinking_found = True
        elif t == MODEL_CHANGE:
            if not model_found:
                d = entry.data
                ctx.model = _present(provider=d.get("provider", MISSING), modelId=d.get("modelId", MISSING))
                model_found = True
        elif t == COMPACTION and comp is None:
            comp = entry
            comp_at = len(up) - 1
            if type(entry.id) is not str:
                exact_walk = True
            kept_key = id_key(entry.data.get(FIRST_KEPT_ENTRY_ID, MISSING))
            # Pi 1.6.0 writes a compaction that keeps nothing with its own id as the first
            # kept entry; no entry before it can have that id, so there is nothing to look for.
            kept_settled = not exact_walk and kept_key == entry.id
            continue
        if comp is not None and not kept_settled and id_key(entry.id) == kept_key:
            kept_settled = True
        if thinking_found and model_found and kept_settled and not exact_walk:
            break

    path = up[::-1]  # root first (the part that was walked)
    if comp is not None:
        ctx.compaction_id = comp.id
    newest = len(path) - 1 - comp_at if comp is not None else -1
    chosen = context_entries(path, newest_compaction=newest, edits=has_edits)
    chosen_entries = path if chosen.compaction < 0 else [path[i] for i in chosen.positions(len(path))]
    edits = {key: path[i] for key, i in chosen.edits.items()}

    messages = ctx.messages
    projected: list[ProjectedEntry] | None = [] if with_entries else None
    if not edits and projected is None:
        # The common case, kept lean: 200k entries without edits.
        append = messages.append
        for index, e in enumerate(chosen_entries):
            t = e.type
            if t == MESSAGE:
                if copy_stored:
                    raw = getattr(e, "raw_message", None)
                    if raw is not None:
                        append(raw)
                        continue
                msg = _stored_message(e, warnings)
                if msg is not MISSING:
                    append(msg)
            elif t == COMPACTION:
                if index == 0:
                    messages.extend(entry_messages(e, warnings))
            elif t in (CUSTOM_MESSAGE, BRANCH_SUMMARY):
                msg = entry_message(e, warnings)
                if msg is not MISSING:
                    append(msg)
        return ctx
    for index, e in enumerate(chosen_entries):
        edit = None
        if e.type == COMPACTION and index > 0:
            contributed: list[Any] = []
        else:
            edit = edits.get(id_key(e.id)) if edits else None
            raw = getattr(e, "raw_message", None) if copy_stored and edit is None and e.type == MESSAGE else None
            if raw is not None:
                contributed = [raw]
            else:
                contributed = entry_messages(e, warnings)
                if edit is not None:
                    contributed = apply_context_edit(contributed, edit, warnings)
        messages.extend(contributed)
        if projected is not None:
            projected.append(ProjectedEntry(e, contributed, chosen.part(index), edit))
    ctx.entries = projected
    return ctx
