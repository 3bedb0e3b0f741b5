"""Every table command, captured in a pipe and on an 80-column terminal (``script``).

In a pipe: plain aligned columns, no escape codes, every header, every id whole on one
line. On the terminal: no line wider than 80 columns (the terminal would wrap it), every
column's header present, every id whole on one line (rows become ``name  value`` records
when their keys do not fit).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from kurahi.testing import build_session
from support.activations import make_home
from support.testdata import JSON_ERA, openclaw_state

KURAHI = [sys.executable, "-m", "kurahi.cli"]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pi"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str]
    headers: list[str]
    ids: list[str]


def _env(home_dir: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KOLO_", "KURAHI_", "PI_CODING", "OPENCLAW_")) and k not in ("NO_COLOR", "FORCE_COLOR")
    }
    env["HOME"] = str(home_dir)
    return env


def _run(argv: list[str], env: dict[str, str]) -> str:
    out = subprocess.run([*KURAHI, *argv], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, f"{argv}: exit {out.returncode}\n{out.stdout}{out.stderr}"
    return out.stdout


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Case], dict[str, str]]:
    t = tmp_path_factory.mktemp("tables")
    env = _env(t)
    home = t / "k"
    _run(["init", "--home", str(home), "--agent", "main"], env)
    _run(["agent", "send", "--home", str(home), 'save [[tool:write {"path": "a.md", "content": "x"}]]'], env)
    device = json.loads(_run(["devices", "pair", "--home", str(home), "--name", "laptop", "--json"], env))["device"]
    (session,) = json.loads(_run(["sessions", "ls", "--home", str(home), "--json"], env))
    (action,) = json.loads(_run(["actions", "ls", "--home", str(home), "--json"], env))
    pi = t / ".pi" / "agent" / "sessions" / "--home-ava-garden--"
    pi.mkdir(parents=True)
    shutil.copy(FIXTURES / "branch_summary.jsonl", pi / "2026-01-01T00-00-00_a.jsonl")
    pi_id = json.loads((FIXTURES / "branch_summary.jsonl").read_text().splitlines()[0])["id"]
    shutil.copytree(openclaw_state(JSON_ERA), t / ".openclaw")
    oc_sid = "ed83c604-551f-41af-9a44-65881d6be000"
    a, b = t / "A.jsonl", t / "B.jsonl"
    build_session(a, entries=120, seed=1, branch_chance=0.2)
    build_session(b, entries=40, seed=2, branch_chance=0)
    act = make_home(t / "act", chain=True)
    fixture = str(FIXTURES / "branch_summary.jsonl")
    out = [
        Case(
            "sessions ls",
            ["sessions", "ls", "--home", str(home)],
            ["agent", "key", "session id", "updated (UTC)", "status", "file"],
            [session["key"], session["sessionId"]],
        ),
        Case("sessions ls --pi", ["sessions", "ls", "--pi"], ["session id", "started (UTC)", "bytes", "cwd"], [pi_id]),
        Case(
            "sessions ls --openclaw",
            ["sessions", "ls", "--openclaw"],
            ["agent", "key", "session id"],
            ["agent:main:main", oc_sid],
        ),
        Case(
            "audit tail", ["audit", "tail", "--home", str(home)], ["seq", "time (UTC)", "actor", "action", "hash"], []
        ),
        Case(
            "actions ls",
            ["actions", "ls", "--home", str(home)],
            ["action id", "tool", "status", "settled by", "intent", "result"],
            [action["actionId"]],
        ),
        Case("agent jobs", ["agent", "jobs", "--home", str(home)], [], []),
        Case("devices ls", ["devices", "ls", "--home", str(home)], ["id", "name", "scopes", "state"], [device["id"]]),
        Case(
            "lifecycle matrix",
            ["lifecycle", "matrix", "--differences"],
            ["type", "command", "entry", "freshness", "last run", "mtime", "unguarded", "guarded"],
            [],
        ),
        Case("session context", ["session", "context", fixture], ["#", "role", "tokens", "content"], []),
        Case("session stats", ["session", "stats", fixture], ["sessionId", "leafId", "problems"], [pi_id]),
        Case("lineage path", ["lineage", "path", str(a)], ["branch point", "side branch starts at", "line"], []),
        Case(
            "lineage find",
            ["lineage", "find", "--state-dir", str(t / ".openclaw"), "--agent", "main", "--key", "agent:main:main"],
            ["#", "transcript", "kind", "first entry (UTC)", "entries", "kind", "from (UTC)", "gap (s)"],
            [f"{oc_sid}.jsonl"],
        ),
        Case(
            "lineage stitch",
            ["lineage", "stitch", str(a), str(b), "--out", "{out}/C.jsonl", "--force"],
            ["source", "role", "entries"],
            [],
        ),
        Case(
            "evidence provenance",
            ["evidence", "provenance", "--transcript", fixture, "--phrase", "mulch", "--auto"],
            ["phrase", "verdict", "cue", "tool", "context", "workspace", "elsewhere", "reasons"],
            [],
        ),
        Case(
            "activate plan",
            [
                "activate",
                "plan",
                "--home",
                str(act.home),
                "--agent",
                act.agent,
                "--candidate",
                str(act.candidate),
                "--out",
                "{out}/pkg",
                "--marker",
                "LATE",
            ],
            ["part", "file", "sha256", "marker", "in context"],
            [act.key],
        ),
        Case(
            "lineage check",
            ["lineage", "check", fixture, "--marker", "mulch"],
            ["marker", "system prompt", "reserve", "tokens", "threshold", "headroom", "route"],
            [],
        ),
        Case(
            "store copy",
            ["store", "copy", "--from", f"file:{home}", "--to", "file:{out}/copy"],
            ["agent", "transcripts", "bytes", "catalog entries", "records"],
            [],
        ),
        Case("doctor", ["doctor"], [], []),
    ]
    return out, env


def _lines(text: str) -> list[str]:
    return [ANSI.sub("", line).rstrip("\r") for line in text.replace("\r\n", "\n").split("\n")]


NAMES = [
    "sessions ls",
    "sessions ls --pi",
    "sessions ls --openclaw",
    "audit tail",
    "actions ls",
    "agent jobs",
    "devices ls",
    "lifecycle matrix",
    "session context",
    "session stats",
    "lineage path",
    "lineage find",
    "lineage stitch",
    "evidence provenance",
    "activate plan",
    "lineage check",
    "store copy",
    "doctor",
]


def _case(cases: tuple[list[Case], dict[str, str]], name: str) -> Case:
    return next(c for c in cases[0] if c.name == name)


@pytest.mark.parametrize("name", NAMES)
def test_in_a_pipe_plain_columns_every_header_and_whole_ids(
    name: str, cases: tuple[list[Case], dict[str, str]], tmp_path: Path
) -> None:
    case = _case(cases, name)
    argv = [a.replace("{out}", str(tmp_path)) for a in case.argv]
    text = _run(argv, cases[1])
    assert "\x1b[" not in text and "─" not in text and "━" not in text
    lines = text.splitlines()
    for h in case.headers:
        assert any(h in line for line in lines), f"{name}: header {h!r} missing:\n{text}"
    for ident in case.ids:
        assert any(ident in line for line in lines), f"{name}: {ident!r} not whole on one line:\n{text}"
    if name == "agent jobs":
        assert lines[-1] == "none"


@pytest.mark.parametrize("name", NAMES)
def test_on_an_80_column_terminal_nothing_wraps_and_every_column_shows(
    name: str, cases: tuple[list[Case], dict[str, str]], tmp_path: Path
) -> None:
    case = _case(cases, name)
    argv = [a.replace("{out}", str(tmp_path)) for a in case.argv]
    env = {**cases[1], "COLUMNS": "80", "LINES": "50", "TERM": "xterm-256color"}
    cmd = shlex.join([*KURAHI, *argv]) + "; echo EXIT=$?"
    out = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True, env=env, timeout=120)
    lines = _lines(out.stdout)
    assert "EXIT=0" in lines, out.stdout
    shown = [line for line in lines if not line.startswith("EXIT=")]
    too_wide = [line for line in shown if len(line) > 80]
    assert not too_wide, f"{name}: lines wider than the terminal: {too_wide}"
    for h in case.headers:
        assert any(h in line for line in shown), f"{name}: column {h!r} missing at 80 columns:\n" + "\n".join(shown)
    for ident in case.ids:
        assert any(ident in line for line in shown), f"{name}: {ident!r} cut or wrapped:\n" + "\n".join(shown)
    assert any("\x1b[" in line for line in out.stdout.splitlines()), "a terminal gets colour"
