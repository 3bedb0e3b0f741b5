"""The browser tests' skip notice in the run's header, and the fixtures every browser test module
shares: one headless Debian chromium per module and a folder for each test's screenshots (see
ui_server and browser for the helpers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.ui_server import CHROMIUM, CHROMIUM_ARGS, browser_missing


def pytest_report_header(config: pytest.Config) -> list[str]:
    why = browser_missing()
    return [f"!!! browser tests will be SKIPPED: {why} !!!"] if why else []


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    out = tmp_path / "screenshots"
    out.mkdir()
    return out
