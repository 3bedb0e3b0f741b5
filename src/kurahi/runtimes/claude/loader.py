"""What ``claude --resume`` sends: the rows its walk reaches, turned into messages.

:func:`resume_view` runs the model of :mod:`kurahi.runtimes.claude.graph` (the leaf, the walk
with its bridges, the splice after a compaction) and turns the rows into the messages the next
request carries before the new prompt:

- a ``user`` row is a user message (a prompt, a compaction's summary, tool results);
- ``assistant`` rows sharing ``message.id`` are one assistant message, their blocks in file
  order, even a row of it on another branch (``merges_message_id``);
- an ``attachment`` row is a ``system`` entry (environment, tool and agent listings: the CLI
  renders its text itself, so the model keeps only its kind);
- a ``system`` row of subtype ``local_command`` (a slash command's output, ``/clear``'s
  ``<local-command-stdout>``) is a user message of its text (measured on 2.1.332 after a
  ``/clear``); other ``system`` rows and ``progress`` rows send nothing;
- a tool result whose tool call is not in what was sent is left out (``drops_orphan_results``);
- a tool call whose result the next message lacks (the result row on another branch: #60523's
  split pair) is followed by a stand-in error result (:data:`MISSING_RESULT_TEXT`, measured);
- a prompt left without its reply (a torn final reply) is followed by the release's stand-in
  reply (``torn_reply_text``), marked ``synthetic``.

:func:`comparable` flattens messages (the model's or a real request's ``messages``) to what a
test compares: texts and tool ids in order, by role, leaving out the CLI's own reminders,
thinking and system entries, and texts are compared without the whitespace around them (the
CLI joins neighbouring user texts with a newline).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from kurahi.runtimes.claude.graph import Graph, Walk
from kurahi.runtimes.claude.layout import ASSISTANT, ATTACHMENT, SYSTEM, USER
from kurahi.runtimes.claude.rows import ParsedRows
from kurahi.runtimes.claude.versions import Release, newest

__all__ = ["MISSING_RESULT_TEXT", "ResumeView", "SentMessage", "comparable", "messages_of", "resume_view", "view_of"]

_REMINDER = "<system-reminder>"
_LOCAL_COMMAND = "local_command"
"""The ``subtype`` of the ``system`` row holding a slash command's output: sent as user text."""


class SentMessage(msgspec.Struct, kw_only=True):
    """One message of what ``--resume`` sends."""

    role: str
    """``user``, ``assistant`` or ``system`` (an attachment)."""
    content: Any
    """As the Messages API carries it: a string or a list of blocks (``None`` for an attachment)."""
    rows: list[str]
    """The uuids of the rows it was made of."""
    message_id: str | None = None
    """An assistant message's ``message.id``."""
    attachment: str | None = None
    """An attachment's kind."""
    synthetic: bool = False
    """Made by the loader, not read from a row (the stand-in for a torn reply)."""

    def to_dict(self) -> dict[str, Any]:
        """The message as the Messages API carries it (``role``, ``content``)."""
        return {"role": self.role, "content": self.content}


class ResumeView(msgspec.Struct, kw_only=True):
    """What the next ``claude --resume`` of one session sends, by the model of its loader."""

    runtime: str
    """The release whose loader was modelled."""
    leaf: str | None
    """The uuid of the row the walk started from (``None``: no conversation)."""
    leaf_from: str
    """``last-prompt`` or ``newest``."""
    rows: list[str]
    """Every row the walk reached, in the order sent (root first), uuids."""
    messages: list[SentMessage]
    bridged: list[str]
    """Rows whose missing parent the loader bridged (nothing lost)."""
    spliced: list[str]
    """Rows put back after a compaction's summary."""
    missing_preserved: list[str]
    """Uuids a compaction named as preserved that the file lacks."""
    dropped_lines: list[int]
    """Lines that did not parse (their rows are not sent)."""
    ended: str
    """How the walk ended: ``root`` or ``cycle``."""

    def message_dicts(self) -> list[dict[str, Any]]:
        """The messages as the Messages API carries them."""
        return [m.to_dict() for m in self.messages]


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _tool_ids(blocks: Iterable[Any]) -> set[str]:
    return {
        b["id"] for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)
    }


def _is_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _assistant_rows(parsed: ParsedRows, release: Release) -> dict[str, list[int]]:
    """Every assistant row of the map by its ``message.id`` (file order), when the release merges them."""
    out: dict[str, list[int]] = {}
    if not release.merges_message_id:
        return out
    seen: dict[str, int] = {}
    for i, row in enumerate(parsed.rows):
        if row.type == ASSISTANT and row.uuid is not None:
            seen[row.uuid] = i  # a later row with the uuid wins
    for i in sorted(seen.values()):
        message = parsed.get(i, "message")
        mid = message.get("id") if isinstance(message, dict) else None
        if isinstance(mid, str):
            out.setdefault(mid, []).append(i)
    return out


