"""The fast tier's list of slow tests names only what exists (a renamed test would slip into `make check`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support import tiers

TESTS = Path(__file__).parent


def test_every_slow_folder_module_and_test_exists() -> None:
    for folder in tiers.SLOW_FOLDERS:
        assert (TESTS / folder).is_dir(), folder
    for module in tiers.SLOW_MODULES:
        assert (TESTS / module).is_file(), module
    by_module: dict[str, list[str]] = {}
    for name in tiers.SLOW_TESTS:
        module, _, function = name.partition("::")
        by_module.setdefault(module, []).append(function)
    for module, functions in by_module.items():  # each module parsed once
        tree = ast.parse((TESTS / module).read_text())
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        for c in tree.body:
            if isinstance(c, ast.ClassDef):
                defined |= {f"{c.name}.{n.name}" for n in c.body if isinstance(n, ast.FunctionDef)}
                # A conformance mixin's tests, inherited.
                defined |= {f for f in functions if c.bases and f.startswith(f"{c.name}.")}
        for function in functions:
            assert function in defined, f"{module}::{function}"


def test_make_check_leaves_out_only_slow_folders() -> None:
    makefile = (TESTS.parent / "Makefile").read_text()
    ignored = {part.removeprefix("--ignore=tests/") + "/" for part in makefile.split() if part.startswith("--ignore=")}
    assert ignored <= set(tiers.SLOW_FOLDERS)  # an ignored folder must be one make test still runs as slow


def test_a_fast_test_that_starts_a_peer_fails_and_says_where_it_belongs() -> None:
    # This test is in the fast tier, so the launchers refuse before node is looked for.
    from support.claude_peer import require as require_claude
    from support.openclaw_peer import OpenClawPeer, require
    from support.peer import PiPeer

    where = "tests/test_tiers.py::test_a_fast_test_that_starts_a_peer_fails_and_says_where_it_belongs"
    for start, what in (
        (lambda: PiPeer("0.73.1"), "Pi 0.73.1"),
        (lambda: require("2026.9.6"), "OpenClaw 2026.9.6"),
        (lambda: OpenClawPeer("2026.5.28", TESTS), "OpenClaw 2026.5.28"),
        (require_claude, "Claude Code 2.1.332"),
    ):
        with pytest.raises(pytest.fail.Exception) as failed:
            start()
        assert str(failed.value) == (
            f"{where} starts {what} but is in the fast tier: mark it pi, openclaw or claude, "
            "use the peer's fixture, or name it in tests/support/tiers.py"
        )


@pytest.mark.parametrize("marker", [pytest.param(m, marks=getattr(pytest.mark, m)) for m in sorted(tiers.SLOW_MARKERS)])
def test_every_slow_marker_makes_a_test_slow(marker: str, request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker(marker) is not None
    assert request.node.get_closest_marker("slow") is not None
