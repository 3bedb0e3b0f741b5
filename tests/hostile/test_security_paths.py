"""Security pass, paths: a name from outside never becomes a path out of where it belongs.

Every CLI option that takes an agent id, session key, id or output path is driven as an
attacker would (``kurahi`` in a subprocess) with ``../``, absolute paths, ``..\\``, ``/``,
URL-encoding and very long names; the tools, the system prompt and activation packages are
driven in-process with symlinks planted in the workspace (to ``/etc``, to the home's
``secrets/``) and NUL bytes (which argv cannot carry). Every command runs at least once as
its own process; the rest of a table runs the same Typer app in-process (start-up is most of
a command's time, and this suite stays under a minute). Each row must be refused with a clear
error (non-zero exit, a message, no traceback) and leave every file under the test's
directory, inside the home and outside it, exactly as it was. The HTTP side is in
``test_security_http.py``, file modes and size limits in ``test_security_secrets.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from kurahi.agent.layout import check_agent_id, check_session_key
from kurahi.agent.tools import ListTool, MemoryAppendTool, ReadTool, ToolContext, WriteTool, resolve_in_workspace
from kurahi.agent.workspace import system_prompt
from kurahi.errors import CatalogEntryError, PackageTamperedError, PathRefusedError, ToolError, UsageError
from kurahi.gateway.activation_host import OfflineHost
from kurahi.lifecycle.activation import apply_package, plan_activation, rollback_package, verify_package
from kurahi.resident.home import Home
from kurahi.resident.init import init_home
from kurahi.store.catalog_format import validate_agent_id, validate_key
from kurahi.store.session import Session
from kurahi.testing import assistant_message, user_message
from support.residents import run, with_runtime
from support.security import HOSTILE_NAMES, assert_refused, invoke, run_cli, tree
from support.testdata import SQLITE_ERA, openclaw_state

KEY = "agent:alice:main"
SQLITE_STATE = openclaw_state(SQLITE_ERA)
SQLITE_ID = "d3b1d651-8d78-4ca9-8fb6-be6778f74d05"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with one finished turn, two transcripts A and B beside it, a victim file and planted links."""
    w = tmp_path_factory.mktemp("world")
    home = Home(w / "home")
    init_home(home.root, "alice", marker="ALICE-7F3A")

    async def turn(rt: Any) -> None:
        await rt.send(KEY, "hello")

    run(with_runtime(home.root, turn))
    for name, t0 in (("a.jsonl", 1), ("b.jsonl", 10)):
        with Session.create(w / name, cwd="/w") as s:
            s.append_message(user_message(f"{name} first", t0))
            s.append_message(assistant_message([{"type": "text", "text": "ok"}], t0 + 1))
    (w / "sub").mkdir()
    shutil.copy(w / "a.jsonl", w / "sub" / "a.jsonl")
    (w / "outside").mkdir()
    (w / "victim.txt").write_text("victim\n")
    (w / "nonempty").mkdir()
    (w / "nonempty" / "keep.txt").write_text("keep\n")
    os.symlink(w / "victim.txt", w / "to-victim")
    os.symlink(w / "outside" / "new.jsonl", w / "dangling")
    os.symlink(w / "outside" / "new.svg", w / "dangling.svg")
    os.symlink(w / "outside" / "newdir", w / "dangling-dir")
    return w


def _fill(args: list[str], w: Path, bad: str = "") -> list[str]:
    return [a.format(home=w / "home", w=w, bad=bad) for a in args]


# -- agent ids on every command that takes one ---------------------------------------------------

AGENT_COMMANDS = {
    "init": ["init", "--home", "{home}", "--agent", "{bad}"],
    "agent send": ["agent", "send", "--home", "{home}", "--agent", "{bad}", "hi"],
    "agent jobs": ["agent", "jobs", "--home", "{home}", "--agent", "{bad}"],
    "actions ls": ["actions", "ls", "--home", "{home}", "--agent", "{bad}"],
    "sessions ls": ["sessions", "ls", "--home", "{home}", "--agent", "{bad}"],
    "activate plan": [
        *("activate", "plan", "--home", "{home}", "--agent", "{bad}"),
        *("--candidate", "{w}/a.jsonl", "--out", "{w}/outside/pkg"),
    ],
    "evidence provenance": ["evidence", "provenance", "--home", "{home}", "--agent", "{bad}", "--key", KEY],
    "lineage find": ["lineage", "find", "--state-dir", "{home}", "--agent", "{bad}"],
}


