"""How the suite finds and watches an OpenClaw gateway it did not start (no OpenClaw needed).

A stand-in ``openclaw`` that only prints a known release, and a loopback server that answers
``/readyz`` as OpenClaw does (``uptimeMs`` without a token), are enough for what is tested
here: the port found as OpenClaw's CLI finds it, bad values named, and the serving server's
start time read from its uptime.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kurahi.continuity.targets.openclaw.runtime import DEFAULT_PORT, OpenClawRuntime, attached_port
from kurahi.errors import UsageError


@pytest.fixture
def binary(tmp_path: Path) -> str:
    path = tmp_path / "openclaw"
    path.write_text('#!/bin/sh\necho "OpenClaw 2026.9.6 (0000000)"\n')
    path.chmod(0o755)
    return str(path)


def test_the_port_is_found_as_openclaws_cli_finds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENCLAW_GATEWAY_PORT", raising=False)
    assert attached_port({}) == DEFAULT_PORT == 18789
    assert attached_port({"gateway": {"port": 19001}}) == 19001
    monkeypatch.setenv("OPENCLAW_GATEWAY_PORT", "19002")
    assert attached_port({"gateway": {"port": 19001}}) == 19002


@pytest.mark.parametrize(
    ("env", "config", "named"),
    [
        ("abc", None, "OPENCLAW_GATEWAY_PORT: 'abc' is not a port"),
        (None, 70000, "state/openclaw.json: gateway.port: 70000 is not a port"),
    ],
)
def test_a_port_that_is_not_one_is_named(
    monkeypatch: pytest.MonkeyPatch, env: str | None, config: int | None, named: str
) -> None:
    if env is None:
        monkeypatch.delenv("OPENCLAW_GATEWAY_PORT", raising=False)
    else:
        monkeypatch.setenv("OPENCLAW_GATEWAY_PORT", env)
    with pytest.raises(UsageError, match=named):
        attached_port({"gateway": {"port": config}}, where="state/openclaw.json")


def test_attached_mode_needs_the_token_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, binary: str
) -> None:
    monkeypatch.delenv("OPENCLAW_GATEWAY_TOKEN", raising=False)
    with pytest.raises(UsageError, match="needs the gateway's token in OPENCLAW_GATEWAY_TOKEN"):
        OpenClawRuntime(binary, tmp_path, supervised=False, logs=tmp_path / "logs")


class _Readyz(BaseHTTPRequestHandler):
    answer: tuple[int, dict[str, Any]] = (200, {"ready": True, "uptimeMs": 5000})

    def do_GET(self) -> None:
        status, body = self.answer if self.path == "/readyz" else (404, {})
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def readyz() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Readyz)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_serving_servers_start_comes_from_its_uptime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, binary: str, readyz: ThreadingHTTPServer
) -> None:
    monkeypatch.setenv("OPENCLAW_GATEWAY_TOKEN", "attached-token-for-the-test")
    monkeypatch.setenv("OPENCLAW_GATEWAY_PORT", str(readyz.server_address[1]))
    rt = OpenClawRuntime(binary, tmp_path, supervised=False, logs=tmp_path / "logs")
    before = time.time_ns() // 1_000_000
    started = rt.server_started_ms()
    after = time.time_ns() // 1_000_000
    assert started is not None and before - 5000 <= started <= after - 5000
    for status, body in [(503, {"ready": False, "uptimeMs": 10}), (200, {"ready": True}), (200, {"uptimeMs": True})]:
        monkeypatch.setattr(_Readyz, "answer", (status, body))
        assert rt.server_started_ms() is None, (status, body)
