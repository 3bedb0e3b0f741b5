"""The rows a compaction kept verbatim, rebuilt from the request records of the same file (``preserved-missing``).

After ``/compact`` Claude Code 2.1.332 sends the summary and then, verbatim, the rows the
boundary's ``compactMetadata.preservedMessages.uuids`` names (the last reply and the rows
after it). When one of them is gone from the file, ``--resume`` sends the summary alone: its
relink of the preserved tail needs *every* listed uuid in the file (measured: the reply
appended without its ``stop_hook_summary`` brings nothing back), and it takes the listed rows
in the list's order whatever their own ``parentUuid`` (measured: ``null``, the summary or the
original parent all work), with the rows that hung under the summary moved under the last.

The words survive in the same file: for every request it sends, the CLI writes an
``api-request`` row (``base``: an earlier request's id, ``keep``: how many of its messages
it keeps, ``tail``: hashes of the messages after them) and an ``api-request-blob`` row
(``{hash, message}``) for each wire message the file does not hold otherwise; after a
compaction no row stands for the wire messages any more, so the first request after it is
written out whole: ``[summary, ..., the preserved tail, the next turn's user message, ...]``.
:func:`rebuild` reads that request back and writes one row per listed uuid that the file lacks:

- **Which request**: the first ``api-request`` after the compaction's summary (and before any
  later compaction) whose first message is that summary, word for word, every message of it
  found in the file.
- **Where the kept tail ends**: at the first user message holding the text of the row that hung
  under the summary (the command caveat, or the next prompt); before that text the message may
  hold only the CLI's ``<system-reminder>`` texts (else a kept user message was merged into the
  next turn's and the two cannot be told apart). Between the summary and there, a ``system``
  entry with content (an attachment or a hook's output, which the CLI renders itself) cannot be
  written back as a row: refused; an empty one (the CLI's own, sent after every summary) is left.
- **Which row said what** (2.1.332 writes one row per content block of a reply, one per user
  message): with as many parts (an assistant message's blocks, user messages) as missing rows
  (after the rows of the list still in the file, which must say the same parts in their place),
  one each, in order; with none, the missing rows said nothing; with fewer parts than missing
  rows, only when the whole list is gone and the parts are the blocks of one assistant message
  (the shape 2.1.332 writes: the last reply, then rows that send nothing, such as its
  ``stop_hook_summary``): the blocks go to the list's first uuids, in order. A request with no
  part there was sent when the rows were already gone (the CLI splices none of a tail with one
  row missing): refused. Anything else is ambiguous and refused with the reason.

A rebuilt row carries its uuid from the list, ``parentUuid`` the list's previous uuid (the
first: the summary), the session's ``sessionId``/``cwd``/``version`` and the boundary's time;
an assistant row gets a ``message.id`` of its own (rows sharing one are sent as one message,
even across branches), and a row that said nothing is a ``system``/``informational`` row saying
Kurahi put it back (the CLI sends no ``system`` row to the model; measured). This module reads
only.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from kurahi.runtimes.claude.graph import Graph
from kurahi.runtimes.claude.layout import ASSISTANT, USER

__all__ = ["API_REQUEST", "API_REQUEST_BLOB", "SILENT_SUBTYPE", "Rebuilt", "rebuild", "wire_messages"]

API_REQUEST = "api-request"
API_REQUEST_BLOB = "api-request-blob"
SILENT_SUBTYPE = "informational"
"""The ``system`` subtype of a rebuilt row that said nothing (shown in the transcript, never sent)."""
SILENT_TEXT = (
    "Kurahi put this row of the compaction's kept tail back: the file had lost it, and the request Claude Code "
    "sent after the compaction shows it said nothing"
)
_REMINDER = "<system-reminder>"
_KEPT_FIELDS = ("userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch", "slug")
"""Fields a rebuilt row takes from the compaction's boundary row (the session's own)."""


@dataclass
class Rebuilt:
    """The rows that put a compaction's lost tail back, and where their words come from."""

    rows: list[dict[str, Any]]
    """One per listed uuid the file lacks, in the list's order (no repair mark yet)."""
    line: int
    """The line of the ``api-request`` row the words were read from."""
    missing: list[str]
    said: list[dict[str, Any]] = field(default_factory=list)
    """The messages the rebuilt rows send (``role``, ``content``), in order."""


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _texts(content: Any) -> list[str]:
    return [b["text"].strip() for b in _blocks(content) if isinstance(b, dict) and isinstance(b.get("text"), str)]


def _reminder(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and block["text"].lstrip().startswith(_REMINDER)
    )


