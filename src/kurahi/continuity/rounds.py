"""Repetition: continuity-preserving rollovers, again and again, with compactions in between.

Seed 000 ends with "the next test is repetition": roll a session over many times, compact
in between, and ask whether the boundary stays functionally unmarked. Each round here:

1. chats on ``agent:<id>:continuity-rounds`` until the gateway compacts the session at least
   once (round 1 opens with the marker facts, each on a line that begins ``Remember:``);
2. takes the transcript (the old session) and rolls the session over with
   ``carry: lineage`` through ``POST .../sessions/reset``;
3. takes the new transcript and scores the boundary:

   - **unmarked**: the new projection is the carried summary followed by exactly the old
     projection's last messages, and the summary holds the old one
     (:func:`kurahi.lifecycle.freshness.carry.check_carry`);
   - **in view**: a ``[[recall:WORD]]`` probe on the new session gets every round-1 marker
     back from the model, so each was in the context the model was sent;
   - **in lineage**: the user message that first stated each marker is found by following
     ``parentSession`` back from the new transcript through the kept ones
     (``GET .../session/transcript?sessionId=``); a summary carrying it does not count;
   - **bounded**: the new context's token estimate is under the compaction threshold
     (``contextWindow - reserveTokens``), so the carried past does not grow without end.

Everything goes through the gateway's HTTP API; transcripts are projected locally, as the
gateway's own reader would. A round is ``ok`` when all four hold.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kurahi.context.files import project_file
from kurahi.context.text import message_text
from kurahi.context.tokens import estimate_context_tokens
from kurahi.errors import ContinuityError
from kurahi.lifecycle.freshness.carry import check_carry
from kurahi.pi.vocab import COMPACTION, MESSAGE, SESSION

__all__ = ["MARKERS", "max_turns", "rounds_key", "rounds_summary", "run_rounds", "score_round"]

MARKERS = [
    ("Orrery", "Remember: the lighthouse keeper's cat is named Orrery."),
    ("vermilion", "Remember: the seventh ledger is bound in vermilion cloth."),
]
"""Round-1 facts: (the word a recall probe asks for, the line that states it)."""


def max_turns(threshold: int) -> int:
    """Most turns a round sends waiting for a compaction before it gives up (and fails).

    Each turn adds about 350 tokens (a message of about 1,200 characters and its echo), so
    this is what reaching the threshold from an empty session takes, plus a margin.
    """
    return min(1000, threshold // 300 + 8)


_FILLER = (
    "We walked the breakwater again and counted the mooring rings, noting which were rusted through, "
    "which had been replaced last spring, and which still carried the old harbour master's stamp. "
)

Call = Callable[..., Any]
"""An authenticated call to the gateway, ``(method, path, **kw)``: ``ctx.json`` (the decoded
answer) and ``ctx.call`` (the response itself) both have this shape."""


def rounds_key(agent: str) -> str:
    """The session the rounds roll over, on every target."""
    return f"agent:{agent}:continuity-rounds"


def _lines(data: bytes) -> list[dict[str, Any]]:
    out = []
    for line in data.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def _compactions(data: bytes) -> int:
    return sum(1 for e in _lines(data) if e.get("type") == COMPACTION)


def _header(data: bytes) -> dict[str, Any]:
    entries = _lines(data[: data.find(b"\n") + 1] if b"\n" in data else data)
    return entries[0] if entries and entries[0].get("type") == SESSION else {}


def _parent_id(header: dict[str, Any]) -> str | None:
    """The session id ``parentSession`` names (a file path or a backend locator ending in the file name)."""
    parent = header.get("parentSession")
    if not isinstance(parent, str) or not parent:
        return None
    name = parent.replace("\\", "/").rsplit("/", 1)[-1]
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else name


def _transcript(raw: Call, agent: str, **params: str) -> bytes:
    r = raw("GET", f"/api/agents/{agent}/session/transcript", params=params)
    if r.status_code != 200:
        raise ContinuityError(f"GET transcript {params}: HTTP {r.status_code}: {r.text[:300]}")
    data: bytes = r.content
    return data


def _user_texts(data: bytes) -> list[str]:
    """The text of every user message in a transcript (where a fact was first said, not a summary)."""
    return [
        message_text(e["message"]).casefold()
        for e in _lines(data)
        if e.get("type") == MESSAGE and isinstance(e.get("message"), dict) and e["message"].get("role") == "user"
    ]


def _walk_lineage(raw: Call, agent: str, start: bytes, phrases: list[str], limit: int) -> dict[str, Any]:
    """Follow ``parentSession`` back from ``start`` to the user message that first said each phrase.

    Summaries that carry a phrase do not count: this asks whether the original statement is
    still reachable from the live session, and how many rollovers back it is.
    """
    found: dict[str, dict[str, Any]] = {}
    data, hops, sid = start, 0, _header(start).get("id")
    while True:
        said = _user_texts(data)
        for phrase in phrases:
            if phrase not in found and any(phrase.casefold() in text for text in said):
                found[phrase] = {"sessionId": sid, "hops": hops}
        parent = _parent_id(_header(data))
        if parent is None or len(found) == len(phrases) or hops >= limit:
            break
        data, hops, sid = _transcript(raw, agent, sessionId=parent), hops + 1, parent
    return {"found": found, "hops": hops}


def _context(data: bytes, where: Path) -> list[Any]:
    where.write_bytes(data)
    return list(project_file(where).context.messages)


def run_rounds(
    call: Call,
    raw: Call,
    agent: str,
    rounds: int,
    *,
    threshold: int,
    carry: str = "lineage",
    say: Callable[[str], None] = lambda _: None,
) -> list[dict[str, Any]]:
    """Run ``rounds`` rounds (see the module docstring); returns each round's evidence.

    ``threshold`` is the token count past which the gateway compacts this agent's sessions
    (its profile's ``contextWindow`` minus ``reserveTokens``). ``carry`` is what each rollover
    carries: ``lineage`` is the point; anything else is a test of the scoring.

    Raises:
        ContinuityError: the gateway refused a call (the suite reports the run interrupted).
    """
    key = rounds_key(agent)
    phrases = [line.removeprefix("Remember: ").rstrip(".") for _, line in MARKERS]
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kurahi-rounds-") as tmp:
        folder = Path(tmp)
        for r in range(1, rounds + 1):
            say(f"round {r}/{rounds}: chatting until the session compacts")
            start = (
                _compactions(_transcript(raw, agent, key=key))
                if any(s["key"] == key for s in call("GET", f"/api/agents/{agent}/sessions"))
                else 0
            )
            turns, compacted = 0, start
            while compacted <= start and turns < max_turns(threshold):
                turns += 1
                opening = "\n".join(line for _, line in MARKERS) + "\n" if r == 1 and turns == 1 else ""
                message = f"{opening}Round {r}, turn {turns}. " + _FILLER * 6
                reply = call("POST", f"/api/agents/{agent}/chat", json={"message": message, "key": key})
                if reply.get("status") != "ok":
                    raise ContinuityError(f"round {r}: a chat turn ended {reply.get('status')}: {reply.get('error')}")
                compacted = _compactions(_transcript(raw, agent, key=key))
            old = _transcript(raw, agent, key=key)
            say(f"round {r}/{rounds}: rolling over with carry: {carry}")
            reset = call("POST", f"/api/agents/{agent}/sessions/reset", json={"key": key, "carry": carry})
            new = _transcript(raw, agent, key=key)
            old_file, new_file = folder / f"old-{r}.jsonl", folder / f"new-{r}.jsonl"
            old_ctx, new_ctx = _context(old, old_file), _context(new, new_file)
            carried = check_carry(old_file, new_file).to_dict()
            say(f"round {r}/{rounds}: probing the new session for the round-1 markers")
            in_view = {}
            for word, _ in MARKERS:
                probe = call("POST", f"/api/agents/{agent}/chat", json={"message": f"[[recall:{word}]]", "key": key})
                in_view[word] = str(probe.get("reply") or "")
            lineage = _walk_lineage(raw, agent, new, phrases, limit=rounds + 1)
            ev = {
                "round": r,
                "turns": turns,
                "compactions": compacted - start,
                "oldSessionId": reset.get("oldSessionId"),
                "newSessionId": reset.get("newSessionId"),
                "oldSha256": hashlib.sha256(old).hexdigest(),
                "newSha256": hashlib.sha256(new).hexdigest(),
                "carry": carried,
                "tokensBefore": int(estimate_context_tokens(old_ctx).tokens),
                "tokensAfter": int(estimate_context_tokens(new_ctx).tokens),
                "threshold": threshold,
                "summaryChars": len(message_text(new_ctx[0])) if new_ctx else 0,
                "markers": [
                    {
                        "phrase": phrase,
                        "inView": phrase.casefold() in in_view[word].casefold(),
                        "probeReply": in_view[word][:400],
                        "inLineage": phrase in lineage["found"],
                        "foundIn": lineage["found"].get(phrase),
                    }
                    for (word, _), phrase in zip(MARKERS, phrases, strict=True)
                ],
            }
            ev["verdict"] = score_round(ev)
            say(f"round {r}/{rounds}: {'unmarked' if ev['verdict']['ok'] else 'MARKED'}")
            out.append(ev)
    return out


def score_round(ev: dict[str, Any]) -> dict[str, Any]:
    """Whether one round's boundary stayed unmarked, recomputed from its evidence."""
    problems = []
    if not ev["compactions"]:
        problems.append(f"no compaction in {ev['turns']} turns")
    if not ev["carry"].get("ok"):
        problems.append(f"the boundary is marked: {ev['carry'].get('detail')}")
    lost_view = [m["phrase"] for m in ev["markers"] if not m["inView"]]
    if lost_view:
        problems.append(f"not in the model's view: {', '.join(lost_view)}")
    lost_lineage = [m["phrase"] for m in ev["markers"] if not m["inLineage"]]
    if lost_lineage:
        problems.append(f"not reachable through the lineage: {', '.join(lost_lineage)}")
    if ev["tokensAfter"] > ev["threshold"]:
        problems.append(f"{ev['tokensAfter']} tokens after the rollover, over the threshold {ev['threshold']}")
    if problems:
        return {"ok": False, "detail": "; ".join(problems)}
    return {
        "ok": True,
        "detail": f"{ev['carry'].get('detail')}; {len(ev['markers'])} round-1 markers in view and in the lineage; "
        f"{ev['tokensAfter']} tokens after (threshold {ev['threshold']})",
    }


def rounds_summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over the rounds, recomputed from their evidence."""
    ok = sum(1 for r in rounds if score_round(r)["ok"])
    return {
        "rounds": len(rounds),
        "unmarked": ok,
        "maxTokensAfter": max((r["tokensAfter"] for r in rounds), default=0),
    }
