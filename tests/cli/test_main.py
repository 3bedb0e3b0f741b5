"""The console script: a run loads only the room it names, and still has every command."""

from __future__ import annotations

import subprocess
import sys

import pytest

_PROBE = """
import sys
sys.argv = ["kurahi", *sys.argv[1:]]
from kurahi.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
loaded = sorted(m for m in ("kurahi.cli.demo", "kurahi.cli.session", "kurahi.cli.sessions", "kurahi.cli.lineage")
                if m in sys.modules)
print("LOADED", code, ",".join(loaded))
"""


def _run(*args: str) -> tuple[str, str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, timeout=60)
    last = [ln for ln in out.stdout.splitlines() if ln.startswith("LOADED")][-1].split(" ")
    return last[1], last[2] if len(last) > 2 else ""


@pytest.mark.parametrize(
    "args,room",
    [
        (["lineage", "check", "--help"], "kurahi.cli.lineage"),
        (["session", "stats", "--help"], "kurahi.cli.session"),
        (["sessions", "--help"], "kurahi.cli.sessions"),
        (["demo", "--help"], "kurahi.cli.demo"),
    ],
)
def test_a_run_loads_only_the_room_it_names(args: list[str], room: str) -> None:
    assert _run(*args) == ("0", room)


def test_help_and_unknown_names_see_every_room() -> None:
    every = "kurahi.cli.demo,kurahi.cli.lineage,kurahi.cli.session,kurahi.cli.sessions"
    assert _run("--help") == ("0", every)
    code, loaded = _run("lineag")  # a typo: Click's "no such command", with every room loaded
    assert code == "2" and loaded == every
