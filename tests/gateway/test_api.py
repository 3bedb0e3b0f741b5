"""The HTTP API on a real server on loopback: auth and scopes, chat, sessions, jobs, config, devices, memory, audit."""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from kurahi.resident.init import init_home
from support.gateways import make_gateway_home, serve_in_thread

KEY = "agent:alice:main"


@pytest.fixture
def served(tmp_path: Path) -> Any:
    with serve_in_thread(make_gateway_home(tmp_path)) as s:
        yield s


def test_init_lays_out_the_home_with_private_secrets(tmp_path: Path) -> None:
    root = tmp_path / "kolo"
    first = init_home(root, "alice")
    assert first.marker and first.marker.startswith("ALICE-")
    for rel in (
        "config.json",
        "secrets/gateway.token",
        "agents/alice/workspace/IDENTITY.md",
        "agents/alice/workspace/MEMORY.md",
    ):
        assert (root / rel).is_file(), rel
    assert (root / "agents/alice/workspace/memory").is_dir()
    assert stat.S_IMODE(os.stat(root / "secrets").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(root / "secrets/gateway.token").st_mode) == 0o600
    token = (root / "secrets/gateway.token").read_text().strip()
    assert len(token) >= 40
    identity = (root / "agents/alice/workspace/IDENTITY.md").read_bytes()
    again = init_home(root, "alice")
    assert again.created == [] and (root / "secrets/gateway.token").read_text().strip() == token
    assert (root / "agents/alice/workspace/IDENTITY.md").read_bytes() == identity
    assert token not in json.dumps(first.to_dict())


def test_health_needs_no_token_and_everything_else_does(served: Any) -> None:
    with served.client("") as anon, served.client("wrong-token") as wrong, served.client() as owner:
        assert anon.get("/api/health").json()["status"] == "ok"
        r = anon.get("/api/agents")
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"
        assert wrong.get("/api/agents").status_code == 401
        agents = owner.get("/api/agents").json()
        assert agents == [{"id": "alice", "model": "alpha", "sessions": 0, "marker": "ALICE-7F3A"}]


def test_device_scopes_are_enforced_and_revocation_is_immediate(served: Any) -> None:
    with served.client() as owner:
        r = owner.post("/api/devices", json={"name": "phone", "scopes": ["read"]})
        assert r.status_code == 201
        reader_token = r.json()["token"]
        served.watch.add(reader_token)
        device_id = r.json()["device"]["id"]
        assert "tokenSha256" not in json.dumps(owner.get("/api/devices").json())
        with served.client(reader_token) as reader:
            assert reader.get("/api/agents").status_code == 200
            r = reader.post("/api/agents/alice/chat", json={"message": "hi"})
            assert r.status_code == 403 and "'chat' scope" in r.json()["error"]["message"]
            assert reader.get("/api/config").status_code == 403
            assert reader.post("/api/devices", json={"name": "x", "scopes": ["admin"]}).status_code == 403
            assert owner.delete(f"/api/devices/{device_id}").status_code == 200
            assert reader.get("/api/agents").status_code == 401
    registry = json.loads(served.home.devices.read_text())
    assert reader_token not in served.home.devices.read_text()
    assert registry["devices"][0]["revokedAt"]


