"""Hand-made Claude Code sessions for the fast tests: the turns users have, and the damage they meet.

Built on :class:`kurahi.testing.claude_code.ClaudeSession` (rows shaped as Claude Code 2.1.332
writes them, per ``peers/claude-code``'s measured facts). Each ``make_*`` function returns the
session and the turns it wrote, so a test can damage a named row the way the issues describe
and say which words must have left the view. The real CLI's sessions and damage are
``support/claude_peer.py`` and ``support/claude_damage.py``'s (the peer tests).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from kurahi.testing.claude_code import HEAD, ClaudeSession, Turn

__all__ = ["HEAD", "ClaudeSession", "Turn", "four_turns", "snapshot", "words"]

PROMPTS = ("alpha prompt one", "bravo prompt two", "charlie prompt three", "delta prompt four")
REPLIES = ("alpha reply one", "bravo reply two", "charlie reply three", "delta reply four")


def four_turns(cwd: str = "/home/ava/work", *, seed: int = 0) -> tuple[ClaudeSession, list[Turn]]:
    """A session of four turns, the first and third with a tool call (the peers README's sample)."""
    s = ClaudeSession(cwd, seed=seed)
    turns = [
        s.turn(PROMPTS[0], REPLIES[0], tool=("ls", "alpha-output")),
        s.turn(PROMPTS[1], REPLIES[1]),
        s.turn(PROMPTS[2], REPLIES[2], tool=("cat notes", "charlie-output")),
        s.turn(PROMPTS[3], REPLIES[3]),
    ]
    return s, turns


def words(view_texts: list[tuple[str, str, str]]) -> list[str]:
    """The texts of a :func:`~kurahi.runtimes.claude.loader.comparable` list."""
    return [text for _, what, text in view_texts if what == "text"]


def snapshot(root: Path) -> dict[str, tuple[str, int, int, int]]:
    """Every name under ``root``: a hash of its bytes (or ``dir``/``link``), its size, mtime and ctime in ns."""
    out: dict[str, tuple[str, int, int, int]] = {}
    for path in sorted(root.rglob("*")):
        st = os.lstat(path)
        if path.is_symlink():
            what = "link:" + os.readlink(path)
        elif path.is_dir():
            what = "dir"
        else:
            what = hashlib.sha256(path.read_bytes()).hexdigest()
        out[path.relative_to(root).as_posix()] = (what, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return out
