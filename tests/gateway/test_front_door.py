"""The gateway's front door (issue 29, item 7): `run/` not a directory, the Host header (DNS
rebinding), rate limits on credentials, no absolute path to an unknown caller, the viewer's
cookie `Secure` behind a TLS proxy, and viewer sessions ended only by their own credential.

Real gateways on loopback: `kurahi gateway run` in a subprocess where its flags matter, the
viewer in a thread otherwise (as the other viewer tests run it).
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from kurahi.gateway.lock import gateway_info
from kurahi.gateway.ratelimit import FAILURES_BURST, LOGINS_BURST
from kurahi.resident.devices import DeviceRegistry
from kurahi.resident.home import Home
from kurahi.ui.access import COOKIE, MAX_PER_CREDENTIAL
from support.gateways import make_gateway_home, run_kurahi, start_gateway
from support.security import tree
from support.ui_server import serve_viewer
from support.waiting import wait_for


@contextmanager
def gateway(home: Home, *extra: str) -> Iterator[str]:
    """``kurahi gateway run EXTRA`` on ``home``: its base URL; stopped (and its exit checked) after."""
    proc = start_gateway(home, *extra)
    info = gateway_info(home.lock)
    assert info is not None
    try:
        yield f"http://127.0.0.1:{info.port}"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, (home.root / "gateway.log").read_text()[-2000:]


def _pair(home: Home, scopes: list[str]) -> str:
    _, token = DeviceRegistry(home.devices).pair("dev", scopes)
    return token


def test_run_that_is_a_file_or_a_symlink_is_refused_in_one_line(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    run = home.root / "run"
    for make in ("file", "symlink"):
        if run.is_dir() and not run.is_symlink():
            run.rmdir()
        else:
            run.unlink(missing_ok=True)
        if make == "file":
            run.write_text("not a directory\n")
        else:
            run.symlink_to(outside)
        before = tree(tmp_path)
        res = run_kurahi("gateway", "run", "--port", "0", home=home)
        assert res.returncode == 4, res.stderr
        assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1, res.stderr
        assert f"{run}: the gateway's run directory is a" in res.stderr, res.stderr
        assert tree(tmp_path) == before and not any(outside.iterdir())


def test_the_host_header_must_name_the_bind_address_unless_allow_remote(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    token = home.token_file.read_text().strip()
    with gateway(home) as url:
        port = url.rsplit(":", 1)[1]
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "10.0.0.1"):
            for path, auth in (("/api/health", {}), ("/api/agents", {"Authorization": f"Bearer {token}"})):
                r = httpx.get(url + path, headers={"Host": host, **auth})
                assert r.status_code == 421, (host, path, r.text)
                assert r.json()["error"]["code"] == "misdirected_request"
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", f"[::1]:{port}"):
            assert httpx.get(url + "/api/health", headers={"Host": host}).status_code == 200, host
    with gateway(home, "--allow-remote") as url:  # reached by names Kurahi cannot know: not checked
        assert httpx.get(url + "/api/health", headers={"Host": "gateway.example"}).status_code == 200


def test_unknown_callers_never_see_an_absolute_path(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    token = home.token_file.read_text().strip()
    with gateway(home) as url:
        home.devices.write_text("{}")
        home.devices.chmod(0o644)  # open to others: the credentials cannot be checked
        r = httpx.get(url + "/api/agents", headers={"Authorization": "Bearer not-a-token"})
        assert r.status_code == 500 and r.json()["error"]["code"] == "credentials_unusable", r.text
        r2 = httpx.post(url + "/ui/api/login", json={"token": "not-a-token"})
        assert r2.status_code == 500, r2.text
        for body in (r.text, r2.text):
            assert str(home.root) not in body and str(tmp_path) not in body, body
            assert "<home>/devices.json" in body, body  # still says which file is wrong
        # The owner, once known, is told where the file is.
        r3 = httpx.get(url + "/api/devices", headers={"Authorization": f"Bearer {token}"})
        assert str(home.devices) in r3.text, r3.text
        home.devices.chmod(0o600)


def _login(url: str, token: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(url + "/ui/api/login", json={"token": token}, headers=headers or {})


def test_the_viewer_cookie_is_secure_when_a_trusted_proxy_says_https(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    token = home.token_file.read_text().strip()
    https = {"X-Forwarded-Proto": "https"}
    with gateway(home) as url:  # no proxy named: the header is the client's word, ignored
        assert "secure" not in _login(url, token, https).headers["set-cookie"].lower()
    with gateway(home, "--trust-proxy", "127.0.0.1") as url:
        cookie = _login(url, token, https).headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}=") and "; secure" in cookie.lower(), cookie
        assert "secure" not in _login(url, token).headers["set-cookie"].lower()  # the proxy spoke plain HTTP


def test_wrong_bearer_tokens_are_rate_limited_per_address(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    token = home.token_file.read_text().strip()
    with gateway(home) as url, httpx.Client(base_url=url) as c:
        codes = []
        for i in range(FAILURES_BURST * 3):
            r = c.get("/api/agents", headers={"Authorization": f"Bearer wrong-{i}"})
            codes.append(r.status_code)
            if r.status_code == 429:
                break
        assert codes[-1] == 429 and set(codes[:-1]) == {401} and len(codes) > FAILURES_BURST, codes
        assert r.json()["error"]["code"] == "too_many_failures" and int(r.headers["retry-after"]) >= 1
        # A request without a token is no guess: still a 401 that says what is missing.
        assert c.get("/api/agents").status_code == 401
        # The bucket refills: the owner gets in again without a restart.
        wait_for(lambda: c.get("/api/agents", headers={"Authorization": f"Bearer {token}"}).status_code == 200,
                 "the owner served again after the refill", limit=30)  # fmt: skip


def test_a_device_cannot_end_anothers_viewer_session_and_its_logins_are_limited(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    device = _pair(home, ["read"])
    with serve_viewer(home) as v:
        v.watch.add(device)
        with v.client() as owner:
            v.login(owner)
            assert owner.get("/ui/api/me").json()["actor"] == "owner"
            devices = []
            for _ in range(MAX_PER_CREDENTIAL + 1):
                b = v.client()
                v.login(b, device)
                devices.append(b)
            # The device's ninth session ended its own first one, and nobody else's.
            assert devices[0].get("/ui/api/me").status_code == 401
            assert all(b.get("/ui/api/me").status_code == 200 for b in devices[1:])
            assert owner.get("/ui/api/me").json()["actor"] == "owner"
            # Logging in faster than the bucket allows is refused; the owner stays logged in.
            codes = []
            with v.client() as b:
                for _ in range(LOGINS_BURST):
                    codes.append(b.post("/ui/api/login", json={"token": device}).status_code)
            assert 429 in codes, codes
            assert owner.get("/ui/api/me").status_code == 200
            for b in devices:
                b.close()


def test_wrong_login_tokens_count_with_wrong_bearer_tokens(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    with serve_viewer(home) as v, v.client() as b:
        codes = [b.post("/ui/api/login", json={"token": f"wrong-{i}"}).status_code for i in range(FAILURES_BURST * 3)]
        assert codes.index(429) >= FAILURES_BURST and set(codes[: codes.index(429)]) == {401}, codes
        r = b.get("/api/agents", headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_failures"


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def test_a_catalog_that_cannot_be_written_refuses_chats_and_the_gateway_stops_cleanly(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    token = home.token_file.read_text().strip()
    sessions = home.root / "agents" / "alice" / "sessions"
    catalog, lock = sessions / "sessions.json", sessions / "sessions.json.lock"
    proc = start_gateway(home)
    info = gateway_info(home.lock)
    assert info is not None
    url = f"http://127.0.0.1:{info.port}"
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as c:

        def chat(text: str) -> httpx.Response:
            return c.post("/api/agents/alice/chat", json={"message": text})

        assert chat("hello").json()["status"] == "ok"
        transcript = sessions / json.loads(catalog.read_text())["agent:alice:main"]["sessionFile"]
        lock.mkdir()  # the catalog's lock file damaged: no write of the catalog can succeed
        # The turns before the clock write failed were stored; from then on chats are refused.
        wait_for(lambda: chat("are you there?").status_code == 503, "a chat refused")
        before = _lines(transcript)
        r = chat("refused, so never stored")
        assert r.status_code == 503 and r.json()["error"]["code"] == "catalog_unwritable", r.text
        assert int(r.headers["retry-after"]) >= 1 and "nothing was appended" in r.text
        assert _lines(transcript) == before and b"never stored" not in transcript.read_bytes()
        # Repaired: the next chat writes the kept clocks first, then is served.
        lock.rmdir()
        clock_before = json.loads(catalog.read_text())["agent:alice:main"]["lastInteractionAt"]
        assert chat("back again").json()["status"] == "ok"
        assert json.loads(catalog.read_text())["agent:alice:main"]["lastInteractionAt"] > clock_before
        # Damaged again and stopped: the gateway says which clocks it could not keep, and exits 0.
        lock.mkdir()
        assert chat("one more").json()["status"] == "ok"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    log = (home.root / "gateway.log").read_text()
    assert "Traceback" not in log, log
    assert "warning: agent alice: the activity clocks of 1 session(s) (agent:alice:main) could not be written" in log
