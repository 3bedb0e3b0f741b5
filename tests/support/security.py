"""Helpers for the security pass: a tree fingerprint, hostile names, and CLI runs that must refuse."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from support.gateways import KURAHI

HOSTILE_NAMES = [
    "../x",
    "../../../../etc/passwd",
    "/etc/passwd",
    "..\\..\\x",
    "a/b",
    "..",
    ".",
    ".hidden",
    "%2e%2e%2fx",
    "x" * 300,
    "",
]
"""Names that must never become a path outside where they belong (NUL cannot go through argv: tested in-process)."""


def tree(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (not following symlinks): file sha256, ``dir``, or ``-> target`` for a symlink.

    Lock files are left out: taking a lock is not a write.
    """
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if name.endswith(".lock"):
                continue
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "special"  # a FIFO: never opened
    return out


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``kurahi ARGS`` in a subprocess, with no home or token from the environment."""
    full = {**os.environ, **(env or {})}
    for var in ("KOLO_HOME", "KOLO_GATEWAY_TOKEN"):
        if env is None or var not in env:
            full.pop(var, None)
    return subprocess.run([*KURAHI, *args], capture_output=True, text=True, timeout=timeout, env=full)


def invoke(*args: str) -> subprocess.CompletedProcess[str]:
    """``kurahi ARGS`` in this process (the same code path without the 0.4 s start-up), as a CompletedProcess.

    The big tables run this way; each command is also run at least once through :func:`run_cli`.
    """
    from typer.testing import CliRunner

    from kurahi.cli import app

    env = {"KOLO_HOME": None, "KOLO_GATEWAY_TOKEN": None}
    res = CliRunner().invoke(app, list(args), env=env)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return subprocess.CompletedProcess(list(args), res.exit_code, res.stdout, res.stderr)


def assert_refused(res: subprocess.CompletedProcess[str], *, code: int | None = None, says: str = "") -> None:
    """A clear refusal: a non-zero exit (``code`` if given), a message, no traceback."""
    where = f"exit {res.returncode}\nstdout: {res.stdout[-800:]}\nstderr: {res.stderr[-1500:]}"
    assert res.returncode != 0, where
    if code is not None:
        assert res.returncode == code, where
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout, where
    text = " ".join((res.stderr + res.stdout).split())
    assert "error" in text.lower() or "invalid value" in text.lower(), where
    if says:
        assert says.lower() in text.lower(), where
