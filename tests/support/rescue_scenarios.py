"""Real OpenClaw state dirs in which a resident lost its past: the ground truth for ``kurahi rescue``.

Each scenario is a state dir that a real OpenClaw from npm wrote, driven by the peer harness
(:mod:`openclaw_peer`) against the logging stand-in model: turns on one or more session keys,
and between them what loses history in that release (a reset, an idle rollover, a compaction
then a reset, a move of the whole dir, an upgrade by the next release's doctor). Every
*piece* (the turns between two losses, on one key) says a phrase made fresh for this test
session, so a test can tell exactly which piece a request or a file holds, and no phrase can
come from an earlier run or from OpenClaw's own prompt.

The dirs are built once per test session, by era, so that peer start-ups and idle waits are
shared (a 2026.5.28 gateway takes 10-25 s to start on the shared machine, a turn 3-13 s):

- :func:`json_runs` (OpenClaw 2026.5.28) builds ``json-reset-idle`` (a reset, then an idle
  rollover), ``json-two-resets``, ``json-moved`` (``json-reset-idle`` after a clean stop,
  moved to another folder) and ``json-two-keys`` (``agent:main:alice`` says a private phrase
  and is reset; ``agent:main:bob`` starts right after, through the HTTP API: the splice
  case; made again from nothing, up to three times, until Bob's session starts within 5 s
  of the reset) and
  ``json-daily`` (a daily rollover: the first turn made with OpenClaw's clock set back a day).
  The idle wait of the first runs while the others are built.
- :func:`sqlite_runs` (OpenClaw 2026.9.6) builds ``sqlite-reset`` (a copy cut from the
  ``sqlite-reset-idle`` run after its clean stop), ``sqlite-reset-idle``, ``sqlite-two-resets``,
  ``sqlite-idle``, ``sqlite-compact-reset`` (a reset after ``openclaw sessions compact``)
  and ``sqlite-overflow`` (a pre-reset history bigger than a small model window).
- :func:`upgraded_run`: a copy of ``json-reset-idle`` put through 2026.9.6's
  ``openclaw doctor --fix --non-interactive``.

How they are made is in :mod:`rescue_builds`; what a scenario is (and the phrase checks) in
:mod:`rescue_scenario`. Each era's fixture writes ``costs.json`` (seconds per scenario) beside
its dirs.

A test takes a scenario through its fixture (``json_reset_idle``, ``sqlite_overflow``, ...): a
:class:`Scenario` whose state dir is a fresh copy under the test's ``tmp_path``, so the test
may write to it. :meth:`Scenario.one_turn` starts OpenClaw on that copy, takes one turn on a
key and returns the request OpenClaw sent the model; :func:`view` says which of the scenario's
phrases that request holds, per piece. ``docs/openclaw-peer.md`` ("How OpenClaw loses history")
says what each release writes for each kind of loss.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.openclaw_peer import JSON_ERA, SQLITE_ERA, require
from support.rescue_builds import (
    OVERFLOW_TURN_WORDS,
    SMALL_WINDOW,
    SPLICE_GAP,
    build_json,
    build_sqlite,
    build_upgraded,
)
from support.rescue_scenario import ALICE, BOB, Piece, Scenario, check_view, copy_root, phrase, view

__all__ = [
    "ALICE",
    "BOB",
    "OVERFLOW_TURN_WORDS",
    "SMALL_WINDOW",
    "SPLICE_GAP",
    "Piece",
    "Scenario",
    "check_view",
    "copy_root",
    "phrase",
    "view",
]


# ---- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def json_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Scenario]:
    """Every 2026.5.28 scenario, built once per test session (pristine: tests take copies)."""
    require(JSON_ERA)
    base = tmp_path_factory.mktemp("rescue-json")
    return _costed(base, build_json(base))


@pytest.fixture(scope="session")
def sqlite_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Scenario]:
    """Every 2026.9.6 scenario, built once per test session (pristine: tests take copies)."""
    require(SQLITE_ERA)
    base = tmp_path_factory.mktemp("rescue-sqlite")
    return _costed(base, build_sqlite(base))


@pytest.fixture(scope="session")
def upgraded_run(tmp_path_factory: pytest.TempPathFactory, json_runs: dict[str, Scenario]) -> Scenario:
    """``json-reset-idle`` upgraded by 2026.9.6's doctor, once per test session."""
    require(SQLITE_ERA)
    base = tmp_path_factory.mktemp("rescue-upgraded")
    built = build_upgraded(base, json_runs["json-reset-idle"])
    _costed(base, {built.name: built})
    return built


def _costed(base: Path, built: dict[str, Scenario]) -> dict[str, Scenario]:
    # What each scenario cost to build, beside the dirs, for whoever tunes the suite's time.
    costs = {name: round(scenario.seconds, 1) for name, scenario in built.items()}
    (base / "costs.json").write_text(json.dumps(costs, indent=1) + "\n", encoding="utf-8")
    return built


def _copy(runs: dict[str, Scenario], name: str, tmp_path: Path) -> Scenario:
    return runs[name].copy_to(tmp_path / name)


@pytest.fixture
def json_reset_idle(json_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.5.28, main key: a phrase, ``sessions.reset``, a phrase, an idle rollover, a phrase."""
    return _copy(json_runs, "json-reset-idle", tmp_path)


@pytest.fixture
def json_two_resets(json_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.5.28, main key: three pieces split by two resets."""
    return _copy(json_runs, "json-two-resets", tmp_path)


@pytest.fixture
def json_moved(json_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """``json-reset-idle`` moved whole to another folder: the catalog still names the old place."""
    return _copy(json_runs, "json-moved", tmp_path)


@pytest.fixture
def json_two_keys(json_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.5.28: alice's private phrase, alice reset, bob's first turn right after (the splice case)."""
    return _copy(json_runs, "json-two-keys", tmp_path)


@pytest.fixture
def json_daily(json_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.5.28, main key, a daily policy: a phrase a day ago (shifted clock), a phrase now."""
    return _copy(json_runs, "json-daily", tmp_path)


@pytest.fixture
def sqlite_reset(sqlite_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.9.6, main key: a phrase, ``/reset``, a phrase."""
    return _copy(sqlite_runs, "sqlite-reset", tmp_path)


@pytest.fixture
def sqlite_two_resets(sqlite_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.9.6, main key: three pieces split by two ``/reset``."""
    return _copy(sqlite_runs, "sqlite-two-resets", tmp_path)


@pytest.fixture
def sqlite_idle(sqlite_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.9.6, main key: a phrase, an idle rollover, a phrase."""
    return _copy(sqlite_runs, "sqlite-idle", tmp_path)


@pytest.fixture
def sqlite_reset_idle(sqlite_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.9.6, main key: a phrase, ``/reset``, a phrase, an idle rollover, a phrase."""
    return _copy(sqlite_runs, "sqlite-reset-idle", tmp_path)


@pytest.fixture
def sqlite_compact_reset(sqlite_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.9.6, main key: a phrase, ``sessions compact``, a phrase, ``/reset``, a phrase."""
    return _copy(sqlite_runs, "sqlite-compact-reset", tmp_path)


@pytest.fixture
def sqlite_overflow(sqlite_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.9.6 with a 16k window: six large turns (a phrase each), ``/reset``, a phrase."""
    return _copy(sqlite_runs, "sqlite-overflow", tmp_path)


@pytest.fixture
def upgraded(upgraded_run: Scenario, tmp_path: Path) -> Scenario:
    """``json-reset-idle`` after 2026.9.6's ``doctor --fix``."""
    return upgraded_run.copy_to(tmp_path / upgraded_run.name)
