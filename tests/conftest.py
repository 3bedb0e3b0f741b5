"""Shared fixtures: the Pi peer and the OpenClaw peer (skipped loudly when node is absent)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kurahi.store import native
from openclaw_peer import OPENCLAW_VERSIONS, OpenClawFactory, OpenClawPeer, OpenClawVersion, require, unavailable
from peer import PI_MISSING, PI_VERSIONS, PiPeer, missing, package_dir

C_SCANNER = "C scanner: built" if native.available() else "!!! C scanner: NOT BUILT (its tests are SKIPPED) !!!"


OPENCLAW_MISSING = "; ".join(f"{v}: {why}" for v in OPENCLAW_VERSIONS if (why := unavailable(v))) or None


def pytest_report_header(config: pytest.Config) -> list[str]:
    openclaw = (
        f"!!! OpenClaw peers missing: {OPENCLAW_MISSING} !!!"
        if OPENCLAW_MISSING
        else f"OpenClaw peers: {', '.join(OPENCLAW_VERSIONS)}"
    )
    if PI_MISSING:
        return [f"!!! Pi peers missing: {PI_MISSING} !!!", openclaw, C_SCANNER]
    return [f"Pi peers: {', '.join(str(package_dir(v)) for v in PI_VERSIONS)}", openclaw, C_SCANNER]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # The leak scan over everything the suite produced: every file left under pytest's
    # temporary directory (outside any secrets/ folder) is searched for every owner and
    # device token a test handled.
    from gateways import ALL_SECRETS

    factory = getattr(session.config, "_tmp_path_factory", None)
    if not ALL_SECRETS or factory is None:
        return
    base = factory.getbasetemp()
    scanned = 0
    leaks: list[str] = []
    for p in base.rglob("*"):
        if p.is_file() and not p.is_symlink() and "secrets" not in p.relative_to(base).parts:
            data = p.read_bytes()
            scanned += 1
            for secret in ALL_SECRETS:
                if secret.encode() in data:
                    leaks.append(str(p))
    if leaks:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    session.config.stash[_LEAK_KEY] = (scanned, len(ALL_SECRETS), leaks)


_LEAK_KEY = pytest.StashKey[tuple[int, int, list[str]]]()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    result = terminalreporter.config.stash.get(_LEAK_KEY, None)
    if result is not None:
        files, tokens, leaks = result
        if leaks:
            terminalreporter.write_line(f"!!! LEAK: a token appears in {', '.join(leaks[:5])} !!!", red=True, bold=True)
        else:
            terminalreporter.write_line(f"leak scan: {files} files left by the suite, {tokens} tokens, no leak found")
    if PI_MISSING:
        terminalreporter.write_line(f"!!! {PI_MISSING} !!!", red=True, bold=True)
    else:
        terminalreporter.write_line(f"Pi conformance checked against Pi {' and '.join(PI_VERSIONS)}")
    if OPENCLAW_MISSING:
        terminalreporter.write_line(f"!!! OpenClaw: {OPENCLAW_MISSING} !!!", red=True, bold=True)
    terminalreporter.write_line(C_SCANNER, red=not native.available())


@pytest.fixture
def pi() -> PiPeer:
    """The current reference implementation (Pi 1.6.0), run on real files; skips loudly when absent."""
    why = missing("1.6.0")
    if why:
        pytest.skip(why)
    return PiPeer("1.6.0")


@pytest.fixture
def pi073() -> PiPeer:
    """Pi 0.73.1, which Kurahi must still equal on files that use only its vocabulary."""
    why = missing("0.73.1")
    if why:
        pytest.skip(why)
    return PiPeer("0.73.1")


@pytest.fixture(params=PI_VERSIONS)
def any_pi(request: pytest.FixtureRequest) -> PiPeer:
    """Each Pi in turn, for behaviour both versions share."""
    why = missing(request.param)
    if why:
        pytest.skip(why)
    return PiPeer(request.param)


@pytest.fixture
def openclaw(tmp_path: Path) -> Iterator[OpenClawFactory]:
    """Make :class:`OpenClawPeer` s: ``openclaw("2026.9.6")`` (root ``tmp_path/openclaw-VERSION``
    unless ``root=`` is given). Skips loudly without node or npm, fails without ``make peer``;
    every peer made is closed at teardown (its whole process group killed), pass or fail."""
    made: list[OpenClawPeer] = []

    def make(version: OpenClawVersion, root: Path | None = None, **options: Any) -> OpenClawPeer:
        require(version)
        peer = OpenClawPeer(version, root or tmp_path / f"openclaw-{version}", **options)
        made.append(peer)
        return peer

    yield make
    for peer in made:
        peer.close()
