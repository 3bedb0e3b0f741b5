"""The browser tests' skip notice in the run's header (see ui_server for the fixtures' helpers)."""

from __future__ import annotations

import pytest

from ui_server import browser_missing


def pytest_report_header(config: pytest.Config) -> list[str]:
    why = browser_missing()
    return [f"!!! browser tests will be SKIPPED: {why} !!!"] if why else []
