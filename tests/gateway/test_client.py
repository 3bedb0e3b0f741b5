"""GatewayClient against a real gateway on loopback: every method, and errors as Kurahi errors."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from kurahi.errors import GatewayRequestError, GatewayUnavailableError
from kurahi.gateway.client import GatewayClient
from support.gateways import make_gateway_home, serve_in_thread

KEY = "agent:alice:main"


@pytest.fixture
def client(tmp_path: Path) -> Any:
    with serve_in_thread(make_gateway_home(tmp_path)) as s, GatewayClient(s.url, s.token, timeout=30) as c:
        yield s, c


def test_every_method_reaches_its_route_and_returns_what_the_route_says(client: Any) -> None:
    served, c = client
    assert c.health()["status"] == "ok"
    assert [a["id"] for a in c.agents()] == ["alice"]
    first = c.chat("alice", "remember the heron", key=KEY)
    assert first["status"] == "ok" and "ALICE-7F3A" in first["reply"]
    events = [e for e, _ in c.chat_stream("alice", "and the kingfisher", key=KEY)]
    assert events[-1] == "done" and "delta" in events
    assert [r["key"] for r in c.sessions("alice")] == [KEY]

    reset = c.reset("alice", KEY)
    assert reset["oldSessionId"] == first["sessionId"] and reset["newSessionId"] != first["sessionId"]

    job = c.start_job("alice", "a background job [[slow:50]]")
    deadline = time.monotonic() + 10
    while (state := c.job("alice", job["id"]))["status"] not in ("succeeded", "failed"):
        assert time.monotonic() < deadline, state
        time.sleep(0.05)
    assert state["status"] == "succeeded"

    assert c.apply_config({"defaults": {"queue": {"cap": 17}}})["defaults"]["queue"]["cap"] == 17
    assert json.loads(served.home.config.read_text())["defaults"]["queue"]["cap"] == 17
    assert c.swap_model("alice", "beta") == {"profile": "beta"}
    assert c.agents()[0]["model"] == "beta"

    chain = c.audit_chain()
    assert chain["verified"] and chain["entries"] >= 3
    actions = {r.action for r in served.gateway.audit.tail(50)}
    assert {"session.reset", "config.apply", "agent.model"} <= actions
    assert c.audit_chain(seq=1)["verified"]


def test_an_error_status_is_a_gateway_request_error_with_its_code(client: Any) -> None:
    served, c = client
    with pytest.raises(GatewayRequestError) as info:
        c.swap_model("alice", "no-such-profile")
    assert info.value.status in (404, 422) and "no-such-profile" in str(info.value)
    with pytest.raises(GatewayRequestError) as info:
        c.job("alice", "job_00000000")
    assert info.value.status == 404
    with pytest.raises(GatewayRequestError) as info:
        c.job("alice", "../config")
    assert info.value.status in (404, 422)
    with GatewayClient(served.url, "wrong-token", timeout=5) as bad, pytest.raises(GatewayRequestError) as info:
        bad.agents()
    assert info.value.status == 401 and "wrong-token" not in str(info.value)


def test_no_gateway_is_a_clear_unavailable_error(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    with pytest.raises(GatewayUnavailableError, match="no gateway is running"):
        GatewayClient.for_home(home)
    with GatewayClient("http://127.0.0.1:9", "t", timeout=2) as c, pytest.raises(GatewayUnavailableError):
        c.health()
