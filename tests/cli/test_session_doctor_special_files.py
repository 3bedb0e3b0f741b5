"""``kurahi session doctor`` on a FIFO or a device: refused at once with a clear error, never a hang.

Run as a user runs it (a subprocess: a hang in ``open()`` would hang the test process itself);
the ``timeout`` only stops a command that hangs, the bug this guards.
"""

from __future__ import annotations

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
