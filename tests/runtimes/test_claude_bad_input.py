"""Bad input to ``kurahi rescue --claude`` (issue 39's list): a clear error or a documented result, never a traceback.

Torn and zero-filled lines, unknown rows, a 100 MB line, symlinked project folders and
session files, uuids claimed twice, a running ``claude``, an unreadable config dir; and the
listing writes nothing: every byte, size and time of the files is as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kurahi.errors import TranscriptReadError, UsageError
from kurahi.runtimes.claude.losses import find_losses
from kurahi.runtimes.claude.running import running
from kurahi.testing.claude_code import ClaudeSession
from support.claude_sessions import claude_process, four_turns, proc_start, snapshot


def _damaged(cwd: str = "/home/ava/work", seed: int = 3) -> ClaudeSession:
    s, turns = four_turns(cwd, seed=seed)
    s.row(turns[2].tool_result or "")["parentUuid"] = None
    return s


def test_a_torn_last_line_and_nul_bytes_are_named_in_notes_and_lose_nothing(tmp_path: Path) -> None:
    s, turns = four_turns()
    row = s.row(turns[1].rows[1])
    s.rows[s.rows.index(row)] = b"\0" * 300 + b"\n"
    s.raw(b'{"parentUuid":"' + turns[3].reply.encode() + b'","type":"assist')
    path = s.write(tmp_path)
    report = find_losses(tmp_path)
    assert report.losses == [] and report.sessions == 1
    assert any(str(path) in n and "NUL" in n for n in report.notes), report.notes
    assert any(str(path) in n and "torn" in n for n in report.notes), report.notes


def test_unknown_rows_on_the_chain_are_bridged_over(tmp_path: Path) -> None:
    s, turns = four_turns()
    # A row type from a later release, with a uuid the next prompt names as its parent.
    unknown = {"type": "hologram", "uuid": "11111111-2222-4333-8444-555555555555", "parentUuid": turns[1].reply}
    s.rows.insert(s.rows.index(s.row(turns[2].prompt)), unknown)
    s.row(turns[2].prompt)["parentUuid"] = unknown["uuid"]
    s.row(turns[2].prompt)["someNewField"] = {"nested": [1, 2, 3]}
    s.write(tmp_path)
    assert find_losses(tmp_path).losses == []


def test_a_100_mb_line_is_read_and_judged(tmp_path: Path) -> None:
    s, turns = four_turns()
    s.row(turns[0].tool_result or "")["toolUseResult"]["stdout"] = "y" * (100 * 1024 * 1024)
    s.row(turns[2].prompt)["parentUuid"] = None
    s.write(tmp_path)
    [loss] = find_losses(tmp_path).losses
    assert loss.kind == "null-parent" and loss.lost_messages == 6


def test_symlinked_project_folders_and_session_files_are_named_never_followed(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    four_turns()[0].write(root)
    elsewhere = tmp_path / "elsewhere"
    damaged = _damaged("/home/ava/other").write(elsewhere)
    (root / "projects" / "-home-ava-linked").symlink_to(damaged.parent)
    (root / "projects" / "-home-ava-work" / f"{'1' * 8}-1111-4111-8111-{'1' * 12}.jsonl").symlink_to(damaged)
    inside = root / "projects" / "-home-ava-inside"
    inside.symlink_to(root / "projects" / "-home-ava-work")  # even a link that stays inside is not followed
    report = find_losses(root)
    assert report.losses == [] and report.sessions == 1
    assert len(report.unread) == 3 and all("symlink" in n for n in report.notes)
    assert any("never follows a link" in n for n in report.notes)


def test_a_projects_folder_that_is_a_symlink_is_named_not_read(tmp_path: Path) -> None:
    real = tmp_path / "real"
    _damaged().write(real)
    root = tmp_path / "claude"
    root.mkdir()
    (root / "projects").symlink_to(real / "projects")
    report = find_losses(root)
    assert report.losses == [] and report.unread == [str(root / "projects")]
    # The config dir itself may be reached through a link: the user chose it.
    (tmp_path / "via").symlink_to(real)
    assert [x.kind for x in find_losses(tmp_path / "via").losses] == ["null-parent"]


def test_two_sessions_claiming_one_uuid_are_each_judged_alone(tmp_path: Path) -> None:
    original, _ = four_turns()
    fork = ClaudeSession(original.cwd, seed=11)
    fork.rows = [dict(r, sessionId=fork.session_id) if isinstance(r, dict) else r for r in original.rows]
    original.write(tmp_path)
    fork.write(tmp_path)
    assert find_losses(tmp_path).losses == []


def test_two_rows_claiming_one_uuid_in_a_file_are_noted(tmp_path: Path) -> None:
    s, turns = four_turns()
    s.rows.append(dict(s.row(turns[1].reply)))
    s.write(tmp_path)
    report = find_losses(tmp_path)
    assert report.losses == []
    assert any(turns[1].reply in n and "later row is taken" in n for n in report.notes), report.notes


def test_a_session_in_use_is_listed_read_only_and_the_running_claude_named(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    root = tmp_path / "claude"
    _damaged(str(work)).write(root)
    with claude_process(root, work, tmp_path / "bin") as proc:
        before = snapshot(root)
        report = find_losses(root)
        assert snapshot(root) == before
    assert [x.kind for x in report.losses] == ["null-parent"]
    assert any(f"pid {proc.pid}" in n and "takes no lock" in n for n in report.notes), report.notes


def test_the_note_a_killed_claude_left_is_not_a_running_one(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    four_turns()[0].write(root)
    notes = root / "sessions"
    notes.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    (notes / f"{dead.pid}.json").write_text(json.dumps({"pid": dead.pid, "procStart": "1"}))
    me = os.getpid()  # alive, but not started when this note says: the pid is another program's now
    (notes / f"{me}.json").write_text(json.dumps({"pid": me, "procStart": "0"}))
    (notes / "junk.json").write_text("{not json")
    assert running(root) is None
    (notes / f"{me}.json").write_text(json.dumps({"pid": me, "procStart": proc_start(me), "sessionId": "abc"}))
    assert running(root) is not None and f"pid {me}, session abc" in (running(root) or "")


def test_an_unreadable_config_dir_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a directory"):
        find_losses(tmp_path / "missing")
    (tmp_path / "projects").write_text("not a folder")
    with pytest.raises(TranscriptReadError, match="projects: is not a folder"):
        find_losses(tmp_path)


def test_a_config_dir_without_read_permission_is_a_clear_error(tmp_path: Path) -> None:
    """The real command on a ``projects/`` of mode 0. Root reads any folder through its
    CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so as root the command runs without them
    (``setpriv``), as any other user would."""
    four_turns()[0].write(tmp_path)
    before = snapshot(tmp_path)
    drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    (tmp_path / "projects").chmod(0)
    try:
        done = subprocess.run(
            [*drop, sys.executable, "-m", "kurahi.cli", "rescue", "--claude", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        (tmp_path / "projects").chmod(0o700)
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    assert "Permission denied" in done.stderr and "projects" in done.stderr, done.stderr
    after = snapshot(tmp_path)
    del before["projects"], after["projects"]  # its ctime: the chmod's, not the command's
    assert after == before


def test_listing_writes_nothing_not_even_an_access_time(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    _damaged().write(root)
    four_turns(seed=8)[0].write(root)
    files = sorted(p for p in root.rglob("*.jsonl"))
    before = snapshot(root)
    atimes = [os.stat(p).st_atime_ns for p in files]
    assert find_losses(root).losses
    assert snapshot(root) == before
    assert [os.stat(p).st_atime_ns for p in files] == atimes


def test_a_file_broken_at_every_row_is_followed_to_a_bound_and_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-w"
    folder.mkdir(parents=True)
    rows = [{"type": "user", "uuid": "u0", "parentUuid": None, "message": {"role": "user", "content": "first"}}]
    rows += [
        {"type": "user", "uuid": f"u{n}", "parentUuid": "u0", "message": {"role": "user", "content": f"row {n}"}}
        for n in range(1, 3000)
    ]
    (folder / "00000000-0000-4000-8000-000000000001.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = find_losses(tmp_path)
    assert len(report.losses) == 200 and {x.kind for x in report.losses} == {"wrong-parent"}
    assert any("more than 200 broken links" in n for n in report.notes)
