"""The conventions every command shares: help and docs, completion, colour, stdin, the home, Pi and OpenClaw."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from kurahi.cli import build_app
from kurahi.resident.init import init_home
from kurahi.testing import build_session
from support.testdata import JSON_ERA, openclaw_state

ROOT_DIR = Path(__file__).resolve().parents[2]
DOCS = ROOT_DIR / "docs" / "cli.md"
FIXTURE = ROOT_DIR / "tests" / "fixtures" / "pi" / "branch_summary.jsonl"
KURAHI = [sys.executable, "-m", "kurahi.cli"]
COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-9][;m]")  # a foreground colour (bold alone is not colour)


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if hasattr(cmd, "commands"):
        for name, sub in cmd.commands.items():
            yield from _commands(sub, (*path, name))
    else:
        yield path, cmd


COMMANDS = list(_commands(typer.main.get_command(build_app())))


def env_of(home_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KOLO_", "KURAHI_", "PI_CODING", "OPENCLAW_")) and k not in ("NO_COLOR", "FORCE_COLOR")
    }
    env["HOME"] = str(home_dir)
    env.update(extra)
    return env


def kurahi(*args: str, env: dict[str, str], stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*KURAHI, *args], capture_output=True, env=env, input=stdin, timeout=120)


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_has_help_text_and_a_docs_entry(path: tuple[str, ...]) -> None:
    cmd = dict(COMMANDS)[path]
    assert (cmd.help or "").strip(), f"kurahi {' '.join(path)} has no help text"
    for param in cmd.params:
        if param.name != "help":
            assert (getattr(param, "help", None) or "").strip(), f"kurahi {' '.join(path)}: {param.name} has no help"
    assert f"### `kurahi {' '.join(path)}`" in DOCS.read_text(), f"kurahi {' '.join(path)} is not in docs/cli.md"


def test_completion_scripts_and_an_unknown_shell(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    for shell in ("bash", "zsh", "fish"):
        out = kurahi("completion", shell, env=env)
        assert out.returncode == 0 and b"_KURAHI_COMPLETE" in out.stdout, out.stderr
    bad = kurahi("completion", "tcsh", env=env)
    assert bad.returncode == 2 and b"unknown shell 'tcsh'" in bad.stderr and b"bash" in bad.stderr
    # What the bash script asks, and kurahi's answer: the groups, then a group's options.
    ask = {**env, "_KURAHI_COMPLETE": "complete_bash", "COMP_WORDS": "kurahi sess", "COMP_CWORD": "1"}
    assert kurahi(env=ask).stdout.split() == [b"session", b"sessions"]
    ask |= {"COMP_WORDS": "kurahi sessions ls --", "COMP_CWORD": "3"}
    assert {b"--pi", b"--openclaw", b"--home"} <= set(kurahi(env=ask).stdout.split())


def test_bash_loads_the_script(tmp_path: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("no bash on this machine")
    script = tmp_path / "k.bash"
    script.write_bytes(kurahi("completion", "bash", env=env_of(tmp_path)).stdout)
    out = subprocess.run(["bash", "-c", f"source {script} && complete -p kurahi"], capture_output=True, text=True)
    assert out.returncode == 0 and "_kurahi_completion" in out.stdout, out.stderr


def test_no_color_and_NO_COLOR_drop_colour(tmp_path: Path) -> None:
    env = env_of(tmp_path, FORCE_COLOR="1", COLUMNS="200")
    coloured = kurahi("lifecycle", "matrix", "--differences", env=env).stdout.decode()
    assert COLOUR.search(coloured), "FORCE_COLOR draws colour"
    plain = kurahi("--no-color", "lifecycle", "matrix", "--differences", env=env).stdout.decode()
    assert not COLOUR.search(plain) and "rollover" in plain
    plain = kurahi("lifecycle", "matrix", "--differences", env={**env, "NO_COLOR": "1"}).stdout.decode()
    assert not COLOUR.search(plain) and "rollover" in plain


def test_a_dash_reads_the_file_from_stdin(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    data = FIXTURE.read_bytes()
    for args in (["session", "context", "{}", "--json"], ["session", "stats", "{}", "--json"]):
        from_file = kurahi(*[str(FIXTURE) if a == "{}" else a for a in args], env=env)
        from_stdin = kurahi(*["-" if a == "{}" else a for a in args], env=env, stdin=data)
        assert from_stdin.returncode == from_file.returncode == 0, from_stdin.stderr
        a, b = json.loads(from_stdin.stdout), json.loads(from_file.stdout)
        a.pop("file", None), b.pop("file", None)
        assert a == b
    path_file = kurahi("lineage", "path", str(FIXTURE), env=env).stdout.splitlines()
    path_stdin = kurahi("lineage", "path", "-", env=env, stdin=data).stdout.splitlines()
    assert path_stdin[1:] == path_file[1:] and path_stdin[0].split(b": ", 1)[1] == path_file[0].split(b": ", 1)[1]
    assert path_stdin[0].startswith(b"<stdin>: ")  # the line names stdin, not the private copy
    for args in (["session", "context", "-"], ["session", "tree", "-"], ["lineage", "check", "-"]):
        first = kurahi(*args, env={**env, "COLUMNS": "200"}, stdin=data).stdout.splitlines()[0]
        assert first.startswith(b"<stdin>") and b"kurahi-stdin-" not in first, (args, first)
    empty = kurahi("session", "stats", "-", env=env, stdin=b"")
    assert empty.returncode == 4 and b"<stdin>: not a session" in empty.stderr


def test_a_dash_for_the_activation_candidate_and_the_provenance_transcript(tmp_path: Path) -> None:
    init_home(tmp_path / "h", "alice", marker="ALICE-7F3A")
    candidate = tmp_path / "C.jsonl"
    build_session(candidate, entries=30, seed=3, markers=["LATE"])
    scratch = tmp_path / "tmp"  # where the private copy of stdin goes, and must not stay
    scratch.mkdir()
    env = env_of(tmp_path, TMPDIR=str(scratch))
    plan = ["activate", "plan", "--home", str(tmp_path / "h"), "--agent", "alice", "--candidate", "-", "--json"]
    out = kurahi(*plan, "--out", str(tmp_path / "pkg"), "--marker", "LATE", env=env, stdin=candidate.read_bytes())
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["plan"]["projection"]["markersFound"] == ["LATE"]
    assert (tmp_path / "pkg" / "candidate.jsonl").read_bytes() == candidate.read_bytes()
    bad = kurahi(*plan, "--out", str(tmp_path / "bad"), env=env, stdin=b"{}\n")
    assert bad.returncode == 4 and b"<stdin>: not a usable session" in bad.stderr
    assert not (tmp_path / "bad").exists()
    traced = kurahi(
        "evidence",
        "provenance",
        "--transcript",
        "-",
        "--phrase",
        "LATE",
        "--json",
        env=env,
        stdin=candidate.read_bytes(),
    )
    assert traced.returncode == 0, traced.stderr
    report = json.loads(traced.stdout)
    assert report["transcript"] == "<stdin>" and report["phrases"][0]["verdict"] == "context-only"
    assert list(scratch.iterdir()) == []


def test_KURAHI_HOME_beside_KOLO_HOME(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert kurahi("init", "--home", str(home), env=env_of(tmp_path)).returncode == 0
    for var in ("KURAHI_HOME", "KOLO_HOME"):
        out = kurahi("devices", "ls", "--json", env=env_of(tmp_path, **{var: str(home)}))
        assert out.returncode == 0 and json.loads(out.stdout) == [], out.stderr
    both = env_of(tmp_path, KURAHI_HOME=str(home), KOLO_HOME=str(tmp_path / "other"))
    out = kurahi("devices", "ls", env=both)
    assert out.returncode == 2 and b"KURAHI_HOME" in out.stderr and b"KOLO_HOME" in out.stderr
    same = env_of(tmp_path, KURAHI_HOME=str(home), KOLO_HOME=str(home) + "/")
    assert kurahi("devices", "ls", env=same).returncode == 0
    missing = kurahi("sessions", "ls", env=env_of(tmp_path))
    assert missing.returncode == 3
    text = b" ".join(missing.stderr.split())
    assert b"neither KURAHI_HOME nor KOLO_HOME is set" in text
    assert f"kurahi init --home {tmp_path / '.kolo'}".encode() in text


def test_sessions_ls_finds_pi_and_openclaw_where_they_keep_state(tmp_path: Path) -> None:
    pi = tmp_path / ".pi" / "agent" / "sessions" / "--home-ava--"
    pi.mkdir(parents=True)
    shutil.copy(FIXTURE, pi / "2026-01-01T00-00-00_x.jsonl")
    (pi / "broken.jsonl").write_text("not json\n")
    shutil.copytree(openclaw_state(JSON_ERA), tmp_path / ".openclaw")
    env = env_of(tmp_path)
    listed = json.loads(kurahi("sessions", "ls", "--pi", "--json", env=env).stdout)
    header = json.loads(FIXTURE.read_text().splitlines()[0])
    by_id = {s["sessionId"]: s for s in listed}
    assert by_id[header["id"]]["cwd"] == header["cwd"] and by_id[header["id"]]["header"] is True
    assert by_id[None]["header"] is False and by_id[None]["file"].endswith("broken.jsonl")
    oc = json.loads(kurahi("sessions", "ls", "--openclaw", "--json", env=env).stdout)
    assert [(s["agent"], s["key"]) for s in oc] == [("main", "agent:main:main")]
    # The variables the programs honour move them.
    moved = tmp_path / "elsewhere"
    shutil.move(tmp_path / ".openclaw", moved)
    assert kurahi("sessions", "ls", "--openclaw", env=env).returncode == 3
    out = kurahi("sessions", "ls", "--openclaw", "--json", env={**env, "OPENCLAW_STATE_DIR": str(moved)})
    assert out.returncode == 0 and len(json.loads(out.stdout)) == 1
    out = kurahi("sessions", "ls", "--pi", env={**env, "PI_CODING_AGENT_DIR": str(tmp_path / "nowhere")})
    assert out.returncode == 3 and b"PI_CODING_AGENT_DIR" in out.stderr


def test_empty_results_say_none(tmp_path: Path) -> None:
    home = tmp_path / "h"
    env = env_of(tmp_path, KURAHI_HOME=str(home))
    assert kurahi("init", env=env).returncode == 0
    for args in (["devices", "ls"], ["agent", "jobs"], ["actions", "ls"]):
        out = kurahi(*args, env=env)
        assert out.returncode == 0 and out.stdout.decode().splitlines()[-1] == "none", (args, out.stdout)
    (tmp_path / ".pi" / "agent" / "sessions").mkdir(parents=True)
    out = kurahi("sessions", "ls", "--pi", env=env)
    assert out.stdout.decode().splitlines()[-1] == "none"
