"""GET /api/continuity/manifest through a real gateway on loopback, with the continuity plugin installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kurahi.continuity import install, load_signing_key, verify_manifest
from kurahi.resident.home import Home
from support.gateways import make_gateway_home, serve_in_thread

URL = "/api/continuity/manifest"


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return make_gateway_home(tmp_path)


def _value(m: dict[str, Any], kind: str, name: str) -> Any:
    (value,) = [e["value"] for e in m["entries"] if e["kind"] == kind and e["name"] == name]
    return value


def test_manifest_verifies_and_its_signer_is_stable_across_calls_and_a_restart(home: Home) -> None:
    with serve_in_thread(home, plugins=[install]) as s, s.client() as c:
        assert c.post("/api/agents/alice/chat", json={"message": "hello"}).status_code == 200
        first = c.get(URL, params={"agent": "alice"})
        assert first.status_code == 200, first.text
        second = c.get(URL, params={"agent": "alice"}).json()
    m = first.json()
    assert verify_manifest(m).ok and verify_manifest(second).ok
    assert m["fingerprint"] == second["fingerprint"] == load_signing_key(home).fingerprint
    assert m["entries"] == second["entries"], "nothing changed between the two calls"
    assert [e["kind"] for e in m["entries"]].count("transcript") == 1
    assert _value(m, "model", "primary") == {"provider": "deterministic", "model": "alpha", "profile": "alpha"}
    assert _value(m, "audit", "chain")["verified"] is True

    with serve_in_thread(home, plugins=[install]) as s, s.client() as c:
        after = c.get(URL, params={"agent": "alice"}).json()
    assert verify_manifest(after).ok
    assert after["fingerprint"] == m["fingerprint"] and after["publicKey"] == m["publicKey"]

    def kept(x: dict[str, Any]) -> list[tuple[str, str, Any]]:  # the hashes chain on what came before
        return [(e["kind"], e["name"], e["value"]) for e in x["entries"] if e["kind"] not in ("audit", "session")]

    assert kept(after) == kept(m), "identity, memory, role, model and transcripts are the same after a restart"
    assert _value(after, "audit", "chain")["entries"] > _value(m, "audit", "chain")["entries"]  # stop + start


def test_the_model_is_the_running_one(home: Home) -> None:
    with serve_in_thread(home, plugins=[install]) as s, s.client() as c:
        assert c.post("/api/agents/alice/model", json={"profile": "beta"}).status_code == 200
        m = c.get(URL, params={"agent": "alice"}).json()
    assert _value(m, "model", "primary") == {"provider": "deterministic", "model": "beta", "profile": "beta"}


def test_credentials_scopes_and_unknown_agents(home: Home) -> None:
    with serve_in_thread(home, plugins=[install]) as s:
        with s.client(token="") as anon:
            r = anon.get(URL, params={"agent": "alice"})
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        with s.client(token="wrong") as bad:
            assert bad.get(URL, params={"agent": "alice"}).status_code == 401
        with s.client() as c:
            r = c.get(URL, params={"agent": "bob"})
            assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_agent"
            assert c.get(URL, params={"agent": "../x"}).status_code == 422
            assert c.get(URL).status_code == 422
            chat_only = c.post("/api/devices", json={"name": "bot", "scopes": ["chat"]}).json()["token"]
            reader = c.post("/api/devices", json={"name": "viewer", "scopes": ["read"]}).json()["token"]
            s.watch.add(chat_only)
            s.watch.add(reader)
            spec = c.get("/openapi.json").json()
        op = spec["paths"][URL]["get"]
        assert op["operationId"] == "getContinuityManifest"
        assert op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/ManifestOut")
        assert {"401", "404", "422"} <= set(op["responses"])
        with s.client(token=chat_only) as c:
            assert c.get(URL, params={"agent": "alice"}).status_code == 403
        with s.client(token=reader) as c:
            m = c.get(URL, params={"agent": "alice"}).json()
    assert verify_manifest(m).ok
    assert sorted(d["name"] for d in _value(m, "role", "devices")) == ["bot", "viewer"]


def test_without_the_plugin_there_is_no_route(home: Home) -> None:
    with serve_in_thread(home) as s, s.client() as c:
        assert c.get(URL, params={"agent": "alice"}).status_code == 404
        assert URL not in c.get("/openapi.json").json()["paths"]


def test_another_agent_home(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path, agent="bob")
    with serve_in_thread(home, plugins=[install]) as s, s.client() as c:
        m = c.get(URL, params={"agent": "bob"}).json()
    assert m["agent"] == "bob" and verify_manifest(m).ok


def test_kurahi_gateway_run_serves_the_manifest(home: Home) -> None:
    """The CLI installs the plugin: a real `kurahi gateway run` process answers the route."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import httpx

    from kurahi.gateway.lock import gateway_info

    env = {**os.environ, "KOLO_HOME": str(home.root)}
    env.pop("KOLO_GATEWAY_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "kurahi.cli", "gateway", "run", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while (info := gateway_info(home.lock)) is None or info.pid != proc.pid:
            assert proc.poll() is None and time.monotonic() < deadline, "the gateway did not start"
            time.sleep(0.02)
        token = home.token_file.read_text().strip()
        r = httpx.get(
            f"http://127.0.0.1:{info.port}{URL}",
            params={"agent": "alice"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        assert token not in r.text
        assert verify_manifest(r.json()).ok
        assert r.json()["fingerprint"] == load_signing_key(home).fingerprint
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
