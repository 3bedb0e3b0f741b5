"""The console script: a run loads only the room it names, and still has every command."""

from __future__ import annotations

import pytest

from support.cli_probe import run_main

ROOMS = ("kurahi.cli.demo", "kurahi.cli.session", "kurahi.cli.sessions", "kurahi.cli.lineage.commands")


def _run(*args: str) -> tuple[str, str]:
    r = run_main(*args, watch=ROOMS)
    return str(r.code), ",".join(r.loaded)


@pytest.mark.parametrize(
    "args,room",
    [
        (["lineage", "check", "--help"], "kurahi.cli.lineage.commands"),
        (["session", "stats", "--help"], "kurahi.cli.session"),
        (["sessions", "--help"], "kurahi.cli.sessions"),
        (["demo", "--help"], "kurahi.cli.demo"),
    ],
)
def test_a_run_loads_only_the_room_it_names(args: list[str], room: str) -> None:
    assert _run(*args) == ("0", room)


def test_help_and_unknown_names_see_every_room() -> None:
    every = "kurahi.cli.demo,kurahi.cli.lineage.commands,kurahi.cli.session,kurahi.cli.sessions"
    assert _run("--help") == ("0", every)
    code, loaded = _run("lineag")  # a typo: Click's "no such command", with every room loaded
    assert code == "2" and loaded == every