def messages_of(parsed: ParsedRows, chain: Sequence[int], release: Release) -> list[SentMessage]:
    """The messages rows ``chain`` (indices, in order) send (see the module docstring)."""
    out: list[SentMessage] = []
    called: set[str] = set()
    by_id = _assistant_rows(parsed, release)
    sent_ids: set[str] = set()
    for i in chain:
        row = parsed.rows[i]
        kind = row.type
        if kind == SYSTEM and row.subtype == _LOCAL_COMMAND:
            said = parsed.get(i, "content")
            if isinstance(said, str) and said:
                out.append(SentMessage(role="user", content=said, rows=[row.uuid or ""]))
            continue
        if kind not in (USER, ASSISTANT, ATTACHMENT):
            continue
        obj = parsed.value(i)
        uuid = row.uuid or ""
        if kind == ATTACHMENT:
            att = obj.get("attachment")
            what = att.get("type") if isinstance(att, dict) else None
            out.append(
                SentMessage(
                    role="system", content=None, rows=[uuid], attachment=what if isinstance(what, str) else None
                )
            )
            continue
        message = obj.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if kind == USER:
            if isinstance(content, list) and release.drops_orphan_results:
                content = [b for b in content if not _is_result(b) or b.get("tool_use_id") in called]
                if not content:
                    continue
            if content is None:
                continue
            out.append(SentMessage(role="user", content=content, rows=[uuid]))
            continue
        mid = message.get("id") if isinstance(message.get("id"), str) else None
        if mid is not None and mid in sent_ids:
            continue  # already sent whole, with the first of its rows on the path
        rows = by_id.get(mid, [i]) if mid is not None else [i]
        blocks: list[Any] = []
        for k in rows if i in rows else [i]:
            other = parsed.get(k, "message") if k != i else message
            blocks.extend(_blocks(other.get("content") if isinstance(other, dict) else None))
        if mid is not None:
            sent_ids.add(mid)
        called |= _tool_ids(blocks)
        uuids = [parsed.rows[k].uuid or "" for k in (rows if i in rows else [i])]
        out.append(SentMessage(role="assistant", content=blocks, rows=uuids, message_id=mid))
    out = _fill_missing_results(out)
    if release.torn_reply_text is not None:
        said = [m for m in out if m.role != "system"]
        if said and said[-1].role == "user":
            text = release.torn_reply_text
            out.append(SentMessage(role="assistant", content=[{"type": "text", "text": text}], rows=[], synthetic=True))
    return out


MISSING_RESULT_TEXT = "[Tool result missing due to internal error]"
"""What 2.1.332 sends for a tool call whose result is not on the path (measured: a result row moved
to another branch, #60523's split pair), as an ``is_error`` tool result right after the call."""


def _results_in(message: SentMessage | None) -> set[str]:
    if message is None or message.role != "user" or not isinstance(message.content, list):
        return set()
    return {str(b.get("tool_use_id")) for b in message.content if _is_result(b)}


def _fill_missing_results(out: list[SentMessage]) -> list[SentMessage]:
    """A stand-in error result after each tool call whose result the next message lacks (a later message exists)."""
    said = [k for k, m in enumerate(out) if m.role != "system"]
    filled: list[SentMessage] = []
    after: dict[int, int | None] = {k: said[n + 1] if n + 1 < len(said) else None for n, k in enumerate(said)}
    for k, m in enumerate(out):
        filled.append(m)
        if m.role != "assistant" or k not in after or after[k] is None:
            continue
        nxt = after[k]
        have = _results_in(out[nxt] if nxt is not None else None)
        calls = [
            b["id"]
            for b in _blocks(m.content)
            if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)
        ]
        lacking = [c for c in calls if c not in have]
        if lacking:
            blocks = [
                {"type": "tool_result", "tool_use_id": c, "content": MISSING_RESULT_TEXT, "is_error": True}
                for c in lacking
            ]
            filled.append(SentMessage(role="user", content=blocks, rows=[], synthetic=True))
    return filled


def resume_view(parsed: ParsedRows, release: Release | None = None) -> ResumeView:
    """What the next ``claude --resume`` of a session sends, by the model of ``release``'s loader."""
    rel = release or newest()
    graph = Graph(parsed, rel)
    leaf, why = graph.leaf()
    walk = graph.walk(leaf) if leaf is not None else Walk([], "root")
    return view_of(graph, walk, leaf, why)


def view_of(graph: Graph, walk: Walk, leaf: int | None, why: str) -> ResumeView:
    """A walk's :class:`ResumeView`."""
    parsed, rel = graph.parsed, graph.release

    def uuid(i: int) -> str:
        return graph.rows[i].uuid or ""

    return ResumeView(
        runtime=rel.view,
        leaf=uuid(leaf) if leaf is not None else None,
        leaf_from=why,
        rows=[uuid(i) for i in walk.chain],
        messages=messages_of(parsed, walk.chain, rel),
        bridged=[uuid(i) for i in walk.bridged],
        spliced=[uuid(i) for i in walk.spliced],
        missing_preserved=walk.missing_preserved,
        dropped_lines=[line for line, _ in parsed.invalid],
        ended=walk.ended,
    )


def comparable(messages: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """``(role, what, text or tool id)`` of every text, tool call and tool result, in order.

    Works on the model's messages (:meth:`ResumeView.message_dicts`) and on a real request's
    ``messages`` alike: ``system`` entries, thinking, images and the CLI's own
    ``<system-reminder>`` texts are left out, and how blocks are grouped into messages does not
    matter (the CLI merges neighbouring user messages).
    """
    out: list[tuple[str, str, str]] = []
    for m in messages:
        role = m.get("role")
        if role not in ("user", "assistant"):
            continue
        for block in _blocks(m.get("content")):
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                text = block["text"].strip()
                if text and not text.startswith(_REMINDER):
                    out.append((role, "text", text))
            elif kind == "tool_use":
                out.append((role, "tool_use", str(block.get("id"))))
            elif kind == "tool_result":
                out.append((role, "tool_result", str(block.get("tool_use_id"))))
    return out
