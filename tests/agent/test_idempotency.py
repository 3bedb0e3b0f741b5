"""Idempotency keys and a store failing under a turn (issue 29, items 1 and 2), in one process, on each backend.

A message sent again with its key is answered from the turn stored for it; a turn whose
store fails lets its session go (so the next message opens it afresh) and says what it
stored; the same message sent again then goes on from what is stored, nothing twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kurahi.agent.conversation import PathItem
from kurahi.agent.idempotency import find_turn
from kurahi.agent.runtime import Runtime
from kurahi.errors import AppendError, AppendOutcomeUnknownError, TurnInterruptedError, UsageError
from support.backends import BackendMaker
from support.residents import make_home, run, with_runtime

KEY = "agent:alice:main"
TOOL = 'note it [[tool:memory_append {"text": "ik-side-7", "file": "ik.md"}]]'


def user_messages(rt: Runtime, text: str) -> int:
    conv = rt.conversation(KEY)
    return sum(
        1
        for p in conv.path
        if isinstance(p.message, dict) and p.message.get("role") == "user" and text in str(p.message)
    )


def side_effects(home: Path) -> int:
    f = home / "agents" / "alice" / "workspace" / "memory" / "ik.md"
    return f.read_text().count("ik-side-7") if f.exists() else 0


def fail_append(rt: Runtime, nth: int, error: Exception) -> None:
    """Make the ``nth`` append from now on of the key's open session raise ``error`` (once)."""
    handle: Any = rt.conversation(KEY).session._handle
    real = handle.append
    calls = {"n": 0}

    def append(line: bytes, **kw: Any) -> None:
        calls["n"] += 1
        if calls["n"] == nth:
            raise error
        real(line, **kw)

    handle.append = append


def test_a_message_sent_again_with_its_key_is_answered_from_the_stored_turn(
    tmp_path: Path, any_backend: BackendMaker
) -> None:
    home = make_home(tmp_path)

    async def go(rt: Runtime) -> None:
        first = await rt.send(KEY, TOOL, idempotency_key="ik-1")
        again = await rt.send(KEY, TOOL, idempotency_key="ik-1")
        assert first.status == again.status == "ok" and not first.replayed and again.replayed
        assert again.reply == first.reply and again.reply_entry_id == first.reply_entry_id
        assert again.entries == first.entries
        assert user_messages(rt, "note it") == 1
        other = await rt.send(KEY, TOOL, idempotency_key="ik-2")  # another key: another message
        assert not other.replayed and user_messages(rt, "note it") == 2

    run(with_runtime(home, go, backend=any_backend(home)))
    assert side_effects(home) == 2


def test_a_turn_whose_store_fails_lets_the_session_go_and_the_retry_goes_on_from_what_was_stored(
    tmp_path: Path, any_backend: BackendMaker
) -> None:
    home = make_home(tmp_path)

    async def go(rt: Runtime) -> None:
        await rt.send(KEY, "hello")
        # Appends of the turn: 1 the message, 2 the call (with its intent), 3 the result.
        fail_append(rt, 3, AppendOutcomeUnknownError("the database went away", path="x"))
        with pytest.raises(TurnInterruptedError) as caught:
            await rt.send(KEY, TOOL, idempotency_key="ik-9")
        err = caught.value
        assert err.stored is True and err.unavailable and err.idempotency_key == "ik-9"
        assert "same idempotency key" in str(err)
        assert rt.open_conversation(KEY) is None  # let go: the next message opens it afresh
        again = await rt.send(KEY, TOOL, idempotency_key="ik-9")
        assert again.status == "ok" and not again.replayed, again
        assert user_messages(rt, "note it") == 1
        assert len(again.entries) >= 4  # the stored message and call, then what the retry added

    run(with_runtime(home, go, backend=any_backend(home)))
    assert side_effects(home) == 1


@pytest.mark.parametrize(
    ("error", "stored"),
    [
        (AppendOutcomeUnknownError("gone mid-append", path="x"), None),
        (AppendError("nothing was appended", path="x"), False),
    ],
)
def test_a_turn_whose_first_append_fails_says_whether_its_message_was_stored(
    tmp_path: Path, any_backend: BackendMaker, error: Exception, stored: bool | None
) -> None:
    home = make_home(tmp_path)

    async def go(rt: Runtime) -> None:
        await rt.send(KEY, "hello")
        fail_append(rt, 1, error)
        with pytest.raises(TurnInterruptedError) as caught:
            await rt.send(KEY, "second", idempotency_key="ik-3")
        assert caught.value.stored is stored
        assert (await rt.send(KEY, "second", idempotency_key="ik-3")).status == "ok"
        assert user_messages(rt, "second") == 1

    run(with_runtime(home, go, backend=any_backend(home)))


def test_a_bad_idempotency_key_is_refused_before_anything_is_stored(tmp_path: Path, any_backend: BackendMaker) -> None:
    home = make_home(tmp_path)

    async def go(rt: Runtime) -> None:
        with pytest.raises(UsageError, match="idempotency key"):
            await rt.send(KEY, "hello", idempotency_key="has space")
        assert rt.open_conversation(KEY) is None or user_messages(rt, "hello") == 0

    run(with_runtime(home, go, backend=any_backend(home)))


def _item(i: int, role: str, *, key: str | None = None, stop: str | None = None, steered: bool = False) -> PathItem:
    msg: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": f"t{i}"}]}
    if stop is not None:
        msg["stopReason"] = stop
    data: dict[str, Any] = {"type": "message", "id": f"e{i}", "message": msg}
    meta: dict[str, Any] = {}
    if key is not None:
        meta["idempotencyKey"] = key
    if steered:
        meta["steered"] = True
    if meta:
        data["kurahi"] = meta
    return PathItem(f"e{i}", "message", data)


def test_find_turn_tells_an_answered_turn_from_one_that_broke_off_or_was_overtaken() -> None:
    answered = [
        _item(1, "user", key="k"),
        _item(2, "assistant", stop="toolUse"),
        _item(3, "toolResult"),
        _item(4, "user", key="s", steered=True),
        _item(5, "assistant", stop="stop"),
    ]
    found = find_turn(answered, "k")
    assert found is not None and found.result is not None
    assert found.result.status == "ok" and found.result.reply == "t5" and found.result.reply_entry_id == "e5"
    assert found.entries == ["e1", "e2", "e3", "e4", "e5"]
    broke = find_turn(answered[:3], "k")
    assert broke is not None and broke.result is None and broke.entries == ["e1", "e2", "e3"]
    overtaken = find_turn([*answered[:3], _item(6, "user", key="other"), _item(7, "assistant", stop="stop")], "k")
    assert overtaken is not None and overtaken.result is not None and overtaken.result.status == "error"
    assert "broke off" in (overtaken.result.error or "")
    assert find_turn(answered, "missing") is None
