"""Shared fixtures: the Pi peer and the OpenClaw peer (skipped loudly when node is absent), the
real Claude Code on one stand-in API for the whole run (``claude``, ``claude_api``), a
throwaway PostgreSQL (``pg_server``, ``pg_url``; skipped loudly when it cannot start), and
``any_backend``: each storage backend in turn (file, memory, PostgreSQL)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, settings

from kurahi.pi.read import native
from kurahi.testing.postgres import PostgresUnavailableError, ThrowawayPostgres, find_bindir
from support import tiers
from support.backends import BACKEND_KINDS, BackendMaker
from support.claude_api import MessagesStandIn, messages_standin
from support.claude_damage import Session as ClaudeSession
from support.claude_damage import build_base as build_claude_base
from support.claude_damage import compacted as compacted_claude
from support.claude_peer import CLAUDE_VERSION, ClaudePeer
from support.claude_peer import PREFIX as CLAUDE_PREFIX
from support.claude_peer import require as require_claude
from support.claude_peer import unavailable as claude_unavailable
from support.openclaw_peer import (
    OPENCLAW_VERSIONS,
    OpenClawFactory,
    OpenClawPeer,
    OpenClawVersion,
    require,
    unavailable,
)
from support.peer import PI_MISSING, PI_VERSIONS, PiPeer, missing, package_dir
from support.rescue_scenarios import (  # noqa: F401  (fixtures: every test may ask for a rescue scenario)
    json_daily,
    json_moved,
    json_reset_idle,
    json_runs,
    json_two_keys,
    json_two_resets,
    sqlite_compact_reset,
    sqlite_idle,
    sqlite_overflow,
    sqlite_reset,
    sqlite_reset_idle,
    sqlite_runs,
    sqlite_two_resets,
    upgraded,
    upgraded_run,
)
from support.tiers import SLOW_FIXTURES, SLOW_FOLDERS, SLOW_MARKERS, SLOW_MODULES, SLOW_TESTS

# Hypothesis profiles, chosen by KURAHI_HYPOTHESIS_PROFILE: "ci" (the default, and what `make
# test` runs) tries as many examples as hypothesis does by default; "dev" (what `make check`
# runs) tries a few, for a quick answer. Neither has a deadline or a too-slow health check:
# timings on a shared 2-core machine are no verdict (speed is measured in benchmarks/).
# Tests that set max_examples themselves keep it under both.
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
settings.register_profile("dev", max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HYPOTHESIS_PROFILE = os.environ.get("KURAHI_HYPOTHESIS_PROFILE") or "ci"


def pytest_configure(config: pytest.Config) -> None:
    if HYPOTHESIS_PROFILE not in ("ci", "dev"):
        raise pytest.UsageError(f"KURAHI_HYPOTHESIS_PROFILE={HYPOTHESIS_PROFILE!r}: use ci or dev")
    settings.load_profile(HYPOTHESIS_PROFILE)


C_SCANNER = "C scanner: built" if native.available() else "!!! C scanner: NOT BUILT (its tests are SKIPPED) !!!"


OPENCLAW_MISSING = "; ".join(f"{v}: {why}" for v in OPENCLAW_VERSIONS if (why := unavailable(v))) or None
CLAUDE_MISSING = str(why) if (why := claude_unavailable()) else None

PG_FIXTURES = {"pg_server", "pg_url"}
# What became of the run's PostgreSQL: "started" (a description), "why" (it could not start),
# "databases" (how many pg_url made). Empty when no test asked for it.
_PG: dict[str, Any] = {}


def _pg_binaries() -> str:
    try:
        return f"PostgreSQL server binaries: {find_bindir()}"
    except PostgresUnavailableError as exc:
        return f"!!! {exc}: the tests marked postgres will be SKIPPED !!!"


def pytest_report_header(config: pytest.Config) -> list[str]:
    openclaw = (
        f"!!! OpenClaw peers missing: {OPENCLAW_MISSING} !!!"
        if OPENCLAW_MISSING
        else f"OpenClaw peers: {', '.join(OPENCLAW_VERSIONS)}"
    )
    claude = (
        f"!!! Claude Code peer missing: {CLAUDE_MISSING} !!!"
        if CLAUDE_MISSING
        else f"Claude Code peer: {CLAUDE_VERSION} ({CLAUDE_PREFIX})"
    )
    profile = f"hypothesis profile: {HYPOTHESIS_PROFILE} (KURAHI_HYPOTHESIS_PROFILE)"
    if PI_MISSING:
        return [f"!!! Pi peers missing: {PI_MISSING} !!!", openclaw, claude, C_SCANNER, _pg_binaries(), profile]
    pis = f"Pi peers: {', '.join(str(package_dir(v)) for v in PI_VERSIONS)}"
    return [pis, openclaw, claude, C_SCANNER, _pg_binaries(), profile]


_TESTS_DIR = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The fast tier (`make check`) leaves out what tests/support/tiers.py names: marked slow here.
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        # Every test that uses the PostgreSQL fixtures is marked postgres (so -m "not postgres" leaves them out).
        if PG_FIXTURES & fixtures:
            item.add_marker(pytest.mark.postgres)
        try:
            where = item.path.relative_to(_TESTS_DIR).as_posix()
        except ValueError:  # pragma: no cover - a test outside tests/
            continue
        cls = getattr(item, "cls", None)
        function = getattr(item, "originalname", item.name)
        name = f"{where}::{cls.__name__ + '.' if cls is not None else ''}{function}"
        marked = any(item.get_closest_marker(m) is not None for m in SLOW_MARKERS)
        if (
            marked
            or SLOW_FIXTURES & fixtures
            or where.startswith(SLOW_FOLDERS)
            or where in SLOW_MODULES
            or name in SLOW_TESTS
        ):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    # While a fast-tier test runs (its fixtures too), the peers' launchers refuse to start node:
    # tiers.no_peer_in_the_fast_tier.
    tiers.running(None if item.get_closest_marker("slow") else item.nodeid)
    try:
        return (yield)
    finally:
        tiers.running(None)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # The leak scan over everything the suite produced: every file left under pytest's
    # temporary directory (outside any secrets/ folder) is searched for every owner and
    # device token a test handled.
    from support.gateways import ALL_SECRETS

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
    if CLAUDE_MISSING:
        terminalreporter.write_line(f"!!! Claude Code: {CLAUDE_MISSING} !!!", red=True, bold=True)
    terminalreporter.write_line(C_SCANNER, red=not native.available())
    if "why" in _PG:
        skipped = sum(
            1 for r in terminalreporter.stats.get("skipped", []) if "PostgreSQL could not start" in str(r.longrepr)
        )
        terminalreporter.write_line(
            f"!!! PostgreSQL could not start ({skipped} tests SKIPPED): {_PG['why']} !!!", red=True, bold=True
        )
    elif "started" in _PG:
        terminalreporter.write_line(f"PostgreSQL: {_PG['started']}, {_PG.get('databases', 0)} test databases")


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


@pytest.fixture(scope="session")
def claude_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MessagesStandIn]:
    """One stand-in Anthropic Messages API on loopback for the whole run (:mod:`support.claude_api`):
    every Claude Code peer of every test talks to it, each run with an API key of its own. Its
    log of request bodies is ``claude-api*/requests.jsonl`` under pytest's temporary folder."""
    with messages_standin(tmp_path_factory.mktemp("claude-api") / "requests.jsonl") as api:
        yield api