@pytest.mark.parametrize("command", AGENT_COMMANDS)
def test_cli_agent_ids_are_refused_everywhere(world: Path, command: str) -> None:
    """Each command as a process with ``../x``, then in-process with every other hostile name."""
    before = tree(world)
    assert_refused(run_cli(*_fill(AGENT_COMMANDS[command], world, "../x")))
    for bad in HOSTILE_NAMES:
        if bad == "" and command in ("sessions ls", "lineage find"):
            continue  # an empty --agent means "every agent" there
        assert_refused(invoke(*_fill(AGENT_COMMANDS[command], world, bad)))
    assert tree(world) == before


# -- session keys, ids and names ----------------------------------------------------------------

ID_ROWS = [
    ("key with a control character", ["agent", "send", "--home", "{home}", "--agent", "alice", "--key", "a\x01b", "x"]),
    ("key with DEL", ["agent", "send", "--home", "{home}", "--agent", "alice", "--key", "a\x7fb", "x"]),
    ("key too long", ["agent", "send", "--home", "{home}", "--agent", "alice", "--key", "k" * 1100, "x"]),
    (
        "plan key with a control character",
        [
            *("activate", "plan", "--home", "{home}", "--agent", "alice", "--key", "a\x1bb"),
            *("--candidate", "{w}/a.jsonl", "--out", "{w}/outside/pkg"),
        ],
    ),
    (
        "provenance key naming a secret",
        ["evidence", "provenance", "--home", "{home}", "--agent", "alice", "--key", "../../secrets/gateway.token"],
    ),
    ("lineage key naming a file", ["lineage", "find", "--state-dir", "{home}", "--key", "/etc/passwd"]),
    ("action id", ["actions", "show", "--home", "{home}", "--agent", "alice", "../../../secrets/gateway.token"]),
    ("device id", ["devices", "revoke", "--home", "{home}", "../../devices.json"]),
    ("device name", ["devices", "pair", "--home", "{home}", "--name", "../../x"]),
    ("device name too long", ["devices", "pair", "--home", "{home}", "--name", "n" * 300]),
    ("session file that is a directory", ["session", "stats", "{home}/secrets"]),
]


@pytest.mark.parametrize(("what", "args"), ID_ROWS, ids=[r[0] for r in ID_ROWS])
def test_cli_keys_ids_and_names_are_refused(world: Path, what: str, args: list[str]) -> None:
    before = tree(world)
    # The commands of this table that the agent-id table did not start as a process.
    own_process = args[:2] in (["actions", "show"], ["devices", "revoke"], ["devices", "pair"], ["session", "stats"])
    assert_refused((run_cli if own_process else invoke)(*_fill(args, world)))
    assert tree(world) == before


def test_a_session_key_is_never_a_path(tmp_path: Path) -> None:
    """Keys may hold '/', '..' and ':' (they are catalog keys, not file names): nothing lands outside sessions/."""
    home = Home(tmp_path / "home")
    init_home(home.root, "alice", marker="ALICE-7F3A")
    outside = tree(tmp_path)
    for key in ("../../../outside", "/etc/passwd", "..\\..\\x", "%2e%2e%2fx"):
        res = invoke("agent", "send", "--home", str(home.root), "--agent", "alice", "--key", key, "hi", "--json")
        assert res.returncode == 0, res.stderr
    after = tree(tmp_path)
    new = sorted(set(after) - set(outside))
    sessions = "home/agents/alice/sessions/"
    allowed = ("home/agents/alice/actions", "home/agents/alice/jobs", "home/agents/alice/queue")
    assert new and all(p.startswith(sessions) or p.startswith(allowed) for p in new), new
    assert all(Path(p).name.endswith((".jsonl", "sessions.json")) for p in new if p.startswith(sessions))
    catalog = json.loads((home.agent("alice").catalog).read_text())
    assert "../../../outside" in catalog and "/etc/passwd" in catalog


# -- output paths: never through a symlink, never over a file -------------------------------------