def wire_messages(g: Graph) -> dict[int, list[dict[str, Any] | None]]:
    """The wire ``messages`` of every ``api-request`` row of the file, by row index.

    A message whose payload the file does not hold (its hash names no ``api-request-blob`` row:
    the CLI left it out because a conversation row of the file holds it) is ``None``; so are
    the kept messages of a ``base`` the file does not hold.
    """
    parsed = g.parsed
    blobs: dict[str, dict[str, Any]] = {}
    requests: list[int] = []
    for i, r in enumerate(parsed.rows):
        if r.type == API_REQUEST_BLOB:
            obj = parsed.value(i)
            h, message = obj.get("hash"), obj.get("message")
            if isinstance(h, str) and isinstance(message, dict):
                blobs[h] = message
        elif r.type == API_REQUEST:
            requests.append(i)
    by_id: dict[str, list[dict[str, Any] | None]] = {}
    out: dict[int, list[dict[str, Any] | None]] = {}
    for i in requests:
        obj = parsed.value(i)
        keep, tail, base = obj.get("keep"), obj.get("tail"), obj.get("base")
        keep = keep if isinstance(keep, int) and not isinstance(keep, bool) and keep >= 0 else 0
        kept: list[dict[str, Any] | None]
        if keep == 0:
            kept = []
        elif isinstance(base, str) and base in by_id and len(by_id[base]) >= keep:
            kept = by_id[base][:keep]
        else:
            kept = [None] * keep
        messages = kept + [
            blobs.get(h) if isinstance(h, str) else None for h in (tail if isinstance(tail, list) else [])
        ]
        out[i] = messages
        rid = obj.get("id")
        if isinstance(rid, str):
            by_id[rid] = messages
    return out


def _content(g: Graph, i: int) -> Any:
    message = g.parsed.get(i, "message")
    return message.get("content") if isinstance(message, dict) else None


def _parts_of_row(g: Graph, i: int) -> list[tuple[str, Any]]:
    """What a listed row still in the file sends, in the parts :func:`rebuild` matches by."""
    r = g.rows[i]
    content = _content(g, i)
    if r.type == ASSISTANT:
        return [(ASSISTANT, b) for b in _blocks(content)]
    if r.type == USER and content is not None:
        return [(USER, content)]
    return []


def _opens_with(messages: list[dict[str, Any] | None], text: list[str]) -> bool:
    """Whether a request's first message is a user message of exactly ``text``."""
    first = messages[0] if messages else None
    return first is not None and first.get("role") == USER and _texts(first.get("content")) == text