def test_chat_json_and_sse_and_the_transcript(served: Any) -> None:
    with served.client() as c:
        r = c.post("/api/agents/alice/chat", json={"message": "remember PURPLE-GIRAFFE"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["status"] == "ok" and body["reply"].startswith("[ALICE-7F3A] (alpha)")
        events: list[tuple[str, Any]] = []
        with c.stream("POST", "/api/agents/alice/chat", json={"message": "and now? [[slow:30]]", "stream": True}) as s:
            assert s.headers["content-type"].startswith("text/event-stream")
            event = ""
            for line in s.iter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    events.append((event, json.loads(line[6:])))
        kinds = [k for k, _ in events]
        assert kinds[-1] == "done" and "delta" in kinds and kinds.count("entry") == 2
        assert events[-1][1]["status"] == "ok"
        assert "".join(d["text"] for k, d in events if k == "delta") == events[-1][1]["reply"]
        t = c.get("/api/agents/alice/session/transcript", params={"key": KEY})
        lines = [json.loads(x) for x in t.text.splitlines()]
        assert lines[0]["type"] == "session" and lines[0]["id"] == body["sessionId"]
        assert any("PURPLE-GIRAFFE" in json.dumps(x) for x in lines)
        one = c.get("/api/agents/alice/session", params={"key": KEY}).json()
        assert one["sessionId"] == body["sessionId"] and one["entries"] == 4


def test_reset_keeps_and_links_the_old_transcript(served: Any) -> None:
    with served.client() as c:
        first = c.post("/api/agents/alice/chat", json={"message": "before the reset"}).json()
        r = c.post("/api/agents/alice/sessions/reset", json={"key": KEY}).json()
        assert r["oldSessionId"] == first["sessionId"] and r["newSessionId"] != first["sessionId"]
        after = c.post("/api/agents/alice/chat", json={"message": "after"}).json()
        assert after["sessionId"] == r["newSessionId"]
        rows = c.get("/api/agents/alice/sessions").json()
    assert rows[0]["previousSessionId"] == first["sessionId"]
    sessions = served.home.agent("alice").sessions
    old = sessions / f"{first['sessionId']}.jsonl"
    assert old.exists() and "before the reset" in old.read_text()
    header = json.loads((sessions / f"{r['newSessionId']}.jsonl").read_text().splitlines()[0])
    assert header["parentSession"] == str(old)


def test_jobs_run_in_the_background(served: Any) -> None:
    with served.client() as c:
        r = c.post("/api/agents/alice/jobs", json={"message": "background [[slow:100]]"})
        assert r.status_code == 202 and r.json()["status"] in ("queued", "running")
        jid = r.json()["id"]
        deadline = time.monotonic() + 10
        while c.get(f"/api/agents/alice/jobs/{jid}").json()["status"] != "succeeded":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert [j["id"] for j in c.get("/api/agents/alice/jobs").json()] == [jid]
        assert c.get("/api/agents/alice/jobs/job_ffff").status_code == 404


def test_config_apply_reloads_in_place_and_refuses_a_breaking_patch(served: Any) -> None:
    with served.client() as c:
        before = c.post("/api/agents/alice/chat", json={"message": "one"}).json()
        r = c.post("/api/config/apply", json={"patch": {"agents": {"alice": {"model": "beta"}}}})
        assert r.status_code == 200, r.text
        after = c.post("/api/agents/alice/chat", json={"message": "two"}).json()
        assert "(beta)" in after["reply"] and after["sessionId"] == before["sessionId"]  # same session, new model
        stored = served.home.config.read_bytes()
        bad = c.post("/api/config/apply", json={"patch": {"agents": {"alice": {"model": "nope"}}}})
        assert bad.status_code == 422 and "unknown model profile 'nope'" in bad.json()["error"]["message"]
        worse = c.post("/api/config/apply", json={"patch": {"agents": {"alice": {"queue": {"mode": "yell"}}}}})
        assert worse.status_code == 422
        assert served.home.config.read_bytes() == stored
        assert "(beta)" in c.post("/api/agents/alice/chat", json={"message": "three"}).json()["reply"]


@pytest.mark.parametrize(
    "body",
    [
        b'{"patch": {"models": {"alpha": {"timeoutS": 1e999}}}}',
        b'{"patch": {"models": {"gamma": {"timeoutS": NaN}}}}',
        b'{"patch": {"models": {"gamma": {"model": "\\ud800"}}}}',
    ],
    ids=["infinity", "nan", "lone surrogate"],
)
def test_config_apply_refuses_what_json_cannot_hold(served: Any, body: bytes) -> None:
    # Found by fuzzing: Python's JSON reader (FastAPI's) takes 1e999, NaN and lone surrogate
    # escapes. Infinity validated as a number but was written as null, so the next start
    # failed on its own config; a lone surrogate could not be written at all (a 500).
    stored = served.home.config.read_bytes()
    with served.client() as c:
        r = c.post("/api/config/apply", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 422, r.text
        assert r.json()["error"]["code"] == "invalid_config"
    assert served.home.config.read_bytes() == stored


def test_memory_recall_is_deterministic(served: Any) -> None:
    ws = served.home.agent("alice").workspace
    (ws / "memory" / "facts.md").write_text(
        "- The harbour lantern is cobalt.\n- Orchard gate code is 4471.\n<!-- kurahi:action x -->\n"
    )
    with served.client() as c:
        r = c.get("/api/memory/recall", params={"agent": "alice", "q": "what colour is the lantern?", "limit": 3})
        hits = r.json()["hits"]
        assert hits[0] == {"file": "memory/facts.md", "line": 1, "text": "- The harbour lantern is cobalt.", "score": 1}
        assert (
            r.json()
            == c.get(
                "/api/memory/recall", params={"agent": "alice", "q": "what colour is the lantern?", "limit": 3}
            ).json()
        )
        assert c.get("/api/memory/recall", params={"agent": "ghost", "q": "x"}).status_code == 404


def test_audit_chain_records_mutations_and_verifies(served: Any) -> None:
    with served.client() as c:
        c.post("/api/config/apply", json={"patch": {"defaults": {"queue": {"cap": 10}}}})
        r = c.post("/api/devices", json={"name": "tab", "scopes": ["chat"]})
        served.watch.add(r.json()["token"])
        chain = c.get("/api/audit/chain", params={"seq": 1}).json()
    assert chain["verified"] is True and chain["entries"] >= 3 and chain["isAncestor"] is True
    actions = [json.loads(x)["action"] for x in served.home.audit.read_text().splitlines()]
    assert actions[:3] == ["gateway.start", "config.apply", "device.pair"]


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("GET", "/api/agents/..%2Fetc/sessions", None, 404),
        ("GET", "/api/agents/ghost/sessions", None, 404),
        ("GET", "/api/agents/Alice/sessions", None, 422),
        ("POST", "/api/agents/alice/chat", {"message": "hi", "key": "a\x00b"}, 422),
        ("POST", "/api/agents/alice/chat", {"message": "hi", "key": "k" * 10_000}, 422),
        ("POST", "/api/agents/alice/chat", {"message": ""}, 422),
        ("POST", "/api/agents/alice/chat", {"message": "hi", "extra": 1}, 422),
        ("GET", "/api/agents/alice/session", None, 404),
        ("DELETE", "/api/devices/dev_00", None, 404),
        ("GET", "/api/memory/recall?agent=../x&q=a", None, 422),
    ],
)
def test_bad_requests_get_clear_json_errors(served: Any, method: str, path: str, body: Any, status: int) -> None:
    with served.client() as c:
        r = c.request(method, path, json=body)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["status"] == status and err["message"]


def test_malformed_json_and_oversized_requests(served: Any) -> None:
    with served.client() as c:
        r = c.post("/api/agents/alice/chat", content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"
        r = c.post("/api/agents/alice/chat", json={"message": "x" * (2 * 1024 * 1024)})
        assert r.status_code == 413
    host, port = served.url.removeprefix("http://").split(":")
    for head, body, expect in [
        (f"Content-Length: {100 * 1024 * 1024}\r\nContent-Type: application/json\r\n", b"{", b" 413 "),
        ("X-Big: " + "a" * 20_000 + "\r\n", b"", b" 431 "),
    ]:
        with socket.create_connection((host, int(port)), timeout=10) as s:
            auth = f"Authorization: Bearer {served.token}\r\n"
            s.sendall(f"POST /api/agents/alice/chat HTTP/1.1\r\nHost: x\r\n{auth}{head}\r\n".encode() + body)
            reply = s.recv(400)
        assert expect in reply.split(b"\r\n")[0], reply
        assert b'"error"' in reply  # a JSON error body, not a bare status
    assert not list(served.home.agent("alice").sessions.glob("*.jsonl"))  # nothing was stored
