"""What ``kurahi rescue apply`` appends to a Claude Code session to mend one loss, and the check that it did.

Claude Code appends to its session files and, measured on 2.1.332, a row appended later with
the uuid of an earlier row replaces it when ``--resume`` rebuilds the session, parent and
content alike (docs/claude-code-peer.md, 6a/6c). So every parent-link loss is mended by
*appending* the broken row again as Claude Code's own writer would have linked it: the same
row, the same uuid, its ``parentUuid`` set to the repair the finder named (the conversation row
written just before it on the main chain). Nothing is rewritten; the earlier row stays in the
file, shadowed. The copy carries one field Claude Code does not write, :data:`REPAIR_MARK`
(the loss's id), so the listing can tell Kurahi's own repair row from a uuid claimed twice by
accident; 2.1.332 ignores it (the peer test holds it to the real CLI).

Per kind: ``null-parent``, ``progress-parent``, ``sidechain-parent``, ``wrong-parent``,
``compact-null`` (the broken prompt re-linked; a compaction's own boundary and summary are
never touched: the finder does not name them) and ``sibling-fork`` (the
``stop_hook_summary`` row re-linked under the reply it follows). ``continue-elsewhere``
(:func:`mend_elsewhere`): the rows the earlier session's ``--resume`` walks are appended to the
new session's file, in order, and the new session's first row again under the earlier leaf, so
``claude --continue`` in the new folder sends the earlier history, then the new turns.
``preserved-missing`` (:func:`mend_preserved`): the rows the compaction's
``preservedMessages.uuids`` names and the file lacks are rebuilt, under their own uuids, from
the request the CLI sent after the compaction, which the file keeps (its ``api-request`` and
``api-request-blob`` rows; :mod:`kurahi.runtimes.claude.preserved` says how they are matched,
and refuses what is ambiguous or not recorded, with the reason); appended at the end of the
file, they are spliced back after the summary by ``--resume``, which needs every listed uuid
and takes them in the list's order (measured). A rebuilt reply gets a ``message.id`` of its
own. Nothing was in the file before them, so a rollback after Claude Code appended more cannot
take them back by appending (the session-append target refuses it; a rollback of the file as
the apply left it cuts them off).

This module computes and checks; it writes nothing (the lifecycle room writes the bytes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kurahi.runtimes.claude.breaks import PRESERVED_MISSING, Break
from kurahi.runtimes.claude.graph import Graph
from kurahi.runtimes.claude.loader import comparable, messages_of, resume_view
from kurahi.runtimes.claude.preserved import Rebuilt, rebuild
from kurahi.runtimes.claude.rows import ParsedRows, parse_rows
from kurahi.runtimes.claude.versions import Release, newest

__all__ = [
    "REPAIR_MARK",
    "Mend",
    "Verified",
    "is_repair_row",
    "mend",
    "mend_elsewhere",
    "mend_preserved",
    "rebuilt",
    "verify",
]

REPAIR_MARK = "kurahiRepair"
"""The field Kurahi adds to each row it appends (the loss's id); Claude Code writes no such field."""


def rebuilt(parsed: ParsedRows, b: Break, loss_id: str, release: Release | None = None) -> Rebuilt | str:
    """A ``preserved-missing`` break's rows rebuilt from the file's request records, or why they cannot be.

    The reason is what the listing (``apply_refused``) and ``rescue apply`` say.
    """
    found = rebuild(Graph(parsed, release or newest()), b.row, loss_id)
    if isinstance(found, str):
        return f"the rows the compaction kept cannot be rebuilt from this file: {found}; Kurahi makes nothing up"
    return found


def is_repair_row(value: Any) -> bool:
    """Whether a row's JSON object is one Kurahi appended (it carries :data:`REPAIR_MARK`)."""
    return isinstance(value, dict) and isinstance(value.get(REPAIR_MARK), str)


@dataclass
class Mend:
    """The rows to append for one loss, and what must come back."""

    rows: list[dict[str, Any]]
    """The rows to append, in order (each a copy of a row of the file, re-linked, or rebuilt: ``preserved-missing``)."""
    before: list[dict[str, Any]]
    """The same rows as the file holds them now (what a rollback appends again when the file grew)."""
    lost_uuids: list[str]
    """The rows the break took out of the view (they must be on the walk again)."""
    lost_items: list[tuple[str, str, str]]
    """Their texts, tool calls and tool results (:func:`~.loader.comparable`), in file order."""


@dataclass
class Verified:
    """What the model of the loader sends after the repair."""

    ok: bool
    problems: list[str] = field(default_factory=list)
    messages: int = 0


def mend(parsed: ParsedRows, b: Break, loss_id: str, release: Release | None = None) -> Mend:
    """The rows that mend break ``b`` by appending (see the module docstring).

    Raises:
        ValueError: ``b`` has no repair (no row to link it to), or its rows cannot be rebuilt.
    """
    rel = release or newest()
    if b.kind == PRESERVED_MISSING:
        return mend_preserved(parsed, b, loss_id, rel)
    if b.repair is None:
        raise ValueError(f"{b.kind}: no row to link it to")
    row = parsed.value(b.row)
    parent = parsed.rows[b.repair].uuid
    fixed = json.loads(json.dumps(row))
    fixed["parentUuid"] = parent
    fixed.pop(REPAIR_MARK, None)
    fixed[REPAIR_MARK] = loss_id
    lost_uuids = [parsed.rows[i].uuid or "" for i in b.lost if parsed.rows[i].uuid]
    lost_items = comparable(m.to_dict() for m in messages_of(parsed, b.lost, rel) if not m.synthetic)
    return Mend([fixed], [row], lost_uuids, lost_items)


def mend_preserved(parsed: ParsedRows, b: Break, loss_id: str, release: Release | None = None) -> Mend:
    """The rebuilt kept rows of a compaction that mend ``preserved-missing`` break ``b`` (see the module docstring).

    Raises:
        ValueError: they cannot be rebuilt (the reason).
    """
    found = rebuilt(parsed, b, loss_id, release)
    if isinstance(found, str):
        raise ValueError(found)
    rows = [{**r, REPAIR_MARK: loss_id} for r in found.rows]
    rel = release or newest()
    # The kept rows still in the file were not sent either (the loader splices none of a tail with one missing).
    still = [parsed.rows[i].uuid or "" for i in b.lost if parsed.rows[i].uuid]
    items = comparable(m.to_dict() for m in messages_of(parsed, b.lost, rel) if not m.synthetic)
    return Mend(rows, [], [*still, *found.missing], [*items, *comparable(found.said)])


def mend_elsewhere(
    earlier: ParsedRows, new: ParsedRows, first_uuid: str, loss_id: str, release: Release | None = None
) -> Mend:
    """The rows that make the new session ``new`` carry ``earlier``'s history (``continue-elsewhere``).

    Raises:
        ValueError: the earlier session sends nothing, or the new one has no row ``first_uuid``.
    """
    rel = release or newest()
    g = Graph(earlier, rel)
    leaf, _ = g.leaf()
    if leaf is None:
        raise ValueError("the earlier session sends nothing")
    chain = g.walk(leaf).chain
    gn = Graph(new, rel)
    first = gn.by_uuid.get(first_uuid)
    if first is None or not chain:
        raise ValueError("the new session has no first row to link")
    copies: list[dict[str, Any]] = []
    for i in chain:
        row = json.loads(json.dumps(earlier.value(i)))
        row[REPAIR_MARK] = loss_id
        copies.append(row)
    was = new.value(first)
    fixed = json.loads(json.dumps(was))
    fixed["parentUuid"] = earlier.rows[chain[-1]].uuid
    fixed[REPAIR_MARK] = loss_id
    lost_uuids = [earlier.rows[i].uuid or "" for i in chain if earlier.rows[i].uuid]
    lost_items = comparable(m.to_dict() for m in messages_of(earlier, chain, rel) if not m.synthetic)
    return Mend([*copies, fixed], [was], lost_uuids, lost_items)


def _missing(needle: list[tuple[str, str, str]], hay: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The items of ``needle`` that ``hay`` does not hold as often.

    The loader's walk sets their order: a compaction sends its summary before the preserved
    rows written above it in the file.
    """
    left: dict[tuple[str, str, str], int] = {}
    for item in hay:
        left[item] = left.get(item, 0) + 1
    missing: list[tuple[str, str, str]] = []
    for item in needle:
        if left.get(item, 0) > 0:
            left[item] -= 1
        else:
            missing.append(item)
    return missing


def verify(data: bytes, m: Mend, markers: list[str], release: Release | None = None) -> Verified:
    """Whether the session's bytes ``data``, as the loader model reads them, send what ``m`` brings back.

    Every lost row on the walk again (so in the walk's order), every lost text, tool call and
    tool result in the messages, and each of the user's ``markers`` somewhere in the view.
    """
    view = resume_view(parse_rows(data), release or newest())
    on = set(view.rows)
    off = [u for u in m.lost_uuids if u not in on]
    problems = [f"{len(off)} lost row(s) still off the path (the first: {off[0]})"] if off else []
    items = comparable(view.message_dicts())
    for role, what, text in _missing(m.lost_items, items)[:5]:
        problems.append(f"{role} {what} {text[:60]!r} is not sent in its place")
    said = "\n".join(t for _, _, t in items)
    problems += [f"marker {x!r} is not in the view" for x in markers if x not in said]
    return Verified(not problems, problems, len(view.messages))