def _key(part: tuple[str, Any]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A part's role and its blocks' texts and tool ids (reminders left out), to compare by."""
    role, value = part
    blocks = [value] if role == ASSISTANT else _blocks(value)
    out: list[tuple[str, str]] = []
    for b in blocks:
        if not isinstance(b, dict) or _reminder(b):
            continue
        kind = str(b.get("type"))
        if kind == "text":
            out.append((kind, str(b.get("text", "")).strip()))
        elif kind == "tool_use":
            out.append((kind, str(b.get("id"))))
        elif kind == "tool_result":
            out.append((kind, str(b.get("tool_use_id"))))
        else:
            out.append((kind, ""))
    return role, tuple(out)


def rebuild(g: Graph, boundary: int, seed: str) -> Rebuilt | str:
    """The rows that put compaction ``boundary``'s lost kept rows back, or why they cannot be rebuilt.

    ``seed`` (the loss's id) makes the fresh ``message.id`` of a rebuilt reply (the same files
    give the same rows).
    """
    parsed = g.parsed
    meta = parsed.get(boundary, "compactMetadata")
    kept = meta.get("preservedMessages") if isinstance(meta, dict) else None
    listed = kept.get("uuids") if isinstance(kept, dict) else None
    if not isinstance(listed, list) or not all(isinstance(u, str) for u in listed):
        return (
            "the compaction names the rows it kept only by the two ends of their segment (no preservedMessages list), "
            "so the rows between cannot be named"
        )
    missing = [u for u in listed if u not in g.by_uuid]
    if not missing:
        return "no row the compaction kept is missing"
    _, summary = g.preserved(boundary)
    if summary is None:
        return "no summary row follows the compaction"
    anchor = kept.get("anchorUuid") if isinstance(kept, dict) else None
    anchor = anchor if isinstance(anchor, str) else g.rows[summary].uuid
    end = next((k for k in g.boundaries if k > boundary), len(g.rows))
    summary_text = _texts(_content(g, summary))
    under = next(
        (
            k
            for k in range(summary + 1, end)
            if g.rows[k].type == USER
            and g.rows[k].parent_uuid in (anchor, g.rows[summary].uuid)
            and not g.rows[k].is_sidechain
            and g.mapped(k)
            and _texts(_content(g, k))
        ),
        None,
    )
    wire = wire_messages(g)
    chosen = [i for i in sorted(wire) if summary < i < end and _opens_with(wire[i], summary_text)]
    if not chosen:
        return (
            "no request after the compaction is recorded in the file with its messages (api-request and "
            "api-request-blob rows), so the words of the rows it kept are nowhere else"
        )
    at = chosen[0]
    messages = wire[at]
    line = parsed.lines[at]
    if under is None:
        return (
            "no row hangs under the compaction's summary, so where its kept rows end in the request on "
            f"line {line} cannot be told"
        )
    anchor_text = _texts(_content(g, under))[0]
    stop = None
    for k in range(1, len(messages)):
        m = messages[k]
        if m is None:
            return f"the request on line {line} names a message the file holds no payload for"
        if m.get("role") != USER:
            continue
        blocks = _blocks(m.get("content"))
        hit = next(
            (n for n, b in enumerate(blocks) if isinstance(b, dict) and str(b.get("text", "")).strip() == anchor_text),
            None,
        )
        if hit is None:
            continue
        if not all(_reminder(b) for b in blocks[:hit]):
            return (
                f"in the request on line {line} a kept user message is merged into the next turn's, "
                "so where the kept rows end cannot be told"
            )
        stop = k
        break
    if stop is None:
        return (
            f"the request on line {line} does not hold the turn that followed the compaction, so the kept rows "
            "cannot be told apart"
        )
    parts: list[tuple[str, Any, int]] = []
    for k in range(1, stop):
        m = messages[k]
        assert m is not None
        role, content = m.get("role"), m.get("content")
        if role == "system":
            if content in (None, "", []):
                continue
            return (
                f"the request on line {line} sends a system entry among the kept rows (an attachment or a hook's "
                "output, which Claude Code renders itself), which cannot be written back as a row"
            )
        if role == ASSISTANT:
            parts.extend((ASSISTANT, b, k) for b in _blocks(content))
        elif role == USER:
            kept_blocks = [b for b in _blocks(content) if not _reminder(b)]
            if kept_blocks:
                parts.append((USER, content if isinstance(content, str) else kept_blocks, k))
        else:
            return f"the request on line {line} sends a message of role {role!r} among the kept rows"
    if not parts:
        return (
            f"the request on line {line} holds no words between the summary and the next turn: it was sent when "
            "the kept rows were already gone (or they said nothing)"
        )
    assigned = _assign(g, listed, missing, parts)
    if isinstance(assigned, str):
        return f"{assigned} (the request on line {line})"
    return _rows(g, boundary, listed, anchor, assigned, seed, line, missing)


def _assign(
    g: Graph, listed: list[str], missing: list[str], parts: list[tuple[str, Any, int]]
) -> dict[str, list[tuple[str, Any, int]]] | str:
    """Which parts each missing listed row said (see the module docstring), or why it cannot be told."""
    gone = set(missing)
    present = {u: _parts_of_row(g, g.by_uuid[u]) for u in listed if u not in gone}
    need = len(parts) - sum(len(p) for p in present.values())
    words = f"{len(missing)} of the {len(listed)} rows the compaction kept are gone and the request after it holds"
    if need < 0:
        return f"{words} fewer parts than the kept rows still in the file say"
    if need == 0 or need == len(missing):
        out: dict[str, list[tuple[str, Any, int]]] = {}
        at = 0
        for u in listed:
            if u in gone:
                out[u] = parts[at : at + (1 if need else 0)]
                at += len(out[u])
                continue
            mine = present[u]
            if len(mine) > len(parts) - at or [_key(a) for a in mine] != [
                _key((b[0], b[1])) for b in parts[at : at + len(mine)]
            ]:
                return f"{words} parts that the kept rows still in the file do not say in their place"
            at += len(mine)
        return out
    one_reply = len({k for _, _, k in parts}) == 1 and all(role == ASSISTANT for role, _, _ in parts)
    if len(missing) == len(listed) and one_reply and 0 < need < len(missing):
        return {u: parts[n : n + 1] for n, u in enumerate(listed)}
    return (
        f"{words} {len(parts)} part(s) (blocks of replies, user messages) for them: which row said which cannot be told"
    )


def _rows(
    g: Graph,
    boundary: int,
    listed: list[str],
    anchor: str | None,
    assigned: dict[str, list[tuple[str, Any, int]]],
    seed: str,
    line: int,
    missing: list[str],
) -> Rebuilt:
    parsed = g.parsed
    b = parsed.value(boundary)
    common = {k: b[k] for k in _KEPT_FIELDS if k in b}
    when = b.get("timestamp")
    ids: dict[int, str] = {}
    rows: list[dict[str, Any]] = []
    said: list[dict[str, Any]] = []
    parent = anchor
    last = -1
    for u in listed:
        if u not in assigned:
            parent = u
            continue
        mine = assigned[u]
        row: dict[str, Any] = {"parentUuid": parent, "isSidechain": False}
        if not mine:
            row.update(type="system", subtype=SILENT_SUBTYPE, content=SILENT_TEXT, level="info", isMeta=False)
        elif mine[0][0] == ASSISTANT:
            k = mine[0][2]
            if k not in ids:
                ids[k] = "msg_kurahi_" + hashlib.sha256(f"{seed}\n{u}".encode()).hexdigest()[:24]
            content = [p[1] for p in mine]
            row.update(
                type="assistant", message={"id": ids[k], "type": "message", "role": "assistant", "content": content}
            )
            if said and said[-1]["role"] == ASSISTANT and last == k:
                said[-1]["content"] = [*said[-1]["content"], *content]  # one reply, one row per block
            else:
                said.append({"role": ASSISTANT, "content": content})
            last = k
        else:
            row.update(type="user", message={"role": "user", "content": mine[0][1]})
            said.append({"role": USER, "content": mine[0][1]})
            last = -1
        row.update(uuid=u, timestamp=when, **common)
        rows.append(row)
        parent = u
    return Rebuilt(rows, line, missing, said)