STITCH = ["lineage", "stitch", "{w}/a.jsonl", "{w}/b.jsonl"]
OUTPUT_ROWS = [
    ("stitch --out a symlink to a file", [*STITCH, "--out", "{w}/to-victim"]),
    ("stitch --out a dangling symlink", [*STITCH, "--out", "{w}/dangling"]),
    ("stitch --report an existing file", [*STITCH, "--out", "{w}/outside/c1.jsonl", "--report", "{w}/victim.txt"]),
    ("stitch --report a dangling symlink", [*STITCH, "--out", "{w}/outside/c2.jsonl", "--report", "{w}/dangling"]),
    ("stitch --report the same as --out", [*STITCH, "--out", "{w}/outside/c3", "--report", "{w}/outside/c3"]),
    ("stitch --evidence a full folder", [*STITCH, "--out", "{w}/outside/c4.jsonl", "--evidence", "{w}/nonempty"]),
    ("draw --out a dangling symlink", ["lineage", "draw", "{w}/a.jsonl", "--out", "{w}/dangling.svg"]),
    ("packet --out a dangling symlink", ["evidence", "packet", "--out", "{w}/dangling-dir", "--source", "{w}/a.jsonl"]),
    ("packet --out a file", ["evidence", "packet", "--out", "{w}/victim.txt", "--source", "{w}/a.jsonl"]),
    (
        "packet with two sources of one name",
        ["evidence", "packet", "--out", "{w}/outside/pk", "--source", "{w}/a.jsonl", "--source", "{w}/sub/a.jsonl"],
    ),
    (
        "plan --out a full folder",
        [
            *("activate", "plan", "--home", "{home}", "--agent", "alice"),
            *("--candidate", "{w}/a.jsonl", "--out", "{w}/nonempty"),
        ],
    ),
    ("find --export a full folder", ["lineage", "find", "--state-dir", "{home}", "--export", "{w}/nonempty"]),
    ("find --export into the home", ["lineage", "find", "--state-dir", "{home}", "--export", "{home}/agents/x"]),
]


_FIRST_OF_EACH = {next(w for w, a in OUTPUT_ROWS if a[:2] == args[:2]) for _, args in OUTPUT_ROWS}


@pytest.mark.parametrize(("what", "args"), OUTPUT_ROWS, ids=[r[0] for r in OUTPUT_ROWS])
def test_cli_outputs_never_replace_or_follow(world: Path, what: str, args: list[str]) -> None:
    before = tree(world)
    assert_refused((run_cli if what in _FIRST_OF_EACH else invoke)(*_fill(args, world)))
    assert tree(world) == before


def test_lineage_export_refuses_a_sqlite_session_id_that_climbs_out(tmp_path: Path) -> None:
    state = tmp_path / "state"
    shutil.copytree(SQLITE_STATE, state)
    for p in [state, *state.rglob("*")]:
        p.chmod(0o700 if p.is_dir() else 0o600)
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA foreign_keys=OFF")
        for table, col in [
            ("session_windows", "session_id"),
            ("transcript_events", "session_id"),
            ("transcript_event_identities", "session_id"),
            ("session_nodes", "current_session_id"),
        ]:
            conn.execute(f"UPDATE {table} SET {col} = '../../../pwned' WHERE {col} = ?", (SQLITE_ID,))
    conn.close()
    (tmp_path / "out" / "a" / "b").mkdir(parents=True)
    before = tree(tmp_path)
    res = run_cli("lineage", "find", "--state-dir", str(state), "--export", str(tmp_path / "out/a/b/c"))
    assert_refused(res, says="cannot be a file name")
    assert tree(tmp_path) == before


# -- NUL bytes and the name checks behind the CLI -------------------------------------------------


@pytest.mark.parametrize("bad", [*HOSTILE_NAMES, "a\x00b", "A", "a" * 65, "a\nb"])
def test_agent_id_checks_refuse_every_hostile_name(bad: str) -> None:
    with pytest.raises(UsageError):
        check_agent_id(bad)
    if bad not in ("A", "a" * 65, "%2e%2e%2fx"):  # the OpenClaw-facing check allows these plain names
        with pytest.raises(UsageError):
            validate_agent_id(bad)


@pytest.mark.parametrize("bad", ["", "a\x00b", "a\nb", "a\x7f", "k" * 1025])
def test_session_key_checks_refuse_nul_control_and_long(bad: str) -> None:
    with pytest.raises(UsageError):
        check_session_key(bad)
    with pytest.raises(CatalogEntryError):
        validate_key(bad)


