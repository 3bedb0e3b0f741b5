"""The answers of ``kurahi mcp``'s tools and resource, as JSON-ready dicts, bounded.

Each answer stays under :data:`MAX_ANSWER` characters of JSON (OpenClaw cuts a tool result
at 16,000 characters for a model under 100K tokens of context, and wraps it in about 1 KB of
its own): lists are shortened and the answer says so (``cut: true`` and how many there were).
Errors a model can fix are :class:`~kurahi.mcp_server.safety.Refusal`.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any
from urllib.parse import quote

from kurahi.errors import KurahiError
from kurahi.lineage.find import iso
from kurahi.mcp_server.passages import Passage, fold
from kurahi.mcp_server.safety import Refusal, check_text, quoted, scrub, tidy
from kurahi.mcp_server.served import History, Served
from kurahi.resident.memory import STOP_WORDS

__all__ = [
    "MAX_ANSWER",
    "MAX_SLICE",
    "answer_text",
    "check_answer",
    "lineage_answer",
    "losses_answer",
    "recall_answer",
    "slice_answer",
    "slice_uri",
]

MAX_ANSWER = 12_000
"""Characters an answer may take, as sent (:func:`answer_text`)."""
MAX_SLICE = 40
"""Entries a transcript slice may hold."""
SNIPPET = 480
"""Characters of a passage a recall hit quotes."""
SLICE_TEXT = 1_500
"""Characters of one entry a slice quotes."""
URI_PREFIX = "kurahi://transcript/"


def answer_text(answer: dict[str, Any]) -> str:
    """The text an answer is sent as: JSON indented by two, as the MCP SDK writes a tool's result.

    The cap is measured on this text, so what an agent receives is what was measured (the
    resource returns this very text; the tools' text is the SDK's, which writes the same).
    """
    return json.dumps(answer, ensure_ascii=False, indent=2)


def _size(value: dict[str, Any]) -> int:
    return len(answer_text(value))


def _fit(answer: dict[str, Any], field: str) -> dict[str, Any]:
    """Drop items from the end of ``answer[field]`` until the answer fits; say so."""
    items = answer[field]
    total = len(items)
    while items and _size(answer) > MAX_ANSWER:
        items.pop()
        answer["cut"] = True
    if answer.get("cut"):
        answer["cutNote"] = (
            f"showing {len(items)} of {total} {field}; the answer is capped at {MAX_ANSWER:,} characters"
        )
    return answer


def slice_uri(key: str, piece: str, start: int, end: int) -> str:
    """The resource URI of entries ``start`` (included) to ``end`` (excluded) of a piece."""
    return f"{URI_PREFIX}{quote(key, safe=':')}/{piece}/{start}-{end}"


def _when(p: Passage) -> str | None:
    return iso(p.at_ms)


def _standing(p: Passage) -> str:
    if p.in_view:
        return "in view"
    if p.abandoned:
        return "abandoned branch"
    if p.compacted:
        return "compacted away"
    if p.before_reset:
        return "before a reset"
    return "earlier piece"


def _read(served: Served, key: str | None) -> History:
    try:
        return served.history(key)
    except Refusal:
        raise
    except KurahiError as exc:
        raise Refusal(f"the state could not be read: {exc}") from exc


# -- lineage ------------------------------------------------------------------------------


def lineage_answer(served: Served, key: str | None = None) -> dict[str, Any]:
    """The pieces of the key's history, its boundaries, what is in view now and what left it."""
    hist = _read(served, key)
    msgs = [p for p in hist.passages if p.is_message]
    view = [p for p in msgs if p.in_view]
    left = [p for p in msgs if not p.in_view and not p.abandoned]
    pieces = []
    for info in hist.pieces:
        mine = hist.by_piece.get(info.label, [])
        pieces.append(
            {
                "piece": info.label,
                "kind": info.kind,
                "sessionId": info.session_id,
                "current": info.current,
                "firstEntryAt": iso(info.first_ms),
                "lastEntryAt": iso(info.last_ms),
                "entries": len(mine),
                "messages": sum(1 for p in mine if p.is_message),
                "foundBy": info.found_by,
                "confidence": info.confidence,
                "firstEntries": slice_uri(hist.key, info.label, 0, min(len(mine), 10)),
            }
        )
    current = hist.current
    answer: dict[str, Any] = {
        "key": hist.key,
        "agent": hist.agent,
        "layout": hist.layout,
        "inViewNow": {"messages": len(view), "tokens": sum(p.tokens for p in view)},
        "leftView": {
            "messages": len(left),
            "tokens": sum(p.tokens for p in left),
            "beforeReset": sum(1 for p in left if p.before_reset or p.piece != (current.label if current else None)),
            "compactedAway": sum(1 for p in left if p.compacted),
        },
        "abandonedBranchMessages": sum(1 for p in msgs if p.abandoned),
        "repairActive": bool(current and current.repair_active),
        "boundaries": [{**b, "reason": tidy(b["reason"])} if "reason" in b else b for b in hist.boundaries[:50]],
        "notes": [tidy(n) for n in hist.notes[:10]],
        "pieces": pieces,
        "how": "inViewNow counts by structure (resets, compactions, branches); the check tool applies the window.",
    }
    return _fit(answer, "pieces")


