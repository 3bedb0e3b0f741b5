"""Shared fixtures: the Pi peer (skipped loudly when absent)."""

from __future__ import annotations

from typing import Any

import pytest

from kurahi.store import native
from peer import PI_MISSING, PI_PKG, PiPeer

C_SCANNER = "C scanner: built" if native.available() else "!!! C scanner: NOT BUILT (its tests are SKIPPED) !!!"


def pytest_report_header(config: pytest.Config) -> list[str]:
    if PI_MISSING:
        return [f"!!! {PI_MISSING} !!!", C_SCANNER]
    return [f"Pi peer: {PI_PKG}", C_SCANNER]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if PI_MISSING:
        terminalreporter.write_line(f"!!! {PI_MISSING} !!!", red=True, bold=True)
    else:
        terminalreporter.write_line(f"Pi conformance checked against {PI_PKG}")
    terminalreporter.write_line(C_SCANNER, red=not native.available())


@pytest.fixture
def pi() -> PiPeer:
    """The reference implementation, run on real files; skips loudly when absent."""
    if PI_MISSING:
        pytest.skip(PI_MISSING)
    return PiPeer()
