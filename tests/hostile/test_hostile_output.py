"""Every command that prints transcript content or names from files, on hostile input.

Each row of :data:`COMMANDS` is one command line, run as the real console script (a
subprocess) in each of :data:`ENVIRONMENTS`: a UTF-8 pipe, ``PYTHONIOENCODING=ascii``,
``LANG=C`` and a rich "terminal" (``FORCE_COLOR``). The input (:mod:`hostile_state`) holds
lone surrogates, NUL, U+2028, BOMs, 70-bit integers, ``1e400``, ``__proto__`` keys, rich
markup and invalid UTF-8, in the transcript, the catalog, the audit chain, the file names and
the arguments. Every run must end without a traceback, with an exit code from the README's
table (the row says which), and ``--json`` output must be exactly what ``JSON.stringify``
writes for the value it parses to (node re-stringifies it and the bytes must agree).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.hostile_state import BAD_NAME, hostile_lines, write_hostile_transcript
from support.peer import NODE, PiPeer, missing

KURAHI = str(Path(sys.executable).with_name("kurahi"))

README_CODES = {0, 1, 2, 3, 4, 5}

ENVIRONMENTS: dict[str, dict[str, str]] = {
    "pipe": {"PYTHONIOENCODING": "utf-8"},
    "ascii": {"PYTHONIOENCODING": "ascii"},
    "c-locale": {"LANG": "C", "LC_ALL": "C"},
    "terminal": {"FORCE_COLOR": "1", "COLUMNS": "100"},
}
"""How stdout is set up: what changes from the inherited environment."""

RAW = os.fsdecode(b"raw \xff byte")
"""An argument that is not UTF-8 (the shell passes the byte as it is)."""


@dataclass(frozen=True)
class Row:
    """One command line; ``{name}`` fields are filled from the prepared state."""

    args: tuple[str, ...]
    codes: frozenset[int]
    """The exit codes this row may end with on this input."""


def row(*args: str, codes: tuple[int, ...] = (0,)) -> Row:
    return Row(args, frozenset(codes))


COMMANDS: dict[str, Row] = {
    "session context": row("session", "context", "{t}"),
    "session context --json": row("session", "context", "{t}", "--json"),
    "session context --json --llm": row("session", "context", "{t}", "--json", "--llm"),
    "session context --leaf odd id": row(
        "session", "context", "{t}", "--leaf", "x-[/]-" + RAW, codes=(3,)
    ),  # an unknown leaf: "not found"
    "session context BOM file": row("session", "context", "{bom}", codes=(4,)),  # Pi 1.6.0 finds no header
    "session tree": row("session", "tree", "{t}"),
    "session tree --full --all": row("session", "tree", "{t}", "--full", "--all"),
    "session tree --json": row("session", "tree", "{t}", "--json"),
    "session stats": row("session", "stats", "{t}"),
    "session stats --json": row("session", "stats", "{t}", "--json"),
    "session repair --dry-run": row("session", "repair", "{torn}", "--dry-run"),
    "session repair --json --dry-run": row("session", "repair", "{torn}", "--json", "--dry-run"),
    "sessions ls": row("sessions", "ls", "--home", "{home}"),
    "sessions ls --json": row("sessions", "ls", "--home", "{home}", "--json"),
    "lineage find": row("lineage", "find", "--state-dir", "{home}", "--agent", "alice"),
    "lineage find --json": row("lineage", "find", "--state-dir", "{home}", "--agent", "alice", "--json"),
    "lineage find odd key": row(
        "lineage", "find", "--state-dir", "{home}", "--agent", "alice", "--key", "agent:alice:[/]\ufffd", codes=(0, 2)
    ),
    "lineage path": row("lineage", "path", "{t}"),
    "lineage path --json": row("lineage", "path", "{t}", "--json"),
    "lineage stitch": row(
        "lineage", "stitch", "{t}", "{clean}", "--out", "{out}.jsonl", "--rename-colliding", "--force"
    ),
    "lineage stitch --json": row(
        "lineage", "stitch", "{t}", "{clean}", "--out", "{out}.jsonl", "--rename-colliding", "--force", "--json"
    ),
    "lineage check": row("lineage", "check", "{t}", "--marker", "[/]", "--marker", RAW, codes=(1,)),
    "lineage check --json": row("lineage", "check", "{t}", "--marker", "after", "--json"),
    "lineage draw svg": row("lineage", "draw", "{t}", "--out", "{out}.svg", "--marker", "[/]", "--marker", RAW),
    "lineage draw html": row("lineage", "draw", "{t}", "{clean}", "--out", "{out}.html", "--marker", "lone"),
    "evidence provenance": row(
        "evidence",
        "provenance",
        "--home",
        "{home}",
        "--agent",
        "alice",
        "--key",
        "agent:alice:main",
        "--phrase",
        "[/]",
        "--phrase",
        RAW,
        "--auto",
    ),
    "evidence provenance --json": row(
        "evidence", "provenance", "--transcript", "{t}", "--phrase", "lone", "--auto", "--json"
    ),
    "evidence packet": row(
        "evidence", "packet", "--out", "{out}", "--source", "{t}", "--live", "{t}", "--phrase", "[/]"
    ),
    "evidence packet --json": row(
        "evidence", "packet", "--out", "{out}", "--source", "{t}", "--live", "{clean}", "--phrase", RAW, "--json"
    ),
    "evidence verify": row("evidence", "verify", "{packet}"),
    "evidence verify --json": row("evidence", "verify", "{packet}", "--json"),
    "actions ls": row("actions", "ls", "--home", "{home}", "--agent", "alice"),
    "actions ls --json": row("actions", "ls", "--home", "{home}", "--agent", "alice", "--json"),
    "actions show": row("actions", "show", "{action}", "--home", "{home}", "--agent", "alice"),
    "actions show --json": row("actions", "show", "{action}", "--home", "{home}", "--agent", "alice", "--json"),
    "agent send": row(
        "agent",
        "send",
        "--home",
        "{home}",
        "--agent",
        "alice",
        'note [[tool:memory_append {"text": "[/] \\u0000 \\u2028 \\ufeff"}]] [/]',
        codes=(0,),
    ),
    "agent send lone surrogate": row(
        "agent",
        "send",
        "--home",
        "{home}",
        "--agent",
        "alice",
        "--json",
        'save [[tool:write {"path": "s.md", "content": "\\ud800 [/]"}]]',
        codes=(0,),  # the file gets U+FFFD, as Node writes a lone surrogate; the transcript its escape
    ),
    "agent send raw byte": row("agent", "send", "--home", "{home}", "--agent", "alice", RAW, codes=(0,)),
    "agent jobs": row("agent", "jobs", "--home", "{home}", "--agent", "alice"),
    "audit tail": row("audit", "tail", "--home", "{home}"),
    "audit tail --json": row("audit", "tail", "--home", "{home}", "--json"),
    "audit tail broken line": row("audit", "tail", "--home", "{broken_home}", codes=(4,)),
    "audit verify": row("audit", "verify", "--home", "{broken_home}", codes=(1,)),
    "lifecycle matrix": row("lifecycle", "matrix", "--differences"),
    "lifecycle matrix --json": row("lifecycle", "matrix", "--json"),
    "activate plan": row(
        "activate",
        "plan",
        "--home",
        "{home}",
        "--agent",
        "alice",
        "--key",
        "agent:alice:main",
        "--candidate",
        "{clean}",
        "--out",
        "{out}",
        codes=(0, 1, 4),
    ),
    "activate plan --json": row(
        "activate",
        "plan",
        "--home",
        "{home}",
        "--agent",
        "alice",
        "--key",
        "agent:alice:main",
        "--candidate",
        "{t}",
        "--out",
        "{out}",
        "--json",
        codes=(0, 1, 4),
    ),
    "activate verify": row("activate", "verify", "{t}", codes=(3, 4)),
    "continuity verify": row("continuity", "verify", "{t}", codes=(1,)),
    "continuity verify --json": row("continuity", "verify", "{report}", "--json", codes=(1,)),
    "continuity badge": row("continuity", "badge", "{report}", codes=(1,)),
    "chat without a gateway": row("chat", "--agent", "alice", "hi [/] " + RAW, codes=(3,)),
}


def _catalog() -> bytes:
    # Written by hand: escapes and numbers as a JavaScript writer (or an attacker) leaves them.
    return (
        b'{"agent:alice:main": {"sessionId": "hostile", "sessionFile": "hostile.jsonl",'
        b' "updatedAt": 1180591620717411303424, "label": "\\ud800 [/]", "__proto__": {"x": 1}},\n'
        b' "agent:alice:[/]\\udc00": {"sessionId": "h\\ud800", "sessionFile": "hostile.jsonl", "updatedAt": 1e400}}\n'
    )


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The hostile files and a hostile home, made once for every row."""
    from kurahi.store.audit.log_file import AuditChain, chain_path

    root = tmp_path_factory.mktemp("hostile")
    t = write_hostile_transcript(root / BAD_NAME)
    bom = write_hostile_transcript(root / "bom.jsonl", bom=True)
    clean = root / "clean [x].jsonl"
    clean.write_bytes(b"\n".join(line for line in hostile_lines() if b"junk" not in line) + b"\n")
    torn = root / "torn.jsonl"
    torn.write_bytes(t.read_bytes() + b'{"type":"message","id":"\\ud800 [/]", "message": {"content": "cut')
    home = root / "home"
    _run("init", "--home", str(home), "--agent", "alice", check=True)
    sessions = home / "agents" / "alice" / "sessions"
    shutil.copy(t, sessions / "hostile.jsonl")
    (sessions / "sessions.json").write_bytes(_catalog())
    os.chmod(sessions / "sessions.json", 0o600)
    chain = AuditChain(chain_path(home))
    chain.append("owner [/]", "session.reset", {"sessionKey": "agent:alice:[/]\u0000\u2028\ufeff", "n": 2**53 - 1})
    broken = root / "broken-home"
    shutil.copytree(home / "audit", broken / "audit")
    with chain_path(broken).open("ab") as fh:
        fh.write(
            b'{"seq":2,"ts":"x","actor":"\\ud800","action":"[/]","details":{"n":1e400},"prevHash":"0","hash":"0"}\n'
        )
    sent = _run(
        "agent",
        "send",
        "--home",
        str(home),
        "--agent",
        "alice",
        'save [[tool:write {"path": "notes [x].md", "content": "[/] \\u0000 \\u2028"}]]',
    )
    assert sent.returncode == 0, sent.stderr
    actions = json.loads(_run("actions", "ls", "--home", str(home), "--agent", "alice", "--json", check=True).stdout)
    packet = root / "packet"
    _run("evidence", "packet", "--out", str(packet), "--source", str(t), "--live", str(t), check=True)
    report = root / "report [red].json"
    report.write_bytes(b'{"body": {"summary": "\\ud800", "badge": "[/]"}, "signature": 1e400, "__proto__": {}}\n')
    return {
        "t": str(t),
        "bom": str(bom),
        "clean": str(clean),
        "torn": str(torn),
        "home": str(home),
        "broken_home": str(broken),
        "action": actions[0]["actionId"],
        "packet": str(packet),
        "report": str(report),
        "root": str(root),
    }


