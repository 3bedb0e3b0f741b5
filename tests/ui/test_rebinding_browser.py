"""DNS rebinding in a real browser: a page whose name resolves to 127.0.0.1 reads nothing.

Headless chromium is told that ``rebind.example`` is 127.0.0.1 (``--host-resolver-rules``, what
a rebinding DNS server achieves after the page loaded) and opens the gateway under that name.
Its requests are same-origin for the browser, so only the ``Host`` header tells them apart:
a gateway run without ``--allow-remote`` answers them 421, and still serves ``localhost``.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from kurahi.gateway.lock import gateway_info
from support.gateways import make_gateway_home, start_gateway
from support.ui_server import CHROMIUM, CHROMIUM_ARGS, browser_missing

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(browser_missing() is not None, reason=f"!!! {browser_missing()} !!!"),
]


def test_a_rebinding_page_reads_nothing_and_the_viewer_still_works_on_loopback(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    home = make_gateway_home(tmp_path)
    proc = start_gateway(home)
    try:
        info = gateway_info(home.lock)
        assert info is not None
        args = [*CHROMIUM_ARGS, "--host-resolver-rules=MAP rebind.example 127.0.0.1"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
            try:
                page = browser.new_page()
                evil = f"http://rebind.example:{info.port}"
                for path in ("/api/health", "/ui/", "/docs"):
                    r = page.goto(evil + path)
                    assert r is not None and r.status == 421, (path, r and r.status)
                    assert "misdirected_request" in page.content()
                # A script on that page fetching the API (same origin for the browser) is refused too.
                got = page.evaluate("fetch('/api/health').then(r => r.status)")
                assert got == 421
                r = page.goto(f"http://localhost:{info.port}/ui/")
                assert r is not None and r.status == 200
                page.wait_for_selector("#login-form")
            finally:
                browser.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
