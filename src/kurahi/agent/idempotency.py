"""Idempotency keys: a message sent again (after an error, on another gateway) is found, not stored twice.

A chat message may carry an idempotency key (the client's, or one the gateway made and
gave back in its answer). The key is stored with the message's entry, in the entry-level
``kurahi`` object beside its queue id. When a message comes in with a key the client sent,
the session's path is searched for it first:

* found, and the turn that took it ended (an assistant message that did not ask for
  tools): that turn's answer is given again, nothing is appended, nothing runs;
* found, and the turn broke off (the store went away, the gateway lost the session): the
  turn goes on from what is stored, without appending the message again; the pairing guard
  settles any tool call it left, so a side effect that happened is not run again;
* found, and a later message's turn followed it before it was answered: it is answered
  with status ``error`` saying so (nothing is appended; what it stored stays);
* not found: a new turn, as usual.

A message steered into a running turn is marked (``steered``), so the turn it joined is not
mistaken for a later one.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kurahi.agent.conversation import PathItem
from kurahi.agent.turn import TurnResult
from kurahi.errors import KurahiError, TurnInterruptedError, UsageError

__all__ = [
    "KEY_FIELD",
    "STEERED_FIELD",
    "StoredTurn",
    "check_idempotency_key",
    "find_turn",
    "interrupted",
    "new_idempotency_key",
    "not_yet_stored",
]

KEY_FIELD = "idempotencyKey"
"""The field of an entry's ``kurahi`` object that holds its message's idempotency key."""
STEERED_FIELD = "steered"
"""The field of an entry's ``kurahi`` object that marks a message steered into a running turn."""

_KEY = re.compile(r"[A-Za-z0-9._:~-]{1,128}")


def check_idempotency_key(value: str) -> str:
    """``value`` if it can be an idempotency key: 1 to 128 of ``A-Z a-z 0-9 . _ : ~ -``.

    Raises:
        UsageError: it cannot (the message says what is allowed).
    """
    if not isinstance(value, str) or not _KEY.fullmatch(value):
        raise UsageError("an idempotency key is 1 to 128 of the characters A-Z a-z 0-9 . _ : ~ -")
    return value


def new_idempotency_key() -> str:
    """A fresh key, for a message that came without one (given back to the client with the answer)."""
    return "ik-" + secrets.token_hex(12)


def key_of(item: PathItem) -> str | None:
    """The idempotency key stored with an entry, if any."""
    meta = item.data.get("kurahi")
    value = meta.get(KEY_FIELD) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


@dataclass
class StoredTurn:
    """What the path holds of the turn that took a message."""

    entries: list[str]
    """Ids of the entries from the message to the turn's end (or to the leaf, if it broke off)."""
    result: TurnResult | None
    """The turn's answer, given again; ``None`` when the turn broke off and must go on."""


def find_turn(path: Sequence[PathItem], key: str) -> StoredTurn | None:
    """The turn on ``path`` whose message carries ``key`` (the newest such), or ``None``."""
    for i in range(len(path) - 1, -1, -1):
        item = path[i]
        msg = item.message
        if isinstance(msg, dict) and msg.get("role") == "user" and key_of(item) == key:
            return _turn_from(path, i)
    return None


def _turn_from(path: Sequence[PathItem], start: int) -> StoredTurn:
    ids: list[str] = []
    steps = 0
    for n, item in enumerate(path[start:]):
        msg = item.message
        if n and isinstance(msg, dict) and msg.get("role") == "user" and not _steered(item):
            # A later message started a turn of its own: this one broke off unanswered.
            why = "this message's turn broke off before it was answered, and later messages were answered after it"
            return StoredTurn(ids, TurnResult("error", error=why, entries=list(ids), steps=steps, replayed=True))
        if isinstance(item.id, str):
            ids.append(item.id)
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        steps += 1
        stop = msg.get("stopReason")
        if stop == "toolUse":
            continue
        return StoredTurn(ids, _result(msg, item.id, stop, ids, steps))
    return StoredTurn(ids, None)


def _steered(item: PathItem) -> bool:
    meta = item.data.get("kurahi")
    return isinstance(meta, dict) and meta.get(STEERED_FIELD) is True


def _result(msg: dict[str, Any], entry_id: Any, stop: Any, ids: list[str], steps: int) -> TurnResult:
    content = msg.get("content")
    text = "".join(
        b.get("text", "")
        for b in (content if isinstance(content, list) else ())
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )
    error = msg.get("errorMessage") if isinstance(msg.get("errorMessage"), str) else None
    if stop == "error":
        return TurnResult("error", error=error, entries=list(ids), steps=steps, replayed=True)
    if stop == "aborted":
        return TurnResult("aborted", reply=text, error=error, entries=list(ids), steps=steps, replayed=True)
    entry = entry_id if isinstance(entry_id, str) else None
    return TurnResult("ok", reply=text, reply_entry_id=entry, entries=list(ids), steps=steps, replayed=True)


def _key_of_input(item: dict[str, Any]) -> str | None:
    meta = (item.get("extra") or {}).get("kurahi") or {}
    value = meta.get(KEY_FIELD) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def not_yet_stored(
    path: Sequence[PathItem], inputs: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], StoredTurn | None]:
    """The turn inputs whose key is not on ``path`` yet, and the stored turn of the last one that is.

    Only inputs marked ``lookup`` (their key came from the sender) are looked for.
    """
    todo: list[dict[str, Any]] = []
    found: StoredTurn | None = None
    for item in inputs:
        key = _key_of_input(item) if item.get("lookup") else None
        turn = find_turn(path, key) if key is not None else None
        if turn is None:
            todo.append(item)
        else:
            found = turn
    return todo, found


def interrupted(
    inputs: list[dict[str, Any]], exc: KurahiError, *, stored: bool | None, unavailable: bool = True
) -> TurnInterruptedError:
    """The error for a turn its store failed under: why, what was stored, and the key to send it again with."""
    key = next((k for k in map(_key_of_input, inputs) if k is not None), None)
    what = {
        True: "part of this turn was stored",
        False: "nothing of this turn was stored",
        None: "whether the message was stored is not known yet",
    }[stored]
    # The store's own words for an unreachable one (which database, why); for a lease lost,
    # its "nothing was appended" is about the last append only, not about the turn.
    why = f"the session's store failed under it ({exc})" if unavailable else "another writer took the session over"
    return TurnInterruptedError(
        f"the turn stopped: {why}; {what}. Send the message again with the same idempotency key: "
        "a gateway finds what was stored instead of storing it twice",
        stored=stored,
        idempotency_key=key,
        unavailable=unavailable,
    )
