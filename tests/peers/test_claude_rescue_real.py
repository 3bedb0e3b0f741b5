"""``kurahi rescue apply`` of every Claude Code loss kind, proven by the real Claude Code 2.1.332's next request.

For each kind of issue 39's table, made as :mod:`support.claude_damage` makes it on a copy of
the shared base (or compacted) session: the premise (the next ``claude --resume SID -p`` request
lacks the lost words), then ``kurahi rescue --claude HOME/.claude --json`` lists exactly one
loss of that kind, ``kurahi rescue apply ID --yes`` (``--accept-guess`` for a guess) exits 0 and
says ``verified: yes``, ``kurahi activate rollback PKG`` gives the file back byte for byte,
``kurahi activate apply PKG`` applies it again, the listing is empty, and the next real request
holds every word of the session in order, tool pairs intact (the stand-in refuses a request
that breaks the API's rules: the CLI would exit non-zero), and no prompt that is not the
session's. A rollback after Claude Code appended a turn to the repaired file appends the rows as
they were: the next request loses the old turns again and keeps the later one.
``preserved-missing`` is mended by the kept rows rebuilt from the file's own request records
(the reply under its uuid with a message id of its own, the ``stop_hook_summary`` as a row that
says nothing); where the file keeps no such record it is refused with its reason, exit 1, the
file unchanged; ``continue-elsewhere`` is mended in the new session's file (the earlier session's
rows, then its first row again under their leaf) and proven by the next ``claude --continue``
in the other folder; what 2.1.332 bridges or does by design lists nothing.
A running ``claude`` on the session makes apply and rollback refuse, exit 5.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.claude_api import SUMMARY_MARK, prompt_of, reply_for
from support.claude_damage import LOSSES, NON_LOSSES, ON_COMPACTED, ON_COMPACTED_NON_LOSSES, Damaged, Session
from support.claude_peer import phrases_in, request_text, write_rows

pytestmark = pytest.mark.claude

KURAHI = [sys.executable, "-m", "kurahi.cli"]
MENDED = list(LOSSES)
KIND = {k: k.replace("_", "-").replace("stop-hook-fork", "sibling-fork") for k in LOSSES}


def kurahi(*args: str, code: int | None = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KOLO_", "KURAHI_", "CLAUDE_"))}
    out = subprocess.run([*KURAHI, *args], capture_output=True, text=True, env=env, timeout=300)
    assert "Traceback" not in out.stderr, out.stderr
    if code is not None:
        assert out.returncode == code, f"kurahi {' '.join(args[:3])}: exit {out.returncode}\n{out.stdout}{out.stderr}"
    return out


def listed(s: Session) -> list[dict[str, Any]]:
    """What ``kurahi rescue --claude HOME/.claude --json`` lists; it never notes Kurahi's own repair rows."""
    out = kurahi("rescue", "--claude", str(s.peer.config_dir), "--json", code=None)
    doc = json.loads(out.stdout)
    found: list[dict[str, Any]] = doc["losses"]
    assert out.returncode == (1 if found else 0), out.stderr
    noted = [n for t in doc["targets"] for n in t["notes"] if "is written on lines" in n]
    assert not [n for n in noted if "kurahiRepair" in n or not found], noted
    return found


def ordered(s: Session) -> list[str]:
    """The session's words in the order a whole request sends them."""
    head = [SUMMARY_MARK] if SUMMARY_MARK in s.extra else []
    said = [w for t in s.turns for w in t.words if w not in s.dropped]
    return head + said + [w for w in s.extra if w != SUMMARY_MARK]


def assert_whole(d: Damaged, body: dict[str, Any], asked: list[str]) -> None:
    s = d.session
    want = s.words() - s.dropped - d.gone
    seen = phrases_in(body, want)
    assert seen == want, f"{d.kind}: still not sent: {sorted(want - seen)}"
    text = request_text(body)
    at = [text.index(w) for w in ordered(s) if w in want]
    assert at == sorted(at), f"{d.kind}: the words are not in their order"
    mine = {t.prompt for t in s.turns} | set(asked) | {f"after {w}" for w in s.extra}
    typed = [p for m in body["messages"] if (p := prompt_of(m)) is not None]
    foreign = [p for p in typed if p not in mine and SUMMARY_MARK not in p]
    assert not foreign, f"{d.kind}: prompts not the session's: {foreign}"