# -- tool path arguments ------------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace inside a home, with links planted to /etc, to secrets/, to the token, inside, and a loop."""
    home = Home(tmp_path / "home")
    init_home(home.root, "alice", marker="ALICE-7F3A")
    w = home.agent("alice").workspace
    (w / "notes").mkdir()
    (w / "notes" / "inner.md").write_text("inner\n")
    os.symlink("/etc", w / "etc")
    os.symlink(home.secrets, w / "sec")
    os.symlink(home.token_file, w / "tok.md")
    os.symlink(home.token_file, w / "memory" / "tok.md")
    os.symlink(home.root, w / "home")
    os.symlink(w / "notes" / "inner.md", w / "alias.md")
    os.symlink(w / "loop", w / "loop")
    return w


REFUSED_PATHS = [
    ("parent", "../x"),
    ("deep parent", "notes/../../../secrets/gateway.token"),
    ("absolute", "/etc/passwd"),
    ("home-relative", "~/.ssh/id_rsa"),
    ("backslash parent", "..\\..\\secrets\\gateway.token"),
    ("NUL", "IDENTITY.md\x00.txt"),
    ("long name", "n" * 300),
    ("long path", "a/" * 600),
    ("symlink to /etc", "etc/passwd"),
    ("symlink to secrets/", "sec/gateway.token"),
    ("symlink to the token", "tok.md"),
    ("symlink to the home", "home/config.json"),
    ("empty", ""),
    ("blank", "   "),
    ("not a string", 7),
]


@pytest.mark.parametrize(("what", "rel"), REFUSED_PATHS, ids=[r[0] for r in REFUSED_PATHS])
def test_tool_paths_out_of_the_workspace_are_refused(ws: Path, what: str, rel: Any) -> None:
    with pytest.raises(PathRefusedError):
        resolve_in_workspace(ws, rel, tool="read")
    home = ws.parents[2]
    before = tree(home.parent)
    ctx = ToolContext(ws, "s:c1")
    for tool, args in [
        (ReadTool(), {"path": rel}),
        (WriteTool(), {"path": rel, "content": "pwned"}),
        (ListTool(), {"path": rel}),
    ]:
        with pytest.raises(PathRefusedError) as info:
            tool.run(args, ctx)
        assert str(ws) not in str(info.value) and str(home) not in str(info.value)
        assert tool.lookup(args, ctx) is None
    assert tree(home.parent) == before


@pytest.mark.parametrize("rel", ["notes/inner.md", "alias.md", "./IDENTITY.md", "notes/new/deeper.md"])
def test_tool_paths_inside_the_workspace_still_work(ws: Path, rel: str) -> None:
    ctx = ToolContext(ws, "s:c1")
    assert not WriteTool().run({"path": rel, "content": "fine\n"}, ctx).is_error
    assert ReadTool().run({"path": rel}, ctx).text == "fine\n"


MEMORY_FILES = [
    ("parent", "../x.md"),
    ("backslash", "..\\x.md"),
    ("subdirectory", "a/b.md"),
    ("absolute", "/tmp/x.md"),
    ("not markdown", "x.txt"),
    ("NUL", "a\x00.md"),
    ("symlink to the token", "tok.md"),
    ("long", "m" * 300 + ".md"),
]


@pytest.mark.parametrize(("what", "name"), MEMORY_FILES, ids=[r[0] for r in MEMORY_FILES])
def test_memory_append_file_names_are_refused(ws: Path, what: str, name: str) -> None:
    home = ws.parents[2]
    before = tree(home.parent)
    with pytest.raises(PathRefusedError):
        MemoryAppendTool().run({"text": "pwned", "file": name}, ToolContext(ws, "s:c1"))
    assert tree(home.parent) == before