# -- recall -------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def _time_bound(value: str | None, what: str) -> int | None:
    if value is None:
        return None
    check_text(value, what, limit=64)
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise Refusal(f"{what} {value!r}: not an ISO-8601 time such as 2026-12-01T08:00:00Z") from exc
    if when.tzinfo is None:
        raise Refusal(f"{what} {value!r}: give a time zone (Z for UTC)")
    return int(when.timestamp() * 1000)


def _snippet(text: str, folded_hit: str) -> tuple[str, bool]:
    """Up to :data:`SNIPPET` characters around the first place ``folded_hit`` matches."""
    if len(text) <= SNIPPET:
        return text, False
    at = max(0, fold(text).find(folded_hit)) if folded_hit else 0
    at = min(at, len(text))
    start = max(0, at - SNIPPET // 3)
    end = min(len(text), start + SNIPPET)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else ""), True


def recall_answer(
    served: Served,
    query: str,
    *,
    key: str | None = None,
    limit: int = 5,
    before: str | None = None,
    after: str | None = None,
) -> dict[str, Any]:
    """Passages of the key's whole history matching ``query``: the exact phrase first, then by words matched."""
    check_text(query, "query")
    upper, lower = _time_bound(before, "before"), _time_bound(after, "after")
    hist = _read(served, key)
    phrase = " ".join(fold(query).split())
    words = list(dict.fromkeys(_WORD.findall(phrase)))
    # Words in nearly every passage tell nothing apart and cost a scan with thousands of hits:
    # they count only when the query has nothing else (the phrase still holds them).
    terms = ([w for w in words if w not in STOP_WORDS] or words)[:32]

    def in_time(p: Passage) -> bool:
        return not (
            (upper is not None and (p.at_ms is None or p.at_ms >= upper))
            or (lower is not None and (p.at_ms is None or p.at_ms <= lower))
        )

    exact_at = {i for i in hist.matching(phrase) if in_time(hist.passages[i])}
    # Passages holding the phrase rank before any holding only some of its words (unless they
    # are this server's own results or abandoned): when they fill the answer, the words are not
    # searched for at all, and the answer says its total counts the phrase only.
    first = sum(1 for i in exact_at if not hist.passages[i].own and not hist.passages[i].abandoned)
    phrase_only = first >= limit and terms != [phrase]
    # A one-word query's word is its phrase: one scan of the buffer, not two.
    per_term = [] if phrase_only else [exact_at if t == phrase else hist.matching(t) for t in terms]
    counts: dict[int, int] = {i: len(terms) for i in exact_at} if phrase_only else {}
    for found in per_term:
        for i in found:
            counts[i] = counts.get(i, 0) + 1
    scored: list[tuple[tuple[Any, ...], Passage, bool, int]] = []
    for i in exact_at | counts.keys():
        p = hist.passages[i]
        if not in_time(p):
            continue
        exact, matched = i in exact_at, counts.get(i, 0)
        rank = (p.own, p.abandoned, not exact, -matched, -(p.at_ms or 0), p.piece, p.pos)
        scored.append((rank, p, exact, matched))
    scored.sort(key=lambda s: s[0])
    hits = []
    for _, p, exact, matched in scored[:limit]:
        folded = fold(p.text)
        hit_text = phrase if exact else next((t for t in terms if t in folded), "")
        text, cut = _snippet(scrub(p.text), hit_text)
        n = len(hist.by_piece.get(p.piece, []))
        hits.append(
            {
                "text": text,
                "textCut": cut,
                "piece": p.piece,
                "entryId": p.entry_id,
                "entry": p.pos,
                "at": _when(p),
                "role": p.role,
                "match": "exact phrase" if exact else f"{matched} of {len(terms)} words",
                "inViewNow": p.in_view,
                "standing": _standing(p),
                **({"abandonedBranch": True} if p.abandoned else {}),
                **({"compactedAway": True} if p.compacted else {}),
                **({"ownResult": True} if p.own else {}),
                "around": slice_uri(hist.key, p.piece, max(0, p.pos - 3), min(n, p.pos + 4)),
            }
        )
    answer: dict[str, Any] = {
        "query": query if len(query) <= 200 else query[:200] + "…",
        "key": hist.key,
        "total": len(scored),
        "shown": len(hits),
        "hits": hits,
    }
    if len(scored) > len(hits):
        answer["more"] = f"{len(scored) - len(hits)} more passages match; raise limit or narrow with before/after"
    if phrase_only:
        answer["totalCounts"] = "passages holding the exact phrase (they filled the answer; single words not searched)"
    answer = _fit(answer, "hits")
    answer["shown"] = len(answer["hits"])
    return answer