@pytest.mark.parametrize("kind", MENDED)
def test_apply_brings_back_what_the_next_resume_lost_and_rollback_undoes_it(
    kind: str, claude_base: Session, claude_compacted: Session, tmp_path: Path
) -> None:
    d = LOSSES[kind]((claude_compacted if kind in ON_COMPACTED else claude_base).copy(tmp_path))
    s = d.session
    before = d.next_request("premise")  # the premise, on the real CLI (it appends this turn, as a user would)
    assert not phrases_in(before, d.lost), f"{kind}: the damage lost nothing"
    found = listed(s)
    assert [x["kind"] for x in found] == [KIND[kind]], found
    loss = found[0]
    guess = ["--accept-guess", loss["id"]] if loss["confidence"] == "guess" else []
    [file] = (s.peer.config_dir / "projects").glob(f"*/{loss['sessionId']}.jsonl")  # the new one, for --continue
    damaged = file.read_bytes()
    pkg = tmp_path / "pkg"
    out = kurahi("rescue", "apply", loss["id"], "--claude", str(s.peer.config_dir), "--yes", "--out", str(pkg), *guess)
    assert "verified: yes" in out.stdout, out.stdout
    assert listed(s) == []  # listed no more, and no note about Kurahi's own row (listed() checks)
    kurahi("activate", "rollback", str(pkg))
    assert file.read_bytes() == damaged  # byte for byte
    assert "verified: yes" in kurahi("activate", "apply", str(pkg)).stdout  # the same package, again
    assert_whole(d, d.next_request("after"), ["premise", "after"])


def test_rollback_after_claude_appended_keeps_the_later_turn(claude_base: Session, tmp_path: Path) -> None:
    d = LOSSES["null_parent"](claude_base.copy(tmp_path))
    s = d.session
    loss = listed(s)[0]
    pkg = tmp_path / "pkg"
    kurahi("rescue", "apply", loss["id"], "--claude", str(s.peer.config_dir), "--yes", "--out", str(pkg))
    s.peer.prompt("later P9-INDIA", resume=s.sid, cwd=s.cwd)  # claude appends to the repaired file
    out = kurahi("activate", "rollback", str(pkg))
    assert "appended again" in out.stdout, out.stdout
    body = d.next_request("last")
    seen = phrases_in(body, s.words() | {"P9-INDIA", reply_for("later P9-INDIA")})
    assert not d.lost & seen  # the damage is back, as it was before the repair
    assert {"P9-INDIA", reply_for("later P9-INDIA"), *s.turns[-1].words} <= seen  # the later turns are kept
    assert len(listed(s)) == 1  # listed again (the rows as they were are the newest in the file now)


def test_a_kept_tail_the_file_keeps_no_request_record_of_is_refused_with_its_reason(
    claude_compacted: Session, tmp_path: Path
) -> None:
    d = LOSSES["preserved_missing"](claude_compacted.copy(tmp_path))
    s = d.session
    rows = s.rows()
    at = next(i for i, r in enumerate(rows) if r.get("subtype") == "compact_boundary")
    records = ("api-request", "api-request-blob")
    write_rows(s.path, [r for i, r in enumerate(rows) if i < at or r.get("type") not in records])  # as kept by none
    found = listed(s)
    assert [x["kind"] for x in found] == [KIND["preserved_missing"]], found
    assert "no request after the compaction is recorded" in found[0]["applyRefused"]
    files = {p: p.read_bytes() for p in (s.peer.config_dir / "projects").rglob("*.jsonl")}
    out = kurahi("rescue", "apply", found[0]["id"], "--claude", str(s.peer.config_dir), "--yes", code=1)
    assert found[0]["applyRefused"].split(";")[0] in out.stderr + out.stdout
    assert {p: p.read_bytes() for p in files} == files


@pytest.mark.parametrize("kind", ["missing_parent", "orphan_result", "compacted", "rewound", "with_subagent"])
def test_what_the_cli_bridges_or_means_is_not_listed_and_apply_has_nothing_to_do(
    kind: str, claude_base: Session, claude_compacted: Session, tmp_path: Path
) -> None:
    d = NON_LOSSES[kind]((claude_compacted if kind in ON_COMPACTED_NON_LOSSES else claude_base).copy(tmp_path))
    assert listed(d.session) == []
    if kind == "compacted":  # nothing to bring back: any id is unknown (exit 3)
        out = kurahi("rescue", "apply", "0", "--claude", str(d.session.peer.config_dir), "--yes", code=3)
        assert "no Claude Code loss" in out.stderr


def test_a_running_claude_on_the_session_refuses_apply_and_rollback(claude_base: Session, tmp_path: Path) -> None:
    d = LOSSES["null_parent"](claude_base.copy(tmp_path))
    s = d.session
    loss = listed(s)[0]
    pkg = tmp_path / "pkg"
    kurahi("rescue", "plan", loss["id"], "--claude", str(s.peer.config_dir), "--out", str(pkg))
    with s.peer.api.hold():
        run = s.peer.spawn("-p", "held", "--output-format", "json", "--resume", s.sid, cwd=s.cwd)
        run.wait_for_request()
        out = kurahi("rescue", "apply", loss["id"], "--claude", str(s.peer.config_dir), "--yes", code=5)
        assert f"pid {run.pid}" in out.stderr and "quit it first" in out.stderr
        kurahi("activate", "rollback", str(pkg), code=5)
    assert run.finish().returncode == 0
    assert b"kurahiRepair" not in s.path.read_bytes()  # (the running claude wrote to it; Kurahi did not)
    out = kurahi("activate", "apply", str(pkg), code=1)  # the file grew since the plan
    assert "changed since the plan" in out.stderr