ClaudeFactory = Callable[..., ClaudePeer]


@pytest.fixture
def claude(claude_api: MessagesStandIn, tmp_path: Path) -> ClaudeFactory:
    """Make :class:`~support.claude_peer.ClaudePeer` s on the run's stand-in: ``claude()`` (root
    ``tmp_path/claude-N`` unless ``root=`` is given: a HOME and a project folder). Skips loudly
    without npm, fails without ``make peer``."""
    require_claude()
    made = itertools.count(1)

    def make(root: Path | None = None) -> ClaudePeer:
        return ClaudePeer(claude_api, root or tmp_path / f"claude-{next(made)}")

    return make


@pytest.fixture(scope="session")
def claude_base(claude_api: MessagesStandIn, tmp_path_factory: pytest.TempPathFactory) -> ClaudeSession:
    """One session the real CLI made for the whole run (:func:`support.claude_damage.build_base`:
    five turns, a Bash tool call, a subagent, a Stop hook). Tests ``copy()`` it, never change it."""
    require_claude()
    return build_claude_base(ClaudePeer(claude_api, tmp_path_factory.mktemp("claude-base")))


@pytest.fixture(scope="session")
def claude_compacted(claude_base: ClaudeSession, tmp_path_factory: pytest.TempPathFactory) -> ClaudeSession:
    """A copy of ``claude_base`` after ``/compact`` and one more turn, for the whole run; copy it too."""
    return compacted_claude(claude_base.copy(tmp_path_factory.mktemp("claude-compacted")))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[ThrowawayPostgres]:
    """One throwaway PostgreSQL for the whole run (:mod:`kurahi.testing.postgres`), stopped and removed at the end.

    When it cannot start, every test that uses it is skipped with the reason, and the
    terminal summary says so in red: the only case where these tests do not run.
    """
    from support.gateways import ALL_SECRETS

    server = ThrowawayPostgres()
    try:
        server.start()
    except PostgresUnavailableError as exc:
        _PG["why"] = str(exc)
        pytest.skip(f"!!! PostgreSQL could not start: {exc} !!!")
    password = urlsplit(server.url).password
    assert password
    ALL_SECRETS.add(password)  # the end-of-run leak scan looks for it in every file the suite left
    _PG["started"] = f"a throwaway PostgreSQL {server.server_version} ({server.bindir}) on {server.host}:{server.port}"
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: ThrowawayPostgres) -> str:
    """A fresh database of the run's server for this test: its URL, with the password (never print it)."""
    _PG["databases"] = n = _PG.get("databases", 0) + 1
    return pg_server.create_database(f"test_{n}")


@pytest.fixture(params=BACKEND_KINDS)
def any_backend(request: pytest.FixtureRequest) -> Iterator[BackendMaker]:
    """Each storage backend in turn: a :class:`~support.backends.BackendMaker` of ``file``, ``memory``, ``postgres``.

    The PostgreSQL case gets a fresh database of the run's server (``pg_url``), is marked
    ``postgres`` (slow) and is skipped loudly, with the others, when no server can start.
    Every backend made is closed at teardown.
    """
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    maker = BackendMaker(request.param, url)
    try:
        yield maker
    finally:
        maker.close()