# -- check --------------------------------------------------------------------------------


def check_answer(served: Served, markers: list[str], key: str | None = None) -> dict[str, Any]:
    """Whether each marker is in what the runtime sends next, as ``kurahi lineage check`` decides it."""
    from kurahi.lineage.check import check

    for i, m in enumerate(markers):
        check_text(m, f"markers[{i}]", limit=500)
    hist = _read(served, key)
    current = hist.current
    if current is None:
        raise Refusal(f"key {hist.key!r}: no current session to check")
    if served.own_rows:
        return _check_own(served, hist, current.label, current.source, markers)
    try:
        report = check(current.source, markers=markers)
    except KurahiError as exc:
        raise Refusal(f"the current session could not be checked: {exc}") from exc
    results = []
    for hit in report.markers:
        index = report.view_index(hit)
        results.append(
            {
                "marker": hit.marker,
                "sentNext": index is not None and hit.sent,
                "inHistory": hit.index is not None,
                **({"why": report.not_sent(hit)} if report.not_sent(hit) else {}),
            }
        )
    answer = {
        "key": hist.key,
        "piece": current.label,
        "runtime": report.runtime,
        "messagesSent": report.view_messages,
        "window": report.window,
        "projectionsAgree": report.projections_agree,
        "ok": report.ok,
        "markers": results,
    }
    return _fit(answer, "markers")


def _check_own(served: Served, hist: History, piece: str, source: str, markers: list[str]) -> dict[str, Any]:
    """``check`` of a runtime that reads its own session files: each marker in what its next resume sends."""
    from pathlib import Path

    from kurahi.runtimes.own_files import marker_index

    try:
        view = served.runtime.sent_view(Path(source), sure=True)
    except KurahiError as exc:
        raise Refusal(f"the current session could not be checked: {exc}") from exc
    results = []
    for m in markers:
        index = marker_index(view, m)
        in_history = index is not None or bool(hist.matching(" ".join(fold(m).split())))
        results.append({"marker": m, "sentNext": index is not None, "inHistory": in_history})
    answer = {
        "key": hist.key,
        "piece": piece,
        "runtime": view.runtime,
        "messagesSent": len(view.messages),
        "tokensSent": sum(view.tokens),
        "ok": all(r["sentNext"] for r in results),
        "markers": results,
    }
    return _fit(answer, "markers")


# -- losses -------------------------------------------------------------------------------


