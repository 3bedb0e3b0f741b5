"""``--rounds N`` on an OpenClaw resident: compaction, reset and Kurahi's repair, round after round.

OpenClaw has no rollover that carries the past: its reset is the boundary residents lose it
at (seed 000), and Kurahi's repair (stitch + activation, as ``reset --repair`` does) is what
carries it. So on an OpenClaw resident a round is that boundary and that repair, in the
session ``agent:<id>:continuity-rounds``, with the gateway supervised:

1. **chat**: a few turns (round 1's first states the marker phrases);
2. **compact**, through OpenClaw's own surface: ``openclaw sessions compact KEY`` (its
   ``sessions.compact`` RPC; the summary is written by the configured model);
3. **the view before**: what OpenClaw would send from the key's session (Kurahi's
   runtime-aware check, as for ``reset``);
4. **roll over**: reset the session as its user does (``/reset`` typed), then one turn;
5. **repair**: stop OpenClaw, stitch the key's live session across its reset, activate it,
   start OpenClaw;
6. **the view after**, then one turn in the repaired session; the round is scored as one on Kurahi's own gateway
   (:func:`kurahi.continuity.rounds.score_round`, so ``verify`` recomputes it the same way):

   - **reproduced** (``carry``): the view after begins with every message of the view
     before, unchanged, the compaction's summary included; only the round's own turn
     after the reset follows;
   - **in view**: each round-1 marker is in the view after;
   - **in lineage**: the user message that first said it is on the repaired session's path
     (a summary carrying it does not count);
   - **bounded**: the view's token estimate after (from its content) is under the model's
     context window less Pi's reserve (:data:`kurahi.context.budget.DEFAULT_RESERVE_TOKENS`).

Built for 2026.9 (the SQLite era), whose reset is an entry inside the session, so the live
session alone holds the whole path and stitching it across the reset is the repair.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from typing import Any, Protocol

from kurahi.continuity.rounds import rounds_key, score_round
from kurahi.continuity.targets.openclaw.runtime import OpenClawRuntime
from kurahi.errors import ContinuityError, UsageError
from kurahi.pi.vocab import COMPACTION, MESSAGE
from kurahi.runtimes.openclaw.config import OpenClawState
from kurahi.runtimes.openclaw.versions import facts, of_era

__all__ = ["TURNS_PER_ROUND", "RoundsHost", "check_rounds_target", "run_openclaw_rounds"]

TURNS_PER_ROUND = 3
"""Turns before each compaction: enough for the summary to stand for something."""

_FILLER = (
    "We walked the breakwater again and counted the mooring rings, noting which were rusted through "
    "and which still carried the old harbour master's stamp."
)


class RoundsHost(Protocol):
    """What the rounds need of the OpenClaw target (:class:`~.target.OpenClawTarget`)."""

    rt: OpenClawRuntime

    @property
    def agent(self) -> str:
        """The resident's id."""

    @property
    def say(self) -> Callable[[str], None]:
        """Says what the run is doing now."""

    def state_for_now(self) -> OpenClawState:
        """The state dir as it is now."""

    def repair(self, key: str, markers: list[str], *, live_only: bool = False) -> dict[str, Any]:
        """Kurahi's lineage repair of ``key``, OpenClaw stopped and started again around it."""


def _view(run: RoundsHost, key: str, phrases: list[str]) -> dict[str, Any]:
    """The key's live session as OpenClaw 2026.9 would send it: message hashes, tokens, markers, path."""
    from kurahi.context.text import message_text
    from kurahi.context.tokens import estimate_content_tokens
    from kurahi.lineage.check import check
    from kurahi.lineage.find import find_lineage
    from kurahi.runtimes.openclaw.sqlite.read import export_session_jsonl
    from kurahi.runtimes.sources import parse_sqlite_source

    lineage = find_lineage(run.rt.state_dir, agent=run.agent, key=key)
    live = [p for p in lineage.pieces if p.session_id == lineage.current_session_id]
    if not live:
        raise ContinuityError(f"the session of {key} ({lineage.current_session_id}) has no transcript to check")
    source = live[-1].source
    rep = check(source, markers=phrases, runtime=of_era("sqlite").view.name)
    view = rep.runtime_view if rep.runtime_messages is not None else rep.pi_view
    messages = list(view or [])
    sqlite = parse_sqlite_source(source)
    if sqlite is None:
        raise ContinuityError(f"the session of {key} is not in a SQLite store ({source}); rounds need 2026.9")
    entries = [json.loads(line) for line in export_session_jsonl(*sqlite).splitlines() if line.strip()]
    said = [
        message_text(e["message"]).casefold()
        for e in entries
        if e.get("type") == MESSAGE and isinstance(e.get("message"), dict) and e["message"].get("role") == "user"
    ]
    return {
        "sessionId": lineage.current_session_id,
        "source": source,
        "messages": len(messages),
        "hashes": [_sha(m) for m in messages],
        # From the content: a recorded usage is the model's own count, and a stand-in's is made up.
        "tokens": estimate_content_tokens(messages),
        "compactions": sum(1 for e in entries if e.get("type") == COMPACTION),
        "markers": {h.marker: rep.view_index(h) is not None for h in rep.markers},
        "said": {p: any(p.casefold() in text for text in said) for p in phrases},
    }


