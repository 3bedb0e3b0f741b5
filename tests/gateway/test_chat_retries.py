"""What a chat client acts on (issue 29): idempotency keys, and a store out of reach as 503 with Retry-After."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kurahi.errors import AppendError, DatabaseUnavailableError, LockHeldError, TurnInterruptedError
from kurahi.gateway.http import from_kurahi
from support.gateways import make_gateway_home, serve_in_thread


@pytest.fixture
def served(tmp_path: Path) -> Any:
    with serve_in_thread(make_gateway_home(tmp_path)) as s:
        yield s


def test_a_message_sent_again_with_its_key_is_answered_from_the_stored_turn(served: Any) -> None:
    with served.client() as c:
        body = {"message": 'hi ik-one [[tool:memory_append {"text": "x1"}]]', "idempotencyKey": "client-1"}
        first = c.post("/api/agents/alice/chat", json=body)
        assert first.status_code == 200 and first.json()["replayed"] is False, first.text
        assert first.headers["idempotency-key"] == "client-1" == first.json()["idempotencyKey"]
        again = c.post(
            "/api/agents/alice/chat", json={"message": body["message"]}, headers={"Idempotency-Key": "client-1"}
        )
        assert again.status_code == 200 and again.json()["replayed"] is True, again.text
        assert again.json()["entries"] == first.json()["entries"] and again.json()["reply"] == first.json()["reply"]
        lines = c.get("/api/agents/alice/session/transcript").text.splitlines()
        assert sum(1 for line in lines if '"role":"user"' in line and "ik-one" in line) == 1
        keyless = c.post("/api/agents/alice/chat", json={"message": "no key"})
        made = keyless.json()["idempotencyKey"]
        assert keyless.status_code == 200 and made.startswith("ik-") and keyless.headers["idempotency-key"] == made


@pytest.mark.parametrize(
    ("headers", "body", "says"),
    [
        ({"Idempotency-Key": "has space"}, {}, "Idempotency-Key header"),
        ({"Idempotency-Key": "a"}, {"idempotencyKey": "b"}, "differ"),
    ],
)
def test_a_bad_idempotency_key_is_refused_with_400(
    served: Any, headers: dict[str, str], body: dict[str, str], says: str
) -> None:
    with served.client() as c:
        r = c.post("/api/agents/alice/chat", json={"message": "hello", **body}, headers=headers)
        assert r.status_code == 400 and says in r.json()["error"]["message"], r.text
        assert r.json()["error"]["code"] == "bad_request"


def test_a_store_out_of_reach_is_503_with_retry_after_and_a_stopped_turn_says_what_was_stored() -> None:
    down = DatabaseUnavailableError("cannot reach the database: refused", where="postgresql://u@h:1/db")
    err = from_kurahi(down)
    assert err.status == 503 and err.code == "store_unavailable" and err.headers["Retry-After"] == "1"
    try:
        try:
            raise down
        except DatabaseUnavailableError as exc:
            raise AppendError("append failed, nothing was appended", path="t.jsonl") from exc
    except AppendError as wrapped:
        assert from_kurahi(wrapped).status == 503  # what it comes down to counts, not its class
    stopped = TurnInterruptedError("the turn stopped", stored=True, idempotency_key="k1", unavailable=True)
    err = from_kurahi(stopped)
    assert err.status == 503 and err.extra == {"stored": True, "idempotencyKey": "k1"}
    assert err.body()["stored"] is True and "Retry-After" in err.headers
    busy = from_kurahi(TurnInterruptedError("taken over", stored=None, idempotency_key="k2", unavailable=False))
    assert busy.status == 409 and busy.code == "busy" and busy.extra["stored"] is None
    assert from_kurahi(LockHeldError("held")).status == 409 and from_kurahi(LockHeldError("held")).extra == {}


@pytest.mark.parametrize(("unavailable", "status"), [(True, 503), (False, 409)])
def test_a_stopped_turns_answer_carries_the_idempotency_key_header_too(
    served: Any, monkeypatch: pytest.MonkeyPatch, unavailable: bool, status: int
) -> None:
    from kurahi.agent.runtime import Runtime

    async def stopped(self: Any, *args: Any, idempotency_key: str, **kwargs: Any) -> Any:
        raise TurnInterruptedError(
            "the turn stopped", stored=True, idempotency_key=idempotency_key, unavailable=unavailable
        )

    monkeypatch.setattr(Runtime, "send", stopped)
    with served.client() as c:
        r = c.post("/api/agents/alice/chat", json={"message": "hello", "idempotencyKey": "client-9"})
        assert r.status_code == status, r.text
        assert r.json()["error"]["idempotencyKey"] == "client-9"
        assert r.headers.get("idempotency-key") == "client-9", dict(r.headers)
