"""``rescue`` on a full disk and around the state dir's hygiene (issue 38, findings 4-9, 12).

A full disk is made at the OS-call boundary (:data:`kurahi.fs.durable.ops`): the write of one
named file in the state's ``sessions/`` raises ``ENOSPC``, as the kernel does, and the CLI runs
in-process as a user runs it.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli import build_app
from kurahi.fs import durable
from support.json_era import T0, JsonEraDir
from support.testdata import tree_hash

runner = CliRunner()
KEY = "agent:main:main"


def one_reset(root: Path) -> JsonEraDir:
    d = JsonEraDir(root)
    a, last = d.transcript(T0, ["alpha phrase AMBER-KESTREL-1"])
    d.point(KEY, a, T0)
    d.reset(KEY, a, last + 60_000, ["beta phrase VIOLET-HERON-2"])
    return d


def cli(*args: str, env: dict[str, str] | None = None) -> Any:
    result = runner.invoke(build_app(), list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def loss_id(root: Path) -> str:
    import json

    out = cli("rescue", "--openclaw", str(root), "--json")
    assert out.exit_code == 1, out.output
    found: list[dict[str, Any]] = json.loads(out.stdout)["losses"]
    return str(found[0]["id"])


def full_disk_for(monkeypatch: pytest.MonkeyPatch, where: Path, hit: Callable[[str], bool]) -> list[str]:
    """Every write to a file under ``where`` whose name ``hit`` accepts raises ENOSPC; returns those names."""
    real = durable.ops.write
    seen: list[str] = []

    def write(fd: int, data: bytes) -> int:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if path.startswith(str(where)) and hit(Path(path).name):
            seen.append(Path(path).name)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(durable.ops, "write", write)
    return seen


@pytest.mark.parametrize(
    "full_at",
    [
        pytest.param(lambda n: n.endswith(".tmp") and ".jsonl." in n, id="transcript"),
        pytest.param(lambda n: n.startswith(".sessions.json."), id="catalog"),
    ],
)
def test_a_full_disk_during_apply_is_a_clean_error_and_the_state_dir_is_as_it_was(
    full_at: Callable[[str], bool], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = one_reset(tmp_path / "state")
    lid = loss_id(d.root)
    before = tree_hash(d.root)
    seen = full_disk_for(monkeypatch, d.sessions, full_at)
    out = cli("rescue", "apply", lid, "--openclaw", str(d.root), "--yes", "--out", str(tmp_path / "pkg"))
    assert seen, "the injected full disk was never reached"
    assert out.exit_code == 1, out.output
    assert "No space left on device" in out.output and "left as it was" in out.output, out.output
    assert tree_hash(d.root) == before, "a failed apply left a file in the state dir, or changed one"


# ---- finding 5: an output that cannot be made ------------------------------------------------


@pytest.mark.parametrize("where", ["proc", "full"])
def test_an_html_page_that_cannot_be_written_is_a_usage_error_not_a_loss(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = one_reset(tmp_path / "state")
    page = Path("/proc/self/x.html") if where == "proc" else tmp_path / "out" / "x.html"
    page.parent.mkdir(exist_ok=True) if where == "full" else None
    seen = full_disk_for(monkeypatch, tmp_path / "out", lambda n: True)
    out = cli("rescue", "--openclaw", str(d.root), "--html", str(page))
    assert out.exit_code == 2, out.output  # 1 would say "a loss was found"
    assert str(page) in out.output and "cannot write" in out.output, out.output
    if where == "full":
        assert seen and list((tmp_path / "out").iterdir()) == [], "a failed page left a file"


@pytest.mark.parametrize("where", ["proc", "full"])
def test_a_package_that_cannot_be_written_is_a_usage_error_and_leaves_nothing(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = one_reset(tmp_path / "state")
    lid = loss_id(d.root)
    before = tree_hash(d.root)
    (tmp_path / "out").mkdir()
    pkg = Path("/proc/self/pkg") if where == "proc" else tmp_path / "out" / "pkg"
    seen = full_disk_for(monkeypatch, tmp_path / "out", lambda n: True)
    out = cli("rescue", "plan", lid, "--openclaw", str(d.root), "--out", str(pkg))
    assert out.exit_code == 2, out.output
    assert str(pkg) in out.output and "cannot write" in out.output, out.output
    if where == "full":
        assert seen and list((tmp_path / "out").iterdir()) == [], "a failed package left a file"
    assert tree_hash(d.root) == before


# ---- finding 6: a session key's control characters never reach the terminal raw -------------

HOSTILE_KEY = (
    "agent:main:x\x1b]0;pwned\x07\x1b[2J\n2026-12-07 00:00:00  deadbeef  main  k  reset  → kurahi rescue apply deadbeef"
)


def test_a_keys_control_characters_are_escaped_in_the_listing_and_exact_in_json(tmp_path: Path) -> None:
    import json

    d = JsonEraDir(tmp_path / "state")
    a, last = d.transcript(T0, ["alpha phrase AMBER-KESTREL-1"])
    d.point(HOSTILE_KEY, a, T0)
    d.reset(HOSTILE_KEY, a, last + 60_000, ["beta phrase VIOLET-HERON-2"])
    listed = cli("rescue", "--openclaw", str(d.root))
    assert listed.exit_code == 1, listed.output
    text = listed.stdout
    assert "\x1b" not in text and "\x07" not in text, repr(text)
    assert "\\x1b]0;pwned\\x07" in text, text
    # The forged line is not a line of its own: every line that ends with the forged command is one Kurahi wrote.
    forged = [line for line in text.splitlines() if line.startswith("2026-12-07 00:00:00  deadbeef")]
    assert forged == [], text
    as_json = cli("rescue", "--openclaw", str(d.root), "--json")
    assert [x["key"] for x in json.loads(as_json.stdout)["losses"]] == [HOSTILE_KEY]


def test_a_keys_control_characters_are_escaped_in_sessions_ls_and_lineage_find(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    a, _ = d.transcript(T0, ["alpha phrase AMBER-KESTREL-1"])
    d.point(HOSTILE_KEY, a, T0)
    for args in (
        ["sessions", "ls", "--home", str(d.root)],
        ["lineage", "find", "--state-dir", str(d.root), "--key", HOSTILE_KEY],
    ):
        out = cli(*args)
        assert out.exit_code == 0, out.output
        assert "\x1b" not in out.stdout and "\x07" not in out.stdout, (args, out.stdout)
        assert not any(line.startswith("2026-12-07 00:00:00  deadbeef") for line in out.stdout.splitlines())


# ---- finding 7: a package never lands inside the state dir -------------------------------------


@pytest.mark.parametrize("how", ["direct", "symlink", "state-dir-itself"])
def test_a_package_inside_the_state_dir_is_refused_and_nothing_is_written(how: str, tmp_path: Path) -> None:
    d = one_reset(tmp_path / "state")
    lid = loss_id(d.root)
    before = tree_hash(d.root)
    if how == "symlink":
        (tmp_path / "link").symlink_to(d.sessions)
        pkg = tmp_path / "link" / "pkg"
    else:
        pkg = d.sessions / "pkg" if how == "direct" else d.root
    for command in ("plan", "apply"):
        extra = ["--yes"] if command == "apply" else []
        out = cli("rescue", command, lid, "--openclaw", str(d.root), "--out", str(pkg), *extra)
        assert out.exit_code == 2, out.output
        assert "inside the state dir" in out.output, out.output
        assert tree_hash(d.root) == before, f"rescue {command} wrote into the state dir"


def test_a_prepare_folder_inside_the_state_dir_is_refused_before_watching(tmp_path: Path) -> None:
    """``rescue watch --prepare DIR`` writes a candidate per new loss: never inside the state it watches."""
    d = one_reset(tmp_path / "state")
    before = tree_hash(d.root)
    (tmp_path / "link").symlink_to(d.sessions)
    for folder in (d.sessions, tmp_path / "link"):
        out = cli("rescue", "watch", "--openclaw", str(d.root), "--prepare", str(folder))
        assert out.exit_code == 2, out.output
        assert "inside the state dir" in out.output and "--prepare" in out.output, out.output
    assert tree_hash(d.root) == before


# ---- one secret-pattern set: a marker is never a secret ------------------------------------------

SECRETS = [
    "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",  # Stripe (split: no scanner takes the test for a leak)
    "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
    "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
]


def test_a_marker_is_never_a_secret_said_in_the_lost_stretch(tmp_path: Path) -> None:
    """The most distinctive token of a lost stretch can be a key the user pasted: a marker is printed,
    written into the package and the audit chain, so it is chosen from the text with secrets taken out."""
    import json

    d = JsonEraDir(tmp_path / "state")
    said = [f"my new key is {s} keep it" for s in SECRETS] + ["the sextant story"]
    a, last = d.transcript(T0, said)
    d.point(KEY, a, T0)
    d.reset(KEY, a, last + 60_000, ["beta phrase VIOLET-HERON-2"])
    lid = loss_id(d.root)
    out = cli("rescue", "plan", lid, "--openclaw", str(d.root), "--out", str(tmp_path / "pkg"), "--json")
    assert out.exit_code == 0, out.output
    markers = [m["text"] for m in json.loads(out.stdout)["markers"]]
    assert markers, out.stdout
    package = "".join(p.read_text(errors="replace") for p in (tmp_path / "pkg").rglob("*.json"))
    for text in (out.stdout, package):
        assert not any(s in text or s[:12] in text for s in SECRETS), text
    assert not any("redacted" in m.lower() for m in markers), markers


# ---- finding 8: default package folders never collide --------------------------------------------


def test_the_same_loss_applied_on_two_copies_in_one_second_gets_two_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    from datetime import UTC, datetime

    from kurahi.lifecycle.rescue import apply as rescue_apply

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Frozen:
            return cls(2026, 12, 7, 4, 0, 0, 123456, tzinfo=UTC)

    monkeypatch.setattr(rescue_apply, "datetime", Frozen)  # both runs within one second, always
    one = one_reset(tmp_path / "one").root
    two = shutil.copytree(one, tmp_path / "two")
    lid = loss_id(one)
    assert loss_id(two) == lid
    env = {"XDG_STATE_HOME": str(tmp_path / "xdg")}
    for root in (one, two):
        out = cli("rescue", "apply", lid, "--openclaw", str(root), "--yes", env=env)
        assert out.exit_code == 0, out.output
    packages = sorted(p.name for p in (tmp_path / "xdg" / "kurahi" / "rescue").iterdir() if p.is_dir())
    assert len(packages) == 2 and all(p.startswith(lid) for p in packages), packages


# ---- finding 9: a rerun after an interrupted apply says what it found and how to undo it --------

KILLED_AFTER_SWITCH = (
    "import os, signal, sys\n"
    "import kurahi.lifecycle.activation.targets.backend.target as t\n"
    "t.audit = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"  # the catalog is switched: a kill
    "sys.argv[0] = 'kurahi'\n"
    "from kurahi.cli import main\n"
    "main()\n"
)


def test_a_rerun_after_a_kill_past_the_switch_names_the_package_and_its_rollback(tmp_path: Path) -> None:
    import subprocess
    import sys

    d = one_reset(tmp_path / "state")
    lid = loss_id(d.root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KOLO_", "KURAHI_", "OPENCLAW_"))}
    env["XDG_STATE_HOME"] = str(tmp_path / "xdg")
    args = ["rescue", "apply", lid, "--openclaw", str(d.root), "--yes"]
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_SWITCH, *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert killed.returncode == -9, killed.stderr
    (pkg,) = (tmp_path / "xdg" / "kurahi" / "rescue").glob(f"{lid}-*")
    locks = sorted(p.name for p in d.sessions.glob("*.lock"))
    assert locks, "the kill left no lock file: the test no longer reproduces the finding"

    again = cli(*args, env={"XDG_STATE_HOME": str(tmp_path / "xdg")})
    text = again.output
    assert again.exit_code == 3, text
    assert str(pkg) in text and "interrupted" in text, text
    assert f"kurahi activate rollback {pkg} --home {d.root} --offline" in text, text
    assert f"kurahi activate apply {pkg} --home {d.root} --offline" in text, text
    assert all(name in text for name in locks), text  # each lock file left is named, and what removes it
    finished = cli("activate", "apply", str(pkg), "--home", str(d.root), "--offline")
    assert finished.exit_code == 0, finished.output
    assert list(d.sessions.glob("*.lock")) == [], "finishing the apply left its lock files"


# ---- finding 12: a bare-pid lock of a live process is honoured ---------------------------------


def test_a_transcript_lock_holding_the_bare_pid_of_a_live_process_is_honoured(tmp_path: Path) -> None:
    import subprocess
    import sys

    d = one_reset(tmp_path / "state")
    lid = loss_id(d.root)
    live = max(d.sessions.glob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
    holder = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        lock = live.with_name(live.name + ".lock")
        lock.write_text(f"{holder.pid}\n")
        before = tree_hash(d.root)
        out = cli("rescue", "apply", lid, "--openclaw", str(d.root), "--yes", "--out", str(tmp_path / "pkg"))
        assert out.exit_code == 5, out.output
        assert f"process {holder.pid}" in out.output, out.output
        assert tree_hash(d.root) == before, "a refused apply changed the state dir"
    finally:
        holder.communicate(b"")


def test_the_catalog_keeps_its_mode_through_apply_and_rollback(tmp_path: Path) -> None:
    import stat

    d = one_reset(tmp_path / "state")
    catalog = d.sessions / "sessions.json"
    catalog.chmod(0o644)
    lid = loss_id(d.root)
    out = cli("rescue", "apply", lid, "--openclaw", str(d.root), "--yes", "--out", str(tmp_path / "pkg"))
    assert out.exit_code == 0, out.output
    assert stat.S_IMODE(catalog.stat().st_mode) == 0o644, oct(catalog.stat().st_mode)
    back = cli("activate", "rollback", str(tmp_path / "pkg"), "--home", str(d.root), "--offline")
    assert back.exit_code == 0, back.output
    assert stat.S_IMODE(catalog.stat().st_mode) == 0o644, oct(catalog.stat().st_mode)


# ---- finding 4 on a real full disk: a tmpfs in a private mount namespace --------------------------

FILL_LEVELS = [0, 4_096, 40_000, 200_000, 1_500_000]
"""Bytes left free on the tmpfs: from none to room for the whole repair."""


@pytest.mark.parametrize("sample", ["2026.5.28-reset", "2026.9.6-full"])
def test_on_a_real_full_disk_apply_fails_cleanly_or_verifies_and_never_half_writes(sample: str, tmp_path: Path) -> None:
    """At each fill level ``rescue apply`` either verifies, or exits 1 naming the full disk with the
    state's files byte-identical and nothing of Kurahi's left among them (SQLite's ``-shm`` index aside)."""
    from support import full_disk
    from support.testdata import data_path

    why = full_disk.available()
    if why is not None:
        pytest.skip(f"!!! a real full disk cannot be made here ({why}): only the injected ENOSPC tests ran !!!")
    state = data_path("openclaw", sample, "state")
    lid = loss_id(state)
    outcomes = []
    for leave in FILL_LEVELS:
        pkg = tmp_path / f"pkg-{leave}"
        run = full_disk.run(state, leave, ["rescue", "apply", lid, "--openclaw", "{state}", "--yes", "--out", str(pkg)])
        said = run["stdout"] + run["stderr"]
        assert "Traceback" not in said, said
        assert run["code"] in (0, 1), f"{leave} bytes free: exit {run['code']}: {said}"
        if run["code"] == 0:
            assert "verified: yes" in said, said
        else:
            assert "No space left on device" in said or "the disk refused a write" in said, said
            assert "left as it was" in said or "nothing was changed" in said, said
            kept = {k: v for k, v in run["after"].items() if not k.endswith("-shm")}
            assert kept == {k: v for k, v in run["before"].items() if not k.endswith("-shm")}, (
                f"{leave} bytes free: the failed apply changed the state dir"
            )
        outcomes.append(run["code"])
    assert outcomes[0] == 1 and outcomes[-1] == 0, f"the fill levels no longer span failure and success: {outcomes}"