def _sha(message: Any) -> str:
    data = json.dumps(message, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


def _threshold(run: RoundsHost) -> int:
    """The primary model's context window less Pi's reserve (the window when the config names none)."""
    from kurahi.context.budget import DEFAULT_RESERVE_TOKENS

    state = run.state_for_now()
    primary = state.model()
    providers = (state.config.get("models") or {}).get("providers") or {}
    provider = providers.get(primary.get("provider")) if isinstance(providers, dict) else None
    window = 200_000
    for m in (provider or {}).get("models") or [] if isinstance(provider, dict) else []:
        if isinstance(m, dict) and m.get("id") == primary.get("model") and isinstance(m.get("contextWindow"), int):
            window = m["contextWindow"]
    return int(window - DEFAULT_RESERVE_TOKENS)


def _reproduced(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    n = len(before["hashes"])
    if after["hashes"][:n] != before["hashes"]:
        same = next((i for i, (a, b) in enumerate(zip(before["hashes"], after["hashes"], strict=False)) if a != b), n)
        return {"ok": False, "detail": f"the view after differs from the one before at message {same} of {n}"}
    extra = len(after["hashes"]) - n
    return {"ok": True, "detail": f"the view before ({n} messages, its summary included) reproduced; {extra} after it"}


def check_rounds_target(supervised: bool, version: str) -> None:
    """Refuse, before anything runs, a target rounds are not built for.

    The release decides the era (a fresh 2026.9 state dir has no store yet).

    Raises:
        UsageError: attached mode, or an OpenClaw release of the JSON era.
    """
    if not supervised:
        raise UsageError(
            "--rounds on an OpenClaw resident repairs every round, which needs the gateway stopped: "
            "supervised mode only (leave out --attached)"
        )
    release = facts(version)
    if release is None or not release.rounds:
        raise UsageError(f"--rounds on an OpenClaw resident is built for 2026.9 (the SQLite era), not {version}")


def run_openclaw_rounds(run: RoundsHost, rounds: int, out: list[dict[str, Any]]) -> None:
    """Run ``rounds`` rounds on the supervised gateway of ``run``, each round's scored evidence added to ``out``.

    ``out`` keeps the rounds that finished when a later one is cut short.

    Raises:
        UsageError: attached mode, or an OpenClaw of the JSON era.
        ContinuityError: OpenClaw refused a turn, the compaction, the reset; the repair failed.
    """
    check_rounds_target(run.rt.supervised, run.rt.version)
    key = rounds_key(run.agent)
    phrases = [f"KURAHI-ROUND1-{tag}-{secrets.token_hex(4).upper()}" for tag in ("A", "B")]
    threshold = _threshold(run)
    for r in range(1, rounds + 1):
        run.say(f"round {r}/{rounds}: chatting")
        for t in range(1, TURNS_PER_ROUND + 1):
            opening = f"Please remember {phrases[0]} and {phrases[1]}. " if r == 1 and t == 1 else ""
            run.rt.turn(key, f"{opening}Round {r}, turn {t}. {_FILLER}")
        start = _view(run, key, phrases)["compactions"]
        run.say(f"round {r}/{rounds}: compacting through OpenClaw")
        run.rt.compact(key)
        before = _view(run, key, phrases)
        run.say(f"round {r}/{rounds}: reset, then Kurahi's repair")
        how = run.rt.user_reset(key)
        run.rt.turn(key, f"Round {r}: a new topic after the reset.")
        repaired = run.repair(key, [], live_only=True)
        after = _view(run, key, phrases)
        # One turn in the repaired session: what OpenClaw really sends now (a model's request log
        # can confirm the markers, which the view above predicts).
        confirm = f"KURAHI-CHECK-{secrets.token_hex(4).upper()}"
        reply = run.rt.turn(key, f"Round {r}: do you remember? {confirm}")
        ev: dict[str, Any] = {
            "round": r,
            "turns": TURNS_PER_ROUND,
            "compactions": before["compactions"] - start,
            "reset": how,
            "oldSessionId": before["sessionId"],
            "newSessionId": after["sessionId"],
            "repair": repaired,
            "confirm": {"phrase": confirm, "reply": reply[:400]},
            "carry": _reproduced(before, after),
            "tokensBefore": before["tokens"],
            "tokensAfter": after["tokens"],
            "threshold": threshold,
            "messagesBefore": before["messages"],
            "messagesAfter": after["messages"],
            "markers": [
                {
                    "phrase": p,
                    "inView": after["markers"].get(p, False),
                    "probeReply": "",
                    "inLineage": after["said"].get(p, False),
                    "foundIn": {"sessionId": after["sessionId"], "hops": 0} if after["said"].get(p) else None,
                }
                for p in phrases
            ],
        }
        ev["verdict"] = score_round(ev)
        run.say(f"round {r}/{rounds}: {'unmarked' if ev['verdict']['ok'] else 'MARKED'}")
        out.append(ev)
