"""docs/elide.md: the purge recipe really removes the bytes and keeps the tree (run as written)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from kurahi.pi.stats import transcript_stats
from kurahi.pi.transcript import Transcript
from kurahi.store.session import Session
from kurahi.testing import assistant_message, tool_result, user_message
from support.peer import PiPeer

DOC = Path(__file__).resolve().parents[2] / "docs" / "elide.md"
SECRET = "sk-live-DOCS-0001"


def recipe() -> str:
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    return code


def test_the_purge_recipe_removes_the_secret_and_keeps_every_other_line(tmp_path: Path, pi: PiPeer) -> None:
    src = tmp_path / "leak.jsonl"
    with Session.create(src, cwd="/w") as s:
        s.append_message(user_message("hello", 1))
        for make in (
            lambda: user_message(f"key {SECRET}", 2),
            lambda: tool_result("c1", "read", f"KEY={SECRET}", 3),
        ):
            target = s.append_message(make())
            s.append_message(assistant_message([{"type": "text", "text": "ok"}], 4))
            s.append_context_edit(target, None)
        s.append_message(user_message("bye", 5))
    script = tmp_path / "purge.py"
    script.write_text(recipe())
    with Transcript.open(src) as t:
        targets = [e.id for e in t.entries() if SECRET in e.raw.decode()]
    assert len(targets) == 2
    cur = src
    for i, target in enumerate(targets):
        nxt = tmp_path / f"purged{i}.jsonl"
        subprocess.run([sys.executable, str(script), str(cur), str(nxt), target], check=True, timeout=60)
        old_lines, new_lines = cur.read_bytes().split(b"\n"), nxt.read_bytes().split(b"\n")
        changed = [k for k, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
        assert len(changed) == 1 and target.encode() in old_lines[changed[0]]
        cur = nxt
    assert SECRET.encode() not in cur.read_bytes()
    with Transcript.open(cur) as t:
        facts = transcript_stats(t)
        assert facts["entries"] == 8 and facts["orphans"] == 0 and facts["pathLength"] == 8
    (ctx,) = pi.contexts([cur])
    assert [m["role"] for m in ctx["messages"]] == ["user", "assistant", "assistant", "user"]
    assert SECRET not in json.dumps(ctx)