def _run(*args: str, env: dict[str, str] | None = None, check: bool = False) -> subprocess.CompletedProcess[bytes]:
    full = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "PYTHONIOENCODING")}
    full.update(env or {})
    proc = subprocess.run([KURAHI, *args], capture_output=True, env=full, timeout=120, check=False)
    if check:
        assert proc.returncode == 0, f"kurahi {' '.join(args)}: {proc.stderr!r}"
    return proc


def _fill(args: tuple[str, ...], state: dict[str, str], out: Path) -> list[str]:
    values = {**state, "out": str(out)}
    filled = []
    for a in args:
        for name, value in values.items():
            a = a.replace("{" + name + "}", value)
        filled.append(a)
    return filled


def js_restringify(data: bytes) -> bytes:
    """What node's ``JSON.stringify(JSON.parse(data))`` writes (``data`` without its newline)."""
    assert NODE is not None
    script = "let s='';process.stdin.setEncoding('utf8');process.stdin.on('data',d=>s+=d)"
    script += ".on('end',()=>process.stdout.write(JSON.stringify(JSON.parse(s))))"
    proc = subprocess.run([NODE, "-e", script], input=data, capture_output=True, timeout=60, check=True)
    return proc.stdout


_CASES = [(name, env) for name in COMMANDS for env in ENVIRONMENTS]


