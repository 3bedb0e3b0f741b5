"""Helpers for gateway tests: a real server on loopback in a thread, and a leak watch.

The leak watch collects every secret a test handles (the owner token, device tokens) and
fails the test if one appears in an HTTP response (other than the pairing response that
hands a device its token), a log record, or any file of the home outside ``secrets/``.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from kurahi.gateway.app import create_app
from kurahi.gateway.lock import gateway_info
from kurahi.gateway.service import Gateway
from kurahi.resident.home import Home
from kurahi.resident.init import init_home
from kurahi.store.base import Backend

ALL_SECRETS: set[str] = set()
"""Every secret any test handled: conftest scans everything the run left on disk for them."""


@dataclass
class LeakWatch:
    secrets: set[str] = field(default_factory=set)
    texts: list[tuple[str, str]] = field(default_factory=list)

    def add(self, secret: str) -> None:
        self.secrets.add(secret)
        ALL_SECRETS.add(secret)

    def saw(self, where: str, text: str) -> None:
        self.texts.append((where, text))

    def check(self, home: Path | None = None) -> int:
        """Scan everything seen and every file of ``home`` outside ``secrets/``; returns files scanned."""
        for where, text in self.texts:
            for s in self.secrets:
                assert s not in text, f"a secret leaked into {where}"
        scanned = 0
        if home is not None:
            for p in home.rglob("*"):
                # A symlink is not a copy: what it points at is scanned where it lives.
                if p.is_file() and not p.is_symlink() and "secrets" not in p.relative_to(home).parts:
                    data = p.read_bytes()
                    scanned += 1
                    for s in self.secrets:
                        assert s.encode() not in data, f"a secret leaked into {p}"
        return scanned


class LogCapture(logging.Handler):
    """Every log record shown to a :class:`LeakWatch`, which fails on a secret in it."""

    def __init__(self, watch: LeakWatch) -> None:
        super().__init__(logging.DEBUG)
        self.watch = watch

    def emit(self, record: logging.LogRecord) -> None:
        self.watch.saw(f"log record {record.name}", record.getMessage())


@dataclass
class Served:
    url: str
    token: str
    home: Home
    gateway: Gateway
    watch: LeakWatch

    def client(self, token: str | None = None) -> httpx.Client:
        """An httpx client whose every response is shown to the leak watch."""
        auth = {"Authorization": f"Bearer {token if token is not None else self.token}"} if token != "" else {}

        def hook(r: httpx.Response) -> None:
            r.read()
            if not (r.request.method == "POST" and r.request.url.path == "/api/devices"):
                self.watch.saw(f"response to {r.request.method} {r.request.url.path}", r.text)
                self.watch.saw("response headers", str(r.headers))

        return httpx.Client(base_url=self.url, headers=auth, timeout=30, event_hooks={"response": [hook]})


KURAHI = [sys.executable, "-m", "kurahi.cli"]
"""The ``kurahi`` command, run by this interpreter."""


def run_kurahi(*args: str, home: Home, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``kurahi ARGS`` with ``KOLO_HOME`` set to ``home`` (and no token in the environment)."""
    env = {**os.environ, "KOLO_HOME": str(home.root)}
    env.pop("KOLO_GATEWAY_TOKEN", None)
    return subprocess.run([*KURAHI, *args], capture_output=True, text=True, timeout=timeout, env=env)


def start_gateway(home: Home, *extra: str, grace: float = 2.0) -> subprocess.Popen[bytes]:
    """``kurahi gateway run --port 0 EXTRA`` on ``home`` as a child process, once it has published its port.

    Its output goes to ``<home>/gateway.log`` (shown if it fails to start).
    """
    env = {**os.environ, "KOLO_HOME": str(home.root)}
    env.pop("KOLO_GATEWAY_TOKEN", None)
    log_path = home.root / "gateway.log"
    with log_path.open("ab") as log:
        cmd = [*KURAHI, "gateway", "run", "--port", "0", "--grace", str(grace), *extra]
        proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env)
    deadline = time.monotonic() + 60
    # One read per round: two reads could see the old gateway's info, then the file being rewritten.
    while (info := gateway_info(home.lock)) is None or info.pid != proc.pid:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the gateway did not start (exit {proc.poll()}):\n{log_path.read_text()[-2000:]}")
        time.sleep(0.02)
    return proc


def make_gateway_home(tmp_path: Path, agent: str = "alice") -> Home:
    home = Home(tmp_path / "kolo")
    init_home(home.root, agent, marker="ALICE-7F3A")
    return home


@contextmanager
def serve_in_thread(
    home: Home, watch: LeakWatch | None = None, *, backend: Backend | None = None, **app_kw: Any
) -> Iterator[Served]:
    """The gateway of ``home`` on 127.0.0.1 (a free port), in a thread, for the duration (``backend``: its store)."""
    import uvicorn

    watch = watch or LeakWatch()
    token = home.token_file.read_text().strip()
    watch.add(token)
    gateway = Gateway(home, backend=backend)
    app = create_app(gateway, **app_kw)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", access_log=False)
    server = uvicorn.Server(config)
    capture = LogCapture(watch)
    logging.getLogger().addHandler(capture)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the gateway did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Served(f"http://127.0.0.1:{port}", token, home, gateway, watch)
    finally:
        server.should_exit = True
        thread.join(30)
        logging.getLogger().removeHandler(capture)
        watch.check(home.root)