@pytest.mark.parametrize(
    ("tool", "args", "says"),
    [
        (WriteTool(), {"path": ".", "content": "x"}, "is a directory"),
        (WriteTool(), {"path": "notes", "content": "x"}, "is a directory"),
        (WriteTool(), {"path": "IDENTITY.md/under", "content": "x"}, "IDENTITY.md/under"),
        (ReadTool(), {"path": "fifo"}, "not a regular file"),
        (ReadTool(), {"path": "loop"}, "symlink loop"),
        (ListTool(), {"path": "IDENTITY.md"}, "not a directory"),
    ],
)
def test_file_system_errors_are_tool_errors_without_the_home_path(ws: Path, tool: Any, args: Any, says: str) -> None:
    os.mkfifo(ws / "fifo")
    home = ws.parents[2]
    before = tree(home.parent)
    started = time.monotonic()
    with pytest.raises(ToolError) as info:
        tool.run(args, ToolContext(ws, "s:c1"))
    assert time.monotonic() - started < 5  # a FIFO never hangs a tool
    assert says in str(info.value) and str(home) not in str(info.value)
    assert tree(home.parent) == before


def test_the_system_prompt_leaves_out_files_linked_out_of_the_workspace(ws: Path) -> None:
    home = ws.parents[2]
    token = (home / "secrets" / "gateway.token").read_text().strip()
    os.symlink(home / "secrets" / "gateway.token", ws / "USER.md")
    os.symlink(ws / "notes" / "inner.md", ws / "TOOLS.md")
    prompt = system_prompt(ws)
    assert token not in prompt and "# USER.md" not in prompt
    assert "# TOOLS.md\n\ninner" in prompt and "ALICE-7F3A" in prompt


# -- activation packages ----------------------------------------------------------------------


def _tamper(pkg: Path, change: Any) -> None:
    """Edit the plan and recompute SHA256SUMS, as someone crafting a package would."""
    import hashlib

    plan = json.loads((pkg / "activation.json").read_text())
    change(plan)
    (pkg / "activation.json").write_text(json.dumps(plan, indent=2))
    files = sorted(p for p in pkg.rglob("*") if p.is_file() and p.name not in ("SHA256SUMS", "journal.jsonl"))
    sums = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(pkg).as_posix()}\n" for p in files)
    (pkg / "SHA256SUMS").write_text(sums)


def _set(*path: str, value: Any) -> Any:
    def change(plan: dict[str, Any]) -> None:
        node = plan
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value

    return change


def _target_out(plan: dict[str, Any]) -> None:
    plan["targetFile"] = "../../../../evil.jsonl"
    plan["preconditions"]["target"]["name"] = "../../../../evil.jsonl"


CRAFTED = [
    ("targetFile climbs out", _target_out),
    ("targetFile absolute", _set("targetFile", value="/tmp/evil.jsonl")),
    ("sessionsDir elsewhere", _set("sessionsDir", value="../..")),
    ("sessionsDir of another agent", _set("sessionsDir", value="agents/bob/sessions")),
    ("agent id climbs out", _set("agent", value="../alice")),
    ("live transcript name climbs out", _set("preconditions", "liveTranscript", "name", value="../../../config.json")),
    ("id climbs out", _set("id", value="../../x")),
    ("key with NUL", _set("key", value="agent:alice:main\u0000")),
]


@pytest.mark.parametrize(("what", "change"), CRAFTED, ids=[r[0] for r in CRAFTED])
def test_a_crafted_activation_package_is_refused_before_anything_is_touched(
    tmp_path: Path, what: str, change: Any
) -> None:
    home = Home(tmp_path / "home")
    init_home(home.root, "alice", marker="ALICE-7F3A")

    async def turn(rt: Any) -> None:
        await rt.send(KEY, "hello")

    run(with_runtime(home.root, turn))
    with Session.create(tmp_path / "cand.jsonl", cwd="/w") as s:
        s.append_message(user_message("a candidate", 1))
    pkg = plan_activation(home.root, "alice", KEY, tmp_path / "cand.jsonl", tmp_path / "pkg").root
    _tamper(pkg, change)
    before = tree(tmp_path)
    for op in (
        lambda: apply_package(pkg, home.root, OfflineHost(home.root)),
        lambda: rollback_package(pkg, home.root, OfflineHost(home.root), force=True),
        lambda: verify_package(pkg, home.root),
    ):
        with pytest.raises(PackageTamperedError, match=r"activation\.json"):
            op()
    assert tree(tmp_path) == before
    cli = run_cli if what == CRAFTED[0][0] else invoke
    assert_refused(cli("activate", "apply", "--home", str(home.root), "--offline", str(pkg)), says="activation.json")
    assert tree(tmp_path) == before