@pytest.mark.parametrize(("name", "env"), _CASES, ids=[f"{n} [{e}]" for n, e in _CASES])
def test_no_traceback_on_hostile_input(state: dict[str, str], tmp_path: Path, name: str, env: str) -> None:
    spec = COMMANDS[name]
    args = _fill(spec.args, state, tmp_path / "out")
    proc = _run(*args, env=ENVIRONMENTS[env])
    stderr = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, f"kurahi {name} [{env}]:\n{stderr}"
    assert proc.returncode in README_CODES & spec.codes, (
        f"kurahi {name} [{env}]: exit {proc.returncode}, expected one of {sorted(spec.codes)}\n{stderr}"
    )
    if "--json" in spec.args and proc.stdout.strip():
        line = proc.stdout.rstrip(b"\n")
        proc.stdout.decode("utf-8")  # JSON output is UTF-8 whatever the terminal's encoding
        json.loads(line)
        assert NODE is not None, "node is needed to check the JSON against JSON.stringify"
        assert js_restringify(line) == line, f"kurahi {name} [{env}]: not what JSON.stringify writes"


def test_every_row_has_a_command_and_codes() -> None:
    assert len(COMMANDS) >= 40 and all(r.args and r.codes <= README_CODES for r in COMMANDS.values())


@pytest.mark.pi
def test_context_json_on_hostile_input_is_what_pi_projects(state: dict[str, str]) -> None:
    """Parsed, ``session context --json`` equals Pi's context; as bytes, JSON.stringify's."""
    why = missing("1.6.0")
    if why:
        pytest.skip(why)
    proc = _run("session", "context", state["clean"], "--json", check=True)
    ours: dict[str, Any] = json.loads(proc.stdout)
    pi = PiPeer("1.6.0").context(Path(state["clean"]))
    for key in ("leafId", "thinkingLevel", "model", "messages"):
        assert ours[key] == pi[key], key
    lone = json.dumps(ours["messages"])
    assert "\\ud800" in lone and "\\udc00" in lone and "\\u0000" in lone  # the hostile values reached the output
    assert b"\\ud800" in proc.stdout and "\u2028".encode() in proc.stdout  # escaped as JS does; U+2028 raw


def test_tables_show_a_replacement_character(state: dict[str, str]) -> None:
    """For people, a lone surrogate prints as U+FFFD (``?`` where even that cannot be encoded)."""
    utf8 = _run("session", "context", state["t"], env=ENVIRONMENTS["pipe"], check=True).stdout.decode("utf-8")
    assert "lone \ufffd high \ufffd low" in utf8 and "\U0001f600" in utf8
    ascii_out = _run("session", "context", state["t"], env=ENVIRONMENTS["ascii"], check=True).stdout
    assert ascii_out.isascii() and b"lone ? high ? low" in ascii_out


def test_the_status_page_states_this_sweep() -> None:
    readme = (Path(__file__).resolve().parents[2] / "docs" / "status.md").read_text()
    m = re.search(r"a sweep of (\d+) command lines on hostile input", readme)
    assert m is not None and int(m[1]) == len(COMMANDS)
