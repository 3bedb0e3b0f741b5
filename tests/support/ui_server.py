"""The viewer's fixtures: a gateway with the viewer on loopback in a thread (any backend, a clock
the test moves), the homes its pages show, and a headless Debian chromium driven by Playwright.

The browser tests are skipped, loudly, when chromium, Playwright or axe-core cannot be had
(`make browser` installs them).
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from kurahi.continuity.api import install as continuity_api
from kurahi.gateway.app import create_app
from kurahi.gateway.service import Gateway
from kurahi.resident.home import Home
from kurahi.store.base import Backend
from kurahi.ui.routes import make_plugin
from support.gateways import LeakWatch, LogCapture

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / ".peer" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = os.environ.get("KURAHI_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def browser_missing() -> str | None:
    """Why the browser tests cannot run, or ``None``."""
    if not Path(CHROMIUM).is_file():
        return f"chromium not found ({CHROMIUM}): run `make browser`"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (the dev extra has it)"
    if not AXE.is_file():
        return f"axe-core not found at {AXE.relative_to(ROOT)}: run `make browser`"
    return None


class Clock:
    """A clock the test moves forward (viewer sessions expire by it)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@dataclass
class Viewer:
    url: str
    token: str
    home: Home
    gateway: Gateway
    clock: Clock
    watch: LeakWatch

    def client(self) -> httpx.Client:
        """A cookie-keeping client whose every response is shown to the leak watch."""

        def hook(r: httpx.Response) -> None:
            r.read()
            if not (r.request.method == "POST" and r.request.url.path == "/api/devices"):
                self.watch.saw(f"response to {r.request.method} {r.request.url.path}", r.text)
                self.watch.saw("response headers", str(r.headers))

        return httpx.Client(base_url=self.url, timeout=60, event_hooks={"response": [hook]})

    def login(self, client: httpx.Client, token: str | None = None) -> dict[str, Any]:
        r = client.post("/ui/api/login", json={"token": self.token if token is None else token})
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()
        return out


@contextmanager
def serve_viewer(home: Home, *, backend: Backend | None = None, **plugin_kw: Any) -> Iterator[Viewer]:
    """The gateway of ``home`` with the viewer (and the continuity routes) on 127.0.0.1, in a thread."""
    import uvicorn

    watch = LeakWatch()
    token = home.token_file.read_text().strip()
    watch.add(token)
    clock = Clock()
    gateway = Gateway(home, backend=backend)
    app = create_app(gateway, plugins=[continuity_api, make_plugin(clock=clock, **plugin_kw)])
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", access_log=False)
    server = uvicorn.Server(config)
    capture = LogCapture(watch)
    logging.getLogger().addHandler(capture)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the gateway did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Viewer(f"http://127.0.0.1:{port}", token, home, gateway, clock, watch)
    finally:
        server.should_exit = True
        thread.join(30)
        logging.getLogger().removeHandler(capture)
        watch.check(home.root)
