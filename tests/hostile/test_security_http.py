"""Security pass, HTTP: a real gateway on loopback, driven with what an attacker would send.

Raw request targets (``%2e%2e%2f``, ``%00``, backslashes, very long names) on every route that
takes an agent id, session key, job id or device id; hostile body fields; tool calls scripted
through chat against symlinks planted in the workspace (to ``/etc``, ``secrets/``, the owner
token); a chunked body over the limit; tokens compared in constant time; the client's own
check before an agent id goes into a URL. Every refusal is a 4xx JSON error, nothing under
the test's directory changes, and the leak watch of :func:`gateways.serve_in_thread` fails
the module if a token shows up in a response, a log record or a file outside ``secrets/``.
"""

from __future__ import annotations

import hmac
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kurahi.continuity.api import install
from kurahi.errors import GatewayRequestError, UsageError
from kurahi.gateway.client import GatewayClient
from kurahi.resident.devices import DeviceRegistry
from support.gateways import Served, make_gateway_home, serve_in_thread
from support.security import tree


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One gateway for the module; its workspace has links planted to /etc, secrets/ and the token."""
    root = tmp_path_factory.mktemp("http")
    home = make_gateway_home(root)
    ws = home.agent("alice").workspace
    os.symlink("/etc", ws / "etc")
    os.symlink(home.secrets, ws / "sec")
    os.symlink(home.token_file, ws / "tok.md")
    os.symlink(home.token_file, ws / "memory" / "tok.md")
    (root / "outside").mkdir()
    with serve_in_thread(home, plugins=[install]) as s:
        yield s


def raw(s: Served, request: bytes) -> tuple[int, bytes]:
    """Send bytes as they are (no client normalises the target) and return the status and the body."""
    host, port = s.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as conn:
        conn.sendall(request)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            if sep and b"content-length:" in head.lower():
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                if len(body) >= length:
                    break
    status = int(data.split(b" ", 2)[1])
    return status, data.partition(b"\r\n\r\n")[2]


def get(s: Served, target: str, *, method: str = "GET", token: str | None = None) -> tuple[int, bytes]:
    auth = f"Authorization: Bearer {s.token if token is None else token}\r\n" if token != "" else ""
    return raw(s, f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n".encode())


LONG = "a" * 5000
TARGETS = [
    ("agent ../ encoded", "/api/agents/..%2f..%2fsecrets/sessions", {404}),
    ("agent .. dot-encoded", "/api/agents/%2e%2e/sessions", {422}),
    ("agent ../../ dot-encoded", "/api/agents/%2e%2e%2f%2e%2e%2fsecrets/sessions", {404}),
    ("agent backslashes", "/api/agents/..%5c..%5csecrets/sessions", {422}),
    ("agent NUL", "/api/agents/alice%00/sessions", {422}),
    ("agent absolute", "/api/agents/%2fetc/sessions", {404}),
    ("agent too long", f"/api/agents/{LONG}/sessions", {422}),
    ("chat agent ../", "/api/agents/..%2fconfig/chat", {404, 405}),
    ("key ../ to the token", "/api/agents/alice/session?key=..%2f..%2fsecrets%2fgateway.token", {404}),
    ("transcript key ../", "/api/agents/alice/session/transcript?key=%2e%2e%2f%2e%2e%2fconfig.json", {404}),
    ("transcript key absolute", "/api/agents/alice/session/transcript?key=%2fetc%2fpasswd", {404}),
    ("key NUL", "/api/agents/alice/session?key=a%00b", {422}),
    ("key newline", "/api/agents/alice/session?key=a%0ab", {422}),
    ("key too long", "/api/agents/alice/session?key=" + "k" * 600, {422}),
    ("job id ../", "/api/agents/alice/jobs/..%2f..%2fjobs", {404}),
    ("job id shape", "/api/agents/alice/jobs/job_zz", {422}),
    ("job id NUL", "/api/agents/alice/jobs/job_1%00", {422}),
    ("recall agent ../", "/api/memory/recall?agent=..%2f..&q=x", {422}),
    ("recall query too long", "/api/memory/recall?agent=alice&q=" + "q" * 2000, {422}),
    ("manifest agent ../", "/api/continuity/manifest?agent=..%2fx", {422}),
    ("traversal from the root", "/%2e%2e/%2e%2e/etc/passwd", {404}),
    ("plain traversal", "/api/agents/alice/../../../etc/passwd", {404}),
]


@pytest.mark.parametrize(("what", "target", "statuses"), TARGETS, ids=[t[0] for t in TARGETS])
def test_request_targets_that_climb_out_are_refused(served: Served, what: str, target: str, statuses: set[int]) -> None:
    root = served.home.root.parent
    before = tree(root)
    status, body = get(served, target)
    assert status in statuses, (status, body[:300])
    assert json.loads(body)["error"]["status"] == status
    assert tree(root) == before


@pytest.mark.parametrize(
    ("method", "target", "statuses"),
    [
        ("DELETE", "/api/devices/..%2f..%2fdevices.json", {404}),
        ("DELETE", "/api/devices/dev_..", {422}),
        ("DELETE", "/api/devices/" + "dev_" + "f" * 100, {422}),
    ],
)
def test_device_ids_are_refused(served: Served, method: str, target: str, statuses: set[int]) -> None:
    before = tree(served.home.root.parent)
    status, body = get(served, target, method=method)
    assert status in statuses and json.loads(body)["error"]["status"] == status
    assert tree(served.home.root.parent) == before


@pytest.mark.parametrize("target", ["/api/health/../agents", "/api/health/..%2fagents", "/openapi.json/../api/agents"])
def test_a_public_path_is_no_way_around_the_token(served: Served, target: str) -> None:
    status, body = get(served, target, token="")
    assert status in (401, 404), body[:200]
    assert b"ALICE" not in body


BODIES = [
    ("chat key NUL", "/api/agents/alice/chat", {"message": "hi", "key": "a\x00b"}, 422),
    ("chat key control", "/api/agents/alice/chat", {"message": "hi", "key": "a\x1b[2Jb"}, 422),
    ("chat key too long", "/api/agents/alice/chat", {"message": "hi", "key": "k" * 513}, 422),
    ("chat unknown field", "/api/agents/alice/chat", {"message": "hi", "file": "../../x"}, 422),
    ("reset key NUL", "/api/agents/alice/sessions/reset", {"key": "\x00"}, 422),
    ("job key control", "/api/agents/alice/jobs", {"message": "hi", "key": "a\nb"}, 422),
    ("model profile ../", "/api/agents/alice/model", {"profile": "../../config"}, 422),
    ("pair name ../", "/api/devices", {"name": "../../x", "scopes": ["read"]}, 400),
    ("pair unknown scope", "/api/devices", {"name": "x", "scopes": ["root"]}, 422),
    (
        "apiKeyEnv naming the owner token",
        "/api/config/apply",
        {"patch": {"models": {"x": {"provider": "openai", "baseUrl": "http://h", "apiKeyEnv": "KOLO_GATEWAY_TOKEN"}}}},
        422,
    ),
]


@pytest.mark.parametrize(("what", "path", "body", "status"), BODIES, ids=[b[0] for b in BODIES])
def test_hostile_body_fields_are_refused(served: Served, what: str, path: str, body: Any, status: int) -> None:
    before = tree(served.home.root.parent)
    with served.client() as c:
        r = c.post(path, json=body)
    assert r.status_code == status, r.text
    assert r.json()["error"]["status"] == status and r.json()["error"]["message"]
    assert tree(served.home.root.parent) == before


# -- tools, scripted through chat -----------------------------------------------------------------

TOOL_CALLS = [
    ("read ../ to the token", 'read {"path": "../../../secrets/gateway.token"}', "may not contain '..'"),
    ("read absolute", 'read {"path": "/etc/passwd"}', "must be relative"),
    ("read via a link to /etc", 'read {"path": "etc/passwd"}', "leaves the workspace"),
    ("read via a link to secrets/", 'read {"path": "sec/gateway.token"}', "leaves the workspace"),
    ("read a link to the token", 'read {"path": "tok.md"}', "leaves the workspace"),
    ("read backslashes", 'read {"path": "..\\\\..\\\\secrets\\\\gateway.token"}', "backslash"),
    ("read NUL", 'read {"path": "IDENTITY.md\\u0000"}', "must be relative"),
    ("read a long name", 'read {"path": "' + "n" * 300 + '"}', "too long"),
    ("write ../", 'write {"path": "../../../outside/pwned.md", "content": "pwned"}', "may not contain '..'"),
    ("write via a link to secrets/", 'write {"path": "sec/gateway.token", "content": "pwned"}', "leaves the workspace"),
    ("write through a link to the token", 'write {"path": "tok.md", "content": "pwned"}', "leaves the workspace"),
    ("write the workspace itself", 'write {"path": ".", "content": "pwned"}', "is a directory"),
    ("list via a link to /etc", 'list {"path": "etc"}', "leaves the workspace"),
    ("list the home", 'list {"path": "../.."}', "may not contain '..'"),
    ("memory_append ../", 'memory_append {"text": "pwned", "file": "../../x.md"}', "plain name"),
    ("memory_append a link to the token", 'memory_append {"text": "pwned", "file": "tok.md"}', "leaves the workspace"),
]


@pytest.mark.parametrize(("what", "call", "says"), TOOL_CALLS, ids=[t[0] for t in TOOL_CALLS])
def test_tool_calls_through_chat_stay_in_the_workspace(served: Served, what: str, call: str, says: str) -> None:
    root = served.home.root.parent
    ws = served.home.agent("alice").workspace
    outside_ws = {k: v for k, v in tree(root).items() if not k.startswith("kolo/agents/")}
    workspace = tree(ws)
    with served.client() as c:
        r = c.post("/api/agents/alice/chat", json={"message": f"[[tool:{call}]]", "key": "hostile"})
    assert r.status_code == 200, r.text
    reply = r.json()["reply"]
    assert "error" in reply and says in reply, reply
    assert str(served.home.root) not in reply
    assert tree(ws) == workspace
    after = {k: v for k, v in tree(root).items() if not k.startswith("kolo/agents/")}
    changed = {k for k in set(after) | set(outside_ws) if after.get(k) != outside_ws.get(k)}
    assert changed <= {"kolo/audit/chain.jsonl", "kolo/run/hash-cache.json"}, changed


# -- sizes ------------------------------------------------------------------------------------


def test_a_chunked_body_over_the_limit_is_413(served: Served) -> None:
    chunk = b"a" * 65536
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(20)) + b"0\r\n\r\n"
    head = (
        "POST /api/agents/alice/chat HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {served.token}\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    before = tree(served.home.root.parent)
    status, reply = raw(served, head.encode() + body)
    assert status == 413, reply[:300]
    assert json.loads(reply)["error"]["code"] == "body_too_large"
    assert tree(served.home.root.parent) == before


def test_a_config_grown_past_its_limit_is_refused_and_unchanged(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    with serve_in_thread(home) as s, s.client() as c:
        many = {f"m{i:05d}": {"provider": "deterministic", "model": "x" * 100} for i in range(4500)}
        r = c.post("/api/config/apply", json={"patch": {"models": many}})
        assert r.status_code == 200, r.text[:300]
        kept = home.config.read_bytes()
        more = {f"n{i:05d}": {"provider": "deterministic", "model": "y" * 100} for i in range(4500)}
        r = c.post("/api/config/apply", json={"patch": {"models": more}})
        assert r.status_code == 422 and "limit" in r.json()["error"]["message"], r.text[:300]
        assert home.config.read_bytes() == kept
        assert c.get("/api/agents").status_code == 200


# -- tokens -----------------------------------------------------------------------------------


def test_every_token_check_is_constant_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner token and every stored device hash go through hmac.compare_digest, even after a match."""
    home = make_gateway_home(tmp_path)
    registry = DeviceRegistry(home.devices)
    tokens = [registry.pair(f"d{i}", "read")[1] for i in range(3)]
    calls: list[tuple[int, int]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    with serve_in_thread(home) as s:
        for t in tokens:
            s.watch.add(t)
        with s.client("kd_wrong") as wrong, s.client(tokens[0]) as first, s.client() as owner:
            calls.clear()
            assert wrong.get("/api/agents").status_code == 401
            assert len(calls) == 1 + 3  # the owner token, then every device
            calls.clear()
            assert first.get("/api/agents").status_code == 200
            assert len(calls) == 1 + 3  # a match does not stop the loop early
            calls.clear()
            assert owner.get("/api/agents").status_code == 200
            assert len(calls) == 1
            for near in (s.token[:-1], s.token + "x", s.token.upper(), tokens[1][:-2]):
                with s.client(near) as c:
                    assert c.get("/api/agents").status_code == 401


def test_a_registry_opened_to_others_while_running_is_a_clear_500(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    _, token = DeviceRegistry(home.devices).pair("phone", "read")
    with serve_in_thread(home) as s:
        s.watch.add(token)
        with s.client(token) as c:
            assert c.get("/api/agents").status_code == 200
            os.chmod(home.devices, 0o644)
            r = c.get("/api/agents")
            assert r.status_code == 500 and r.json()["error"]["code"] == "credentials_unusable"
            assert "chmod 600" in r.json()["error"]["message"]
            assert os.stat(home.devices).st_mode & 0o777 == 0o644  # refused, not quietly changed
            os.chmod(home.devices, 0o600)
            assert c.get("/api/agents").status_code == 200


# -- the client -----------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", ["../config/apply?", "..", "x/../../devices?x=", "alice/../bob", "%2e%2e"])
def test_the_client_checks_an_agent_id_before_it_becomes_a_url(served: Served, agent: str) -> None:
    _activity_written(served)
    before = tree(served.home.root.parent)
    client = GatewayClient(served.url, served.token)
    with client:
        for call in (
            lambda: client.chat(agent, "x"),
            lambda: list(client.chat_stream(agent, "x")),
            lambda: client.reset(agent),
            lambda: client.start_job(agent, "x"),
            lambda: client.sessions(agent),
            lambda: client.swap_model(agent, "beta"),
        ):
            with pytest.raises(UsageError, match="agent id"):
                call()
        with pytest.raises(GatewayRequestError) as info:
            client.job("alice", "../../config")
        assert info.value.status in (404, 422)
    assert tree(served.home.root.parent) == before


def _activity_written(served: Served) -> None:
    """Wait until no activity clock of an earlier test's turn is still to be written to the catalog.

    The runtime writes them about a second after a turn, from the gateway's thread; this
    module's tests share one gateway, so a snapshot of its home taken sooner could see the
    write land (the tests of tool calls make turns just before).
    """
    runtimes = list(served.gateway.runtimes.values())
    deadline = time.monotonic() + 60
    while any(rt._dirty or (rt._flusher is not None and not rt._flusher.done()) for rt in runtimes):
        assert time.monotonic() < deadline, "the activity clocks were never written"
        time.sleep(0.02)
