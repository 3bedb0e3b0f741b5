"""``kurahi session doctor`` on a FIFO or a device: refused at once with a clear error, never a hang.

Run as a user runs it (a subprocess: a hang in ``open()`` would hang the test process itself);
the ``timeout`` only stops a command that hangs, the bug this guards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kurahi.cli.common import EXIT


def _doctor(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [sys.executable, "-m", "kurahi.cli", "session", "doctor", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"kurahi session doctor {' '.join(args)} hung instead of refusing")


@pytest.mark.parametrize("fix", [[], ["--fix", "--dry-run"]])
def test_a_fifo_is_refused_at_once_and_left_alone(tmp_path: Path, fix: list[str]) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    done = _doctor(str(fifo), *fix)
    assert done.returncode == EXIT.NOT_FOUND, done.stderr
    assert "FIFO" in done.stderr and "not a regular file" in done.stderr and "Traceback" not in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["session.jsonl"]  # nothing written beside it


def test_a_device_is_refused() -> None:
    done = _doctor("/dev/zero")
    assert done.returncode == EXIT.NOT_FOUND and "a device" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("content", "code"), [(b"this is not a session\n", EXIT.INVALID), (None, EXIT.NOT_FOUND)])
def test_json_on_a_non_session_prints_a_json_error(tmp_path: Path, content: bytes | None, code: int) -> None:
    path = tmp_path / "notes.jsonl"
    if content is not None:
        path.write_bytes(content)
    done = _doctor("--json", str(path))
    assert done.returncode == code, done.stderr
    body = json.loads(done.stdout)
    assert body["ok"] is False and body["error"] and body["exitCode"] == code and body["file"] == str(path)
    assert "Traceback" not in done.stderr
