"""The gateway for operators: /metrics behind a scope, /api/ready, the access log, loopback-only binding."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kurahi.gateway.bind import check_bind, is_loopback
from kurahi.gateway.lock import gateway_info
from kurahi.resident.home import Home
from support.gateways import KURAHI, make_gateway_home, run_kurahi, serve_in_thread, start_gateway
from support.scrape import parse, total, value

CHAT = "/api/agents/alice/chat"


@pytest.fixture
def served(tmp_path: Path) -> Any:
    with serve_in_thread(make_gateway_home(tmp_path)) as s:
        yield s


def _pair(served: Any, *scopes: str) -> str:
    with served.client() as owner:
        r = owner.post("/api/devices", json={"name": "+".join(scopes), "scopes": list(scopes)})
        assert r.status_code == 201, r.text
        token: str = r.json()["token"]
    served.watch.add(token)
    return token


def test_metrics_show_the_turns_made_and_a_scrape_without_the_scope_is_refused(served: Any) -> None:
    scraper = _pair(served, "metrics")
    reader = _pair(served, "read", "chat")
    with served.client("") as anon, served.client(reader) as no_scope, served.client(scraper) as prom:
        r = anon.get("/metrics")
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        r = no_scope.get("/metrics")
        assert r.status_code == 403 and r.json()["error"] == {
            "status": 403,
            "code": "forbidden",
            "message": "this credential lacks the 'metrics' scope",
        }
        before = parse(prom.get("/metrics").text)
        with served.client() as owner:
            for text in ("one", "two", "three"):
                assert owner.post(CHAT, json={"message": text}).json()["status"] == "ok"
            failed = owner.post(CHAT, json={"message": "[[fail:error]]"}).json()
            assert failed["status"] == "error"
            assert owner.post(CHAT, json={"message": "x" * 300_000}).status_code == 422  # refused, not a turn
        r = prom.get("/metrics")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        after = parse(r.text)
        # Every counter read as the difference between two scrapes, as Prometheus's increase() does.
        assert value(after, "kurahi_turns_total", agent="alice", status="ok") == 3
        assert value(after, "kurahi_turns_total", agent="alice", status="error") == 1
        assert value(after, "kurahi_turn_duration_seconds_count", agent="alice") == 4
        assert value(after, "kurahi_turn_duration_seconds_sum", agent="alice") > 0
        chat_ok = dict(method="POST", route="/api/agents/{agent}/chat", status="200")
        assert value(after, "kurahi_http_request_duration_seconds_count", **chat_ok) == 4
        assert value(before, "kurahi_http_request_duration_seconds_count", **chat_ok) == 0
        assert value(after, "kurahi_http_errors_total", status="401", code="unauthorized") == 1
        assert value(after, "kurahi_http_errors_total", status="403", code="forbidden") == 1
        assert value(after, "kurahi_http_errors_total", status="422", code="invalid_request") == 1
        # fsync policy "turn": at least one fdatasync per turn, each timed.
        assert (
            total(after, "kurahi_fsync_duration_seconds_count") - total(before, "kurahi_fsync_duration_seconds_count")
            >= 4
        )
        assert ("kurahi_queue_depth", frozenset({("agent", "alice")})) in after
        assert value(after, "kurahi_queue_depth", agent="alice") == 0
        # An unknown path is one series, whatever the path: nobody can grow the label set.
        assert anon.get("/no/such/path/12345").status_code == 401
        assert prom.get("/no/such/path/67890").status_code == 404
        again = parse(prom.get("/metrics").text)
        assert (
            value(again, "kurahi_http_request_duration_seconds_count", method="GET", route="unmatched", status="404")
            == 1
        )
        assert (
            value(again, "kurahi_http_request_duration_seconds_count", method="GET", route="unmatched", status="401")
            == 1
        )
        assert not any("12345" in str(k) or "67890" in str(k) for k in again)


def test_ready_needs_no_credential_and_reports_each_check(served: Any) -> None:
    with served.client("") as anon:
        r = anon.get("/api/ready")
        assert r.status_code == 200
        assert r.json() == {"status": "ready", "checks": {"runtimes": "ok", "store": "ok", "home": "ok"}}
        assert anon.get("/api/health").json()["status"] == "ok"


def test_ready_fails_while_the_database_does_not_answer(tmp_path: Path, pg_server: Any, pg_url: str) -> None:
    from kurahi.gateway.routes import ready
    from kurahi.store.open import open_backend

    home = make_gateway_home(tmp_path)
    backend = open_backend(home.root, pg_url)
    with serve_in_thread(home, backend=backend) as s, s.client("") as anon:
        assert anon.get("/api/ready").json()["checks"]["store"] == "ok"
        # Every process of the cluster stopped (not killed): the database is there but does not answer.
        pids = _cluster_pids(pg_server.pid)
        old_timeout, ready.STORE_CHECK_TIMEOUT = ready.STORE_CHECK_TIMEOUT, 1.0
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            r = anon.get("/api/ready")
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)
            ready.STORE_CHECK_TIMEOUT = old_timeout
        assert r.status_code == 503
        body = r.json()
        assert body["error"]["code"] == "not_ready" and "store" in body["error"]["message"]
        assert body["checks"]["store"] == "the postgres store did not answer within 1 s"
        assert pg_url.split("@")[0].split(":")[-1] not in r.text  # never the password
        assert anon.get("/api/ready").status_code == 200  # back once it answers
    backend.close()


def _cluster_pids(postmaster: int) -> list[int]:
    pids = [postmaster]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
                pids.append(int(entry))
    return pids


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_addresses_are_accepted(host: str) -> None:
    assert is_loopback(host) and check_bind(host, allow_remote=False) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "no-such-host.invalid"])
def test_addresses_beyond_loopback_need_allow_remote(host: str) -> None:
    from kurahi.errors import UsageError

    assert not is_loopback(host)
    with pytest.raises(UsageError, match="--allow-remote"):
        check_bind(host, allow_remote=False)
    warning = check_bind(host, allow_remote=True)
    assert warning is not None and "TLS" in warning and host in warning


def test_gateway_run_refuses_to_listen_beyond_loopback_and_warns_once_when_allowed(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    refused = run_kurahi("gateway", "run", "--host", "0.0.0.0", "--port", "0", home=home)
    assert refused.returncode == 2, refused.stderr
    assert "refusing to listen on 0.0.0.0" in refused.stderr and "--allow-remote" in refused.stderr
    assert "Traceback" not in refused.stderr and gateway_info(home.lock) is None
    # Allowed: it listens (reached here over loopback) and says once that tokens need TLS in front.
    env = {**os.environ, "KOLO_HOME": str(home.root)}
    env.pop("KOLO_GATEWAY_TOKEN", None)
    cmd = [*KURAHI, "gateway", "run", "--host", "0.0.0.0", "--port", "0", "--allow-remote", "--no-access-log"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    try:
        assert proc.stderr is not None
        lines = [proc.stderr.readline(), proc.stderr.readline()]  # the warning, then "listening on"
        assert "listening on http://0.0.0.0:" in lines[1], lines
        info = gateway_info(home.lock)
        assert info is not None and info.pid == proc.pid
        with socket.create_connection(("127.0.0.1", info.port), timeout=10):
            pass
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=30)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    said = "".join(lines) + rest
    assert said.count("beyond loopback") == 1 and "Put TLS in front" in said


def test_the_access_log_has_method_path_status_and_duration_and_no_credential(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    token = home.token_file.read_text().strip()
    proc = start_gateway(home)
    try:
        from kurahi.gateway.client import GatewayClient

        with GatewayClient.for_home(home, timeout=30) as c:
            assert c.chat("alice", "hello")["status"] == "ok"
        import httpx

        port = gateway_info(home.lock).port  # type: ignore[union-attr]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as raw:
            # A token in the query (a mistaken client) and one in the header: neither may be logged.
            r = raw.get(
                f"/api/agents/alice/session?key=agent:alice:main&token={token}",
                headers={"Authorization": f"Bearer {token}"},
            )
            assert r.status_code == 200
            assert raw.get("/api/agents", headers={"Authorization": "Bearer not-the-token"}).status_code == 401
            # A percent-encoded newline cannot forge a line of the log.
            assert raw.get("/api/x%0a2026-01-01 access GET /forged 200 1.0ms owner").status_code == 401
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = (home.root / "gateway.log").read_text()
    access = [line for line in log.splitlines() if " access " in line]
    assert any(line.split(" access ", 1)[1].startswith("POST /api/agents/alice/chat 200 ") for line in access), log
    fields = next(x for x in access if "GET /api/agents/alice/session " in x).split(" access ", 1)[1].split()
    assert fields[:3] == ["GET", "/api/agents/alice/session", "200"]
    assert fields[3].endswith("ms") and float(fields[3][:-2]) >= 0 and fields[4] == "owner"
    assert any("GET /api/agents 401 " in x and x.endswith(" -") for x in access)
    assert not any(line.startswith("2026-01-01") for line in log.splitlines())
    assert any("GET /api/x\\x0a2026-01-01\\x20access" in x for x in access)
    assert token not in log and "not-the-token" not in log and "token=" not in log and "?" not in "".join(access)


def test_a_profile_whose_key_variable_is_unset_is_refused_at_apply_and_at_start(
    served: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KURAHI_UNSET_KEY_VAR", raising=False)
    profile = {
        "provider": "openai",
        "model": "m",
        "baseUrl": "http://127.0.0.1:9/v1",
        "apiKeyEnv": "KURAHI_UNSET_KEY_VAR",
    }
    config_before = served.home.config.read_bytes()
    with served.client() as owner:
        r = owner.post("/api/config/apply", json={"patch": {"models": {"real": profile}}})
        assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_config"
        assert "models.real.apiKeyEnv" in r.json()["error"]["message"]
        assert "KURAHI_UNSET_KEY_VAR is not set" in r.json()["error"]["message"]
        assert served.home.config.read_bytes() == config_before  # nothing written
        monkeypatch.setenv("KURAHI_UNSET_KEY_VAR", "sk-live-value-1234")
        r = owner.post("/api/config/apply", json={"patch": {"models": {"real": profile}}})
        assert r.status_code == 200, r.text
        assert "sk-live-value-1234" not in served.home.config.read_text()


def test_gateway_run_refuses_a_config_with_an_unset_key_variable(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    cfg = json.loads(home.config.read_text() or "{}")
    cfg.setdefault("models", {})["real"] = {
        "provider": "anthropic",
        "model": "c",
        "apiKeyEnv": "KURAHI_NOT_SET_AT_START",
    }
    home.config.write_text(json.dumps(cfg))
    env_had = os.environ.pop("KURAHI_NOT_SET_AT_START", None)
    assert env_had is None
    r = run_kurahi("gateway", "run", "--port", "0", home=home)
    assert r.returncode == 4, r.stderr
    assert "KURAHI_NOT_SET_AT_START is not set" in r.stderr and "Traceback" not in r.stderr
    assert gateway_info(home.lock) is None


def test_metrics_scope_can_be_paired_from_the_cli(tmp_path: Path) -> None:
    home: Home = make_gateway_home(tmp_path)
    r = run_kurahi("devices", "pair", "--name", "prometheus", "--scopes", "metrics", "--json", home=home)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["device"]["scopes"] == ["metrics"]


def test_an_in_process_restart_rechecks_key_variables_and_is_not_ready_meanwhile(
    served: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KURAHI_GONE_KEY", "sk-gone-1234")
    profile = {"provider": "openai", "model": "m", "baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "KURAHI_GONE_KEY"}
    with served.client() as owner, served.client("") as anon:
        assert owner.post("/api/config/apply", json={"patch": {"models": {"real": profile}}}).status_code == 200
        monkeypatch.delenv("KURAHI_GONE_KEY")
        r = owner.post("/api/gateway/restart", json={})
        assert r.status_code == 422 and "KURAHI_GONE_KEY is not set" in r.json()["error"]["message"]
        ready = anon.get("/api/ready")
        assert ready.status_code == 503 and ready.json()["checks"]["runtimes"] == "starting"
        monkeypatch.setenv("KURAHI_GONE_KEY", "sk-gone-1234")
        assert owner.post("/api/gateway/restart", json={}).status_code == 200
        assert anon.get("/api/ready").json()["status"] == "ready"
        assert owner.post(CHAT, json={"message": "still here"}).json()["status"] == "ok"