def losses_answer(served: Served) -> dict[str, Any]:
    """What ``kurahi rescue`` lists for the served agent, read-only."""
    if served.own_rows:
        return _own_losses(served)
    if not served.runtime.keyed:
        return {"losses": [], "total": 0, "note": served.runtime.no_losses_mcp}
    from kurahi.lifecycle.rescue.losses import find_losses

    try:
        report = find_losses(
            served.root, agent=served.agent, state_kind="kurahi" if served.kind == "home" else served.runtime.name
        )
    except KurahiError as exc:
        raise Refusal(f"the state could not be read: {exc}") from exc
    losses = [
        {
            "id": loss.id,
            "key": loss.key,
            "at": loss.at,
            "kind": loss.kind,
            "confidence": loss.confidence,
            "lostMessages": loss.lost_messages,
            "lostTokens": loss.lost_tokens,
            "firstEntryAt": loss.first_entry_at,
            "lastEntryAt": loss.last_entry_at,
            "lastMessageAt": loss.last_message_at,
            "sessionId": loss.session_id,
            "restoreFits": loss.restore.fits,
            "evidence": [tidy(e) for e in loss.evidence[:4]],
        }
        for loss in report.losses
    ]
    answer = {
        "agent": served.agent,
        "keys": report.keys,
        "total": len(losses),
        "losses": losses,
        "repair": "a repair is the operator's to apply (kurahi rescue), outside MCP",
    }
    return _fit(answer, "losses")


def _own_losses(served: Served) -> dict[str, Any]:
    """What ``kurahi rescue`` lists for a runtime that finds its own losses (Claude Code), read-only."""
    try:
        report = served.runtime.losses(served.root)
    except KurahiError as exc:
        raise Refusal(f"the state could not be read: {exc}") from exc
    found = report.losses if report is not None else []
    losses = [
        {
            "id": loss.id,
            "project": tidy(loss.project),
            "sessionId": loss.session_id,
            "at": loss.at,
            "kind": loss.kind,
            "confidence": loss.confidence,
            "lostMessages": loss.lost_messages,
            "lostTokens": loss.lost_tokens,
            "firstEntryAt": loss.first_entry_at,
            "lastEntryAt": loss.last_entry_at,
            "evidence": [tidy(e) for e in loss.evidence[:4]],
        }
        for loss in found
    ]
    answer = {
        "total": len(losses),
        "losses": losses,
        "repair": "a repair is the operator's to apply (kurahi rescue), outside MCP",
    }
    return _fit(answer, "losses")


# -- slices -------------------------------------------------------------------------------

_SPAN = re.compile(r"^(\d{1,9})-(\d{1,9})$")
_PIECE = re.compile(r"^p\d{1,6}$")


def slice_answer(served: Served, key: str, piece: str, span: str) -> dict[str, Any]:
    """Entries ``start-end`` (end excluded) of a piece of the key's history, readable."""
    from urllib.parse import unquote

    key = unquote(key)
    if not _PIECE.match(piece):
        raise Refusal(f"piece {quoted(piece)}: pieces are named p0, p1, ... (see the lineage tool)")
    m = _SPAN.match(span)
    if m is None:
        raise Refusal(f"range {quoted(span)}: give entries as START-END, e.g. 0-10")
    start, end = int(m.group(1)), int(m.group(2))
    if end <= start:
        raise Refusal(f"range {quoted(span)}: END must be greater than START")
    if end - start > MAX_SLICE:
        raise Refusal(f"range {quoted(span)}: at most {MAX_SLICE} entries at once")
    hist = _read(served, key)
    entries = hist.by_piece.get(piece)
    if entries is None:
        raise Refusal(f"piece {quoted(piece)}: key {hist.key!r} has pieces p0 to p{len(hist.pieces) - 1}")
    if start >= len(entries):
        raise Refusal(f"range {quoted(span)}: piece {piece} has {len(entries)} entries (0-{len(entries)})")
    rows = []
    for p in entries[start:end]:
        full = scrub(p.text)
        text = full if len(full) <= SLICE_TEXT else full[:SLICE_TEXT] + "…"
        rows.append(
            {
                "entry": p.pos,
                "entryId": p.entry_id,
                "type": p.entry_type,
                "role": p.role,
                "at": _when(p),
                "standing": _standing(p),
                "text": text,
                **({"textCut": True} if len(full) > SLICE_TEXT else {}),
            }
        )
    answer: dict[str, Any] = {"key": hist.key, "piece": piece, "of": len(entries), "entries": rows}
    last = min(end, len(entries))
    if last < len(entries):
        answer["next"] = slice_uri(hist.key, piece, last, min(len(entries), last + (end - start)))
    if start > 0:
        answer["previous"] = slice_uri(hist.key, piece, max(0, start - (end - start)), start)
    return _fit(answer, "entries")
