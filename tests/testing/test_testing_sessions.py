"""``kurahi.testing.sessions``: repeatable generated transcripts, shaped as asked, read by Pi as by Kurahi."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kurahi.context.files import project_file
from kurahi.pi import Transcript
from kurahi.testing.sessions import SessionShape, generate_lines, write_session
from support.peer import CURRENT, PiPeer


def entries_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()[1:]]


def test_the_same_shape_gives_the_same_bytes_and_another_seed_others(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    write_session(a, entries=3000, seed=5)
    write_session(b, SessionShape(entries=3000, seed=5))
    write_session(c, entries=3000, seed=6)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    assert b"\n".join(generate_lines(entries=3000, seed=5)) + b"\n" == a.read_bytes()


def test_size_count_and_kinds(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    made = write_session(path, entries=6000, seed=2, markers=("FIRST-MARK", "SECOND-MARK"))
    entries = entries_of(path)
    assert made.entries == len(entries) == 6000
    assert made.size == path.stat().st_size
    assert 450 <= made.size / made.entries <= 650, "about 550 bytes per entry"
    kinds = {e["type"] for e in entries}
    assert {"message", "compaction", "branch_summary", "model_change", "label", "custom_message"} <= kinds
    roles = {e["message"]["role"] for e in entries if e["type"] == "message"}
    assert roles == {"user", "assistant", "toolResult", "bashExecution"}
    assert made.compactions == sum(e["type"] == "compaction" for e in entries) > 0
    assert made.branches > 0
    text = path.read_text(encoding="utf-8")
    assert made.markers == ["FIRST-MARK", "SECOND-MARK"] and text.count("FIRST-MARK") == text.count("SECOND-MARK") == 1
    assert text.index("FIRST-MARK") < text.index("SECOND-MARK")
    calls = {b["id"] for e in entries if e["type"] == "message" for b in _blocks(e) if b.get("type") == "toolCall"}
    answered = {e["message"]["toolCallId"] for e in entries if e["type"] == "message" and "toolCallId" in e["message"]}
    assert answered <= calls and len(answered) > len(calls) * 0.9


def _blocks(entry: dict[str, Any]) -> list[dict[str, Any]]:
    content = entry["message"].get("content")
    return content if isinstance(content, list) else []


def test_no_branch_and_no_compaction_give_one_plain_path(tmp_path: Path) -> None:
    path = tmp_path / "linear.jsonl"
    write_session(path, entries=4000, seed=8, branch=0, compact_every=0)
    entries = entries_of(path)
    assert all(e["parentId"] == (entries[i - 1]["id"] if i else None) for i, e in enumerate(entries))
    assert not any(e["type"] in ("compaction", "branch_summary") for e in entries)
    with Transcript.open(path) as t:
        assert len(t.path()) == 4000


def test_new_kinds_are_pi_16s(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    write_session(path, entries=4000, seed=3, new_kinds=True)
    entries = entries_of(path)
    kinds = {e["type"] for e in entries}
    assert {"usage", "context_edit"} <= kinds
    assert any(e["type"] == "message" and e["message"]["role"] == "system" for e in entries)
    assert any("systemMessage" in e for e in entries if e["type"] == "compaction")
    ids = {e["id"] for e in entries}
    assert all(e["targetId"] in ids for e in entries if e["type"] == "context_edit")
    assert any(e["replacement"] is None for e in entries if e["type"] == "context_edit")


def test_legacy_versions(tmp_path: Path) -> None:
    v1, v2 = tmp_path / "v1.jsonl", tmp_path / "v2.jsonl"
    write_session(v1, entries=1500, seed=4, version=1, branch=0)
    write_session(v2, entries=1500, seed=4, version=2)
    e1 = entries_of(v1)
    assert json.loads(v1.read_bytes().split(b"\n")[0])["version"] == 1
    assert not any("id" in e or "parentId" in e for e in e1)
    assert all(isinstance(e["firstKeptEntryIndex"], int) for e in e1 if e["type"] == "compaction")
    e2 = entries_of(v2)
    assert any(e["type"] == "message" and e["message"]["role"] == "hookMessage" for e in e2)
    assert not any(e["type"] == "custom_message" for e in e2)


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"version": 1}, "version 1 file has no ids"),
        ({"version": 2, "new_kinds": True}, "version 3 files only"),
        ({"branch": 1.5}, "branch is a chance"),
        ({"entries": -1}, "entries must be"),
        ({"words": 0}, "words must be"),
        ({"compact_every": -3}, "compact_every"),
    ],
)
def test_impossible_shapes_are_refused(tmp_path: Path, options: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        write_session(tmp_path / "x.jsonl", **options)


def test_script(tmp_path: Path) -> None:
    out = tmp_path / "cli.jsonl"
    cmd = [sys.executable, "-m", "kurahi.testing.sessions", "--entries", "700", "--seed", "9", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert "700 entries" in res.stderr
    assert out.read_bytes() == b"\n".join(generate_lines(entries=700, seed=9)) + b"\n"
    bad = subprocess.run([*cmd[:-1], "--version", "1", str(out)], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("error: a version 1 file") and "Traceback" not in bad.stderr


GENERATED = {
    "tree": {"entries": 2500, "seed": 11},
    "linear": {"entries": 2500, "seed": 12, "branch": 0},
    "version2": {"entries": 2500, "seed": 13, "version": 2},
    "version1": {"entries": 2500, "seed": 14, "version": 1, "branch": 0},
    "new-kinds": {"entries": 2500, "seed": 15, "new_kinds": True},
}


@pytest.mark.pi
def test_pi_projects_generated_files_as_kurahi_does(tmp_path: Path, any_pi: PiPeer) -> None:
    # Pi 0.73.1 does not know the new kinds: it is compared on the other files only.
    names = [n for n, o in GENERATED.items() if any_pi.version == CURRENT or not o.get("new_kinds")]
    paths = [tmp_path / f"{n}.jsonl" for n in names]
    for name, path in zip(names, paths, strict=True):
        write_session(path, **GENERATED[name])
    for path, pi in zip(paths, any_pi.contexts(paths), strict=True):
        assert "error" not in pi, f"{path.name}: Pi {any_pi.version}: {pi.get('error')}"
        assert len(pi["messages"]) > 50, path.name
        got = project_file(path).context.to_dict()
        for key in ("messages", "model", "thinkingLevel"):
            assert got[key] == pi[key], f"{path.name}: {key} differs from Pi {any_pi.version}'s"
