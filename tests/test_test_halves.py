"""``make test``'s two halves (tools/test_halves.py): together the whole suite, and a run's exit code is theirs."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _halves() -> ModuleType:
    spec = importlib.util.spec_from_file_location("test_halves_tool", ROOT / "tools" / "test_halves.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_peers_half_is_every_peer_file_but_claude_codes() -> None:
    half = _halves().peers_half(ROOT)
    peers = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests" / "peers").glob("test_*.py")}
    claude = {p for p in peers if Path(p).name.startswith("test_claude")}
    assert claude, "Claude Code's peer tests run with the rest"
    assert set(half) == peers - claude
    assert len(half) == len(set(half))
    assert all((ROOT / p).exists() for p in half)


def test_a_run_exits_with_the_halves_code_and_keeps_what_they_left() -> None:
    """Both halves collect, nothing matches: each pytest exits 5, so does the run, and it names the folder it kept."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "test_halves.py"), "--", "-k", "kurahi_matches_no_test", "--co"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 5, done.stdout[-2000:] + done.stderr[-2000:]
    assert "the rest: " in done.stdout and "exit 5; the peers' half: exit 5" in done.stdout
    kept = re.search(r"what the tests left is kept in (\S+)", done.stdout)
    assert kept is not None, done.stdout[-2000:]
    folder = Path(kept.group(1))
    try:
        assert "no tests collected" in (folder / "peers-half.log").read_text()
        assert "no tests collected" in done.stdout  # the rest's own summary, and the peers' log shown whole
    finally:
        shutil.rmtree(folder, ignore_errors=True)
