"""Hand-made Claude Code sessions for the fast tests: the turns users have, and the damage they meet.

Built on :class:`kurahi.testing.claude_code.ClaudeSession` (rows shaped as Claude Code 2.1.332
writes them, per ``peers/claude-code``'s measured facts). Each ``make_*`` function returns the
session and the turns it wrote, so a test can damage a named row the way the issues describe
and say which words must have left the view. The real CLI's sessions and damage are
``support/claude_peer.py`` and ``support/claude_damage.py``'s (the peer tests).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kurahi.testing.claude_code import HEAD, ClaudeSession, Turn

__all__ = [
    "HEAD",
    "SAMPLE",
    "ClaudeSession",
    "Turn",
    "claude_process",
    "four_turns",
    "kept_tail_lost",
    "proc_start",
    "real_sample",
    "snapshot",
    "words",
]

SAMPLE = "2.1.332-base"
"""A session the real Claude Code 2.1.332 wrote (``tests/data/claude-code``, its README says how)."""

PROMPTS = ("alpha prompt one", "bravo prompt two", "charlie prompt three", "delta prompt four")
REPLIES = ("alpha reply one", "bravo reply two", "charlie reply three", "delta reply four")


SUMMARY = "SUMMARY of the first three turns"
CAVEAT = "<local-command-caveat>The command below was run directly in Claude Code.</local-command-caveat>"
FIVE = ("echo prompt five", "echo reply five")
REMINDER = {"type": "text", "text": "<system-reminder>\nAttribution lines\n</system-reminder>\n"}


def kept_tail_lost(
    *,
    keep: str = "reply+hook",
    region: list[dict[str, Any]] | None = None,
    record: bool = True,
    thinking: bool = False,
) -> tuple[ClaudeSession, list[Turn], list[str]]:
    """Four turns, ``/compact`` keeping the tail ``keep`` names, the caveat, turn five and its request's record.

    As 2.1.332 writes it: the kept rows (``reply+hook``: the last reply and its
    ``stop_hook_summary``), the boundary, the summary, the command's caveat, the next turn, and
    the record of the first request after the compaction (``[summary, an empty system entry,
    the kept tail (or ``region``), the next turn's user message]``; none without ``record``).
    Returns the session, its turns and the kept uuids (the caller takes them out of the file).
    """
    s = ClaudeSession("/home/ava/work")
    turns = [
        s.turn(p, r, thinking="pondering four" if thinking and n == 3 else None)
        for n, (p, r) in enumerate(zip(PROMPTS, REPLIES, strict=True))
    ]
    hook = s.system("stop_hook_summary", hookCount=1)
    four = turns[3]
    replies = [u for u in four.rows if s.row(u)["type"] == "assistant"]
    kept = {"reply+hook": [*replies, hook], "prompt+reply": [four.prompt, *replies], "reply": replies}[keep]
    s.compact(SUMMARY, kept)
    s.add("user", {"message": {"role": "user", "content": CAVEAT}, "isMeta": True})
    s.turn(*FIVE)
    if record:
        blocks = ([{"type": "thinking", "thinking": "pondering four", "signature": "sig"}] if thinking else []) + [
            {"type": "text", "text": REPLIES[3]}
        ]
        tail = region if region is not None else [{"role": "assistant", "content": blocks}]
        if keep == "prompt+reply" and region is None:
            tail = [{"role": "user", "content": PROMPTS[3]}, *tail]
        s.request(
            [
                {"role": "user", "content": SUMMARY},
                {"role": "system", "content": [], "output_config": {"effort": "medium"}},
                *tail,
                {
                    "role": "user",
                    "content": [REMINDER, {"type": "text", "text": CAVEAT + "\n"}, {"type": "text", "text": FIVE[0]}],
                },
            ]
        )
    return s, turns, kept


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


def real_sample(dst: Path, *, damaged: bool = False) -> tuple[Path, dict[str, Any]]:
    """A copy of :data:`SAMPLE`'s ``projects/`` as a config dir at ``dst``, and its ``turns.json``.

    ``damaged`` adds a second session: the same rows under a new session id, the last prompt's
    ``parentUuid`` set to ``null`` (issue 39's first kind: every earlier turn left the view).
    """
    from support.testdata import data_path

    base = data_path("claude-code", SAMPLE)
    shutil.copytree(base / "state", dst)
    for path in [dst, *dst.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)
    told: dict[str, Any] = json.loads((base / "turns.json").read_text(encoding="utf-8"))
    if damaged:
        [session] = [p for p in dst.glob("projects/*/*.jsonl")]
        rows = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()]
        last = told["turns"][-1]["prompt"]
        prompt = [r for r in rows if r.get("type") == "user" and (r.get("message") or {}).get("content") == last][-1]
        prompt["parentUuid"] = None
        copy = session.with_name("00000000-0000-4000-8000-00000000d4d4.jsonl")
        copy.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows))
    return dst, told


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


def proc_start(pid: int) -> str:
    """Field 22 of ``/proc/<pid>/stat`` (after the parenthesised name, which may hold spaces): its start time."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


@contextmanager
def claude_process(config_dir: Path, cwd: Path, bin_dir: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real process named ``claude`` working in ``cwd``, with the note 2.1.332 keeps while it runs.

    Claude Code takes no lock: ``<config dir>/sessions/<pid>.json`` (pid, session, cwd, start time)
    is what shows it runs, removed when it exits cleanly. The program is this Python under the
    name ``claude``; it says ``ready`` once it runs, and the block starts only then.
    """
    program = bin_dir / "claude"
    bin_dir.mkdir(parents=True, exist_ok=True)
    if not program.exists():
        program.symlink_to(sys.executable)
    code = "import sys; print('ready', flush=True); sys.stdin.read()"
    proc = subprocess.Popen([str(program), "-c", code], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    note = config_dir / "sessions" / f"{proc.pid}.json"
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        note.parent.mkdir(parents=True, exist_ok=True)
        fields = {"pid": proc.pid, "sessionId": "s-1", "cwd": str(cwd), "procStart": proc_start(proc.pid)}
        note.write_text(json.dumps({**fields, "status": "idle"}))
        yield proc
    finally:
        note.unlink(missing_ok=True)
        proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
