"""Provider retries through a real gateway on loopback, against the fake OpenAI-compatible server.

429 forever, Retry-After honoured and too long, a 5xx that passes, a refused connection:
each turn ends as the profile says, the metrics count the retries, and what was
acknowledged before is all still there.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.gateways import make_gateway_home, serve_in_thread
from support.scrape import parse, value
from support.wire_servers import Script, openai_text, serve

CHAT = "/api/agents/alice/chat"
KEY_VALUE = "sk-test-retry-key-0123456789"


@pytest.fixture
def model() -> Iterator[tuple[str, Script]]:
    with serve() as s:
        yield s


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("KURAHI_TEST_RETRY_KEY", KEY_VALUE)
    with serve_in_thread(make_gateway_home(tmp_path)) as s:
        s.watch.add(KEY_VALUE)  # the provider's key must never show up in a response, a log or a file
        yield s


def _use(served: Any, base_url: str, **profile: Any) -> None:
    """Put alice on an OpenAI-compatible profile at ``base_url`` (through config apply, as an operator would)."""
    real = {"provider": "openai", "model": "m", "baseUrl": base_url, "apiKeyEnv": "KURAHI_TEST_RETRY_KEY", **profile}
    with served.client() as owner:
        r = owner.post(
            "/api/config/apply", json={"patch": {"models": {"real": real}, "agents": {"alice": {"model": "real"}}}}
        )
        assert r.status_code == 200, r.text


def _transcript(served: Any) -> list[dict[str, Any]]:
    with served.client() as owner:
        r = owner.get("/api/agents/alice/session/transcript")
        assert r.status_code == 200
        return [json.loads(x) for x in r.text.splitlines()]


def _messages(served: Any) -> list[tuple[str, str]]:
    out = []
    for e in _transcript(served):
        if e.get("type") == "message":
            m = e["message"]
            text = "".join(c.get("text", "") for c in m["content"]) if isinstance(m["content"], list) else m["content"]
            out.append((m["role"], m.get("errorMessage") or text))
    return out


def test_a_provider_that_answers_429_forever_fails_the_turn_after_the_retries(
    served: Any, model: tuple[str, Script]
) -> None:
    url, script = model
    _use(served, url + "/v1", maxRetries=3, backoff={"initialMs": 20, "maxMs": 50})
    script.replies.append(openai_text("first answer"))
    with served.client() as owner:
        ok = owner.post(CHAT, json={"message": "before the limit"}).json()
        assert ok["status"] == "ok" and ok["reply"] == "first answer"
        script.default = {"status": 429, "error": "rate limited, slow down"}
        failed = owner.post(CHAT, json={"message": "during the limit"})
        assert failed.status_code == 200
        body = failed.json()
        assert body["status"] == "error"
        assert body["error"] == "openai: HTTP 429: Error code: 429 - rate limited, slow down (gave up after 3 retries)"
        assert len(script.requests) == 1 + 4  # one call, then the first try and three retries
        scraped = parse(owner.get("/metrics").text)
    assert value(scraped, "kurahi_provider_retries_total", agent="alice", reason="rate_limited") == 3
    assert value(scraped, "kurahi_turns_total", agent="alice", status="ok") == 1
    assert value(scraped, "kurahi_turns_total", agent="alice", status="error") == 1
    # Nothing acknowledged is lost: the first exchange, then the refused turn's message and its error.
    assert _messages(served) == [
        ("user", "before the limit"),
        ("assistant", "first answer"),
        ("user", "during the limit"),
        ("assistant", body["error"]),
    ]
    # Once the provider answers again, the session goes on from there.
    script.default = None
    script.replies.append(openai_text("back again"))
    with served.client() as owner:
        assert owner.post(CHAT, json={"message": "after"}).json()["reply"] == "back again"
    assert _messages(served)[-2:] == [("user", "after"), ("assistant", "back again")]
    headers = {k.lower(): v for k, v in script.requests[-1]["headers"].items()}
    assert headers["authorization"] == f"Bearer {KEY_VALUE}"  # the key the profile names, sent where it belongs


def test_retry_after_is_honoured(served: Any, model: tuple[str, Script]) -> None:
    url, script = model
    _use(served, url + "/v1", maxRetries=2, backoff={"initialMs": 1, "maxMs": 1})
    script.replies += [
        {"status": 429, "error": "wait", "headers": {"Retry-After": "1"}},
        {"status": 503, "error": "busy", "headers": {"retry-after-ms": "300"}},
        openai_text("patient answer"),
    ]
    with served.client() as owner:
        r = owner.post(CHAT, json={"message": "hello"}).json()
    assert r["status"] == "ok" and r["reply"] == "patient answer"
    at = [q["at"] for q in script.requests]
    assert len(at) == 3
    # Never sooner than asked (the backoff alone would have waited at most 1 ms).
    assert at[1] - at[0] >= 1.0 and at[2] - at[1] >= 0.3


def test_a_retry_after_longer_than_the_profile_waits_fails_at_once(served: Any, model: tuple[str, Script]) -> None:
    url, script = model
    _use(served, url + "/v1", maxRetries=5, backoff={"maxRetryAfterMs": 2000})
    script.default = {"status": 429, "error": "come back in an hour", "headers": {"Retry-After": "3600"}}
    with served.client() as owner:
        r = owner.post(CHAT, json={"message": "hello"}).json()
    assert r["status"] == "error" and len(script.requests) == 1
    assert r["error"] == (
        "openai: HTTP 429: Error code: 429 - come back in an hour "
        "(it asked to retry after 3600 s, longer than this profile waits)"
    )


def test_a_server_error_that_passes_is_one_good_turn_and_other_errors_are_not_retried(
    served: Any, model: tuple[str, Script]
) -> None:
    url, script = model
    _use(served, url + "/v1", maxRetries=2, backoff={"initialMs": 5, "maxMs": 5})
    script.replies += [{"status": 502, "error": "bad gateway"}, openai_text("fine now")]
    with served.client() as owner:
        assert owner.post(CHAT, json={"message": "one"}).json()["reply"] == "fine now"
        assert len(script.requests) == 2
        script.replies.append({"status": 400, "error": "your request is wrong"})
        r = owner.post(CHAT, json={"message": "two"}).json()
        assert r["status"] == "error" and r["error"] == "openai: HTTP 400: Error code: 400 - your request is wrong"
        assert len(script.requests) == 3  # a 400 is the caller's mistake: trying again cannot help
        scraped = parse(owner.get("/metrics").text)
    assert value(scraped, "kurahi_provider_retries_total", agent="alice", reason="server_error") == 1
    # One turn's assistant entry per turn: the failed attempt wrote nothing.
    assert [role for role, _ in _messages(served)] == ["user", "assistant", "user", "assistant"]


def test_a_connection_error_names_the_host_and_never_the_key(served: Any) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _use(served, f"http://127.0.0.1:{port}/v1/secret-path?api-key=query-secret", maxRetries=1, backoff={"initialMs": 5})
    with served.client() as owner:
        r = owner.post(CHAT, json={"message": "anyone there?"}).json()
        scraped = parse(owner.get("/metrics").text)
    assert r["status"] == "error"
    assert r["error"].startswith(f"openai: cannot connect to 127.0.0.1:{port}")
    assert r["error"].endswith("(gave up after 1 retry)")
    assert KEY_VALUE not in r["error"] and "query-secret" not in r["error"] and "secret-path" not in r["error"]
    assert value(scraped, "kurahi_provider_retries_total", agent="alice", reason="connection") == 1
    assert _messages(served)[-1] == ("assistant", r["error"])
