"""Provenance of a reply's phrases: every verdict on a constructed session, and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli.common import EXIT
from kurahi.cli.evidence import app
from kurahi.errors import LineageError, ProvenanceError
from kurahi.lineage.provenance import VERDICTS, auto_phrases, normalize, provenance
from kurahi.store.catalog import Catalog
from kurahi.store.session import Session
from kurahi.testing import assistant_message, tool_result, user_message

REPLY = (
    "The Harbour meeting is with Tamsin and Kestrel; the file said Lantern-42. "
    "Bexley, Quasimodo, Ravenscar, Zanzibar and Wombat were mentioned, and Yggdrasil."
)


def say(text: str, ts: int) -> dict[str, Any]:
    return assistant_message([{"type": "text", "text": text}], ts)


def write_session(path: Path) -> dict[str, str]:
    """A session with an abandoned branch, a compaction, a later turn and a reply after a read."""
    ids: dict[str, str] = {}
    with Session.create(path, cwd="/home/ava") as s:
        s.append_model_change("deterministic", "alpha")
        ids["u1"] = s.append_message(user_message("Let us plan the Orchard trip", 1))
        ids["a1"] = s.append_message(say("Noted the Orchard trip.", 2))
        ids["ux"] = s.append_message(user_message("a secret Quasimodo plan", 3))
        s.append_message(say("Understood.", 4))
        s.branch(ids["a1"])  # the Quasimodo turn is abandoned
        ids["u2"] = s.append_message(user_message("old details: Ravenscar", 5))
        s.append_message(say("ok", 6))
        ids["u3"] = s.append_message(user_message("keep this: Kestrel", 7))
        s.append_message(say("kept", 8))
        ids["comp"] = s.append_compaction("The user spoke of Tamsin.", ids["u3"], 5000)
        ids["u5"] = s.append_message(user_message([{"type": "text", "text": "note Bexley"}], 9))
        s.append_message(say("noted", 10))
        ids["cue"] = s.append_message(user_message("What about the   harbour\nmeeting?", 11))
        call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "notes.md"}}
        s.append_message(assistant_message([call], 12))
        ids["tool"] = s.append_message(tool_result("c1", "read", "the file says lantern-42", 13))
        ids["reply"] = s.append_message(say(REPLY, 14))
    return ids


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    t = tmp_path / "s.jsonl"
    ids = write_session(t)
    ws = tmp_path / "workspace"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-11-30.md").write_text("We talked about Zanzibar.\n")
    (ws / "notes.md").write_text("nothing to see\n")
    (ws / "photo.bin").write_bytes(b"\x89PNG\0\0Wombat")
    return t, ws, ids


def verdicts(report: Any) -> dict[str, str]:
    return {p.phrase: p.verdict for p in report.phrases}


PHRASES = ["HARBOUR  meeting", "Lantern-42", "Tamsin", "Kestrel", "Bexley", "Quasimodo", "Ravenscar"]
PHRASES += ["Zanzibar", "Wombat", "Yggdrasil"]


def test_every_verdict(world: tuple[Path, Path, dict[str, str]]) -> None:
    t, ws, ids = world
    r = provenance(t, phrases=PHRASES, workspace=ws)
    assert r.reply_id == ids["reply"]
    assert r.cue_ids == [ids["cue"]]
    assert (r.tool_calls, r.reads) == (1, 1)
    assert r.tool_result_ids == [ids["tool"]]
    assert r.compaction_id == ids["comp"]
    assert verdicts(r) == {
        "HARBOUR  meeting": "cue",
        "Lantern-42": "tool",
        "Tamsin": "context-only",
        "Kestrel": "context-only",
        "Bexley": "context-only",
        "Quasimodo": "elsewhere",
        "Ravenscar": "elsewhere",
        "Zanzibar": "workspace",
        "Wombat": "absent",
        "Yggdrasil": "absent",
    }
    by = {p.phrase: p for p in r.phrases}
    regions = {p: [o.where["region"] for o in by[p].occurrences if o.source == "context"] for p in by}
    assert regions["Tamsin"] == ["summary"]
    assert regions["Kestrel"] == ["retained"]
    assert regions["Bexley"] == ["later"]
    assert regions["Quasimodo"] == regions["Ravenscar"] == []
    assert [o.where["region"] for o in by["Quasimodo"].occurrences] == ["other-branch"]
    assert [o.where["region"] for o in by["Ravenscar"].occurrences] == ["compacted-away"]
    assert any("other-branch" in why for why in by["Quasimodo"].reasons)
    assert [o.source for o in by["Zanzibar"].occurrences] == ["memory"]
    assert r.skipped_files == ["photo.bin (binary)"]  # and Wombat inside it is not found


def test_cue_and_tool_are_also_in_the_context_but_win(world: tuple[Path, Path, dict[str, str]]) -> None:
    t, _, ids = world
    r = provenance(t, phrases=["harbour meeting", "lantern-42"])
    cue, tool = r.phrases
    assert any(o.source == "context" and o.where["inWindow"] for o in cue.occurrences)
    assert (cue.verdict, tool.verdict) == ("cue", "tool")
    assert cue.occurrences[0].where == {"entryId": ids["cue"]}


def test_an_earlier_reply_has_its_own_cue(world: tuple[Path, Path, dict[str, str]]) -> None:
    t, _, ids = world
    r = provenance(t, reply_id=ids["a1"], phrases=["orchard trip", "Bexley"])
    assert r.cue_ids == [ids["u1"]]
    assert (r.tool_calls, r.reads) == (0, 0)
    assert verdicts(r) == {"orchard trip": "cue", "Bexley": "elsewhere"}
    assert [o.where["region"] for o in r.phrases[1].occurrences] == ["after-reply", "after-reply"]  # u5, the reply


def test_auto_takes_distinctive_tokens_not_in_the_cue(world: tuple[Path, Path, dict[str, str]]) -> None:
    t, ws, _ = world
    r = provenance(t, auto=True, workspace=ws)
    got = verdicts(r)
    assert "Harbour" not in got  # in the cue
    assert got["Lantern-42"] == "tool"
    assert got["Tamsin"] == "context-only"
    assert got["Quasimodo"] == "elsewhere"
    assert got["Zanzibar"] == "workspace"
    assert got["Wombat"] == "absent"


def test_auto_phrases_rules() -> None:
    assert auto_phrases("Met Anna at Dock-7 on 2026-11-30 about the plan", "anna") == ["Dock-7", "2026-11-30"]
    assert auto_phrases("Zed Quux quux", "") == ["Quux"]
    assert normalize("  A\tB\nc ") == "a b c"


def test_home_mode_searches_other_transcripts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sessions = home / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (home / "agents" / "main" / "workspace").mkdir()
    write_session(sessions / "s.jsonl")
    with Session.create(sessions / "older.jsonl", cwd="/home/ava") as s:
        s.append_message(user_message("tell me about Yggdrasil", 1))
    Catalog(sessions / "sessions.json").upsert("agent:main:main", {"sessionId": "s", "sessionFile": "s.jsonl"})
    args = ["provenance", "--home", str(home), "--agent", "main", "--key", "agent:main:main", "--json"]
    res = CliRunner().invoke(app, [*args, "--phrase", "yggdrasil", "--phrase", "Wombat"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    got = {p["phrase"]: p for p in out["phrases"]}
    assert got["yggdrasil"]["verdict"] == "elsewhere"
    assert got["yggdrasil"]["occurrences"][0]["source"] == "other-transcript"
    assert got["Wombat"]["verdict"] == "absent"
    assert out["otherTranscripts"] == [str(sessions / "older.jsonl")]


def test_cli_json_and_table(world: tuple[Path, Path, dict[str, str]]) -> None:
    t, ws, ids = world
    base = ["provenance", "--transcript", str(t), "--workspace", str(ws), "--phrase", "Tamsin"]
    res = CliRunner().invoke(app, [*base, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["replyId"] == ids["reply"]
    assert out["cueEntryIds"] == [ids["cue"]]
    assert (out["toolCalls"], out["reads"]) == (1, 1)
    assert out["verdictOrder"] == list(VERDICTS)
    assert out["phrases"][0]["verdict"] == "context-only"
    assert out["phrases"][0]["occurrences"][0] == {
        "source": "context",
        "index": 0,
        "region": "summary",
        "entryId": ids["comp"],
        "inWindow": False,
    }
    res = CliRunner().invoke(app, base)
    assert res.exit_code == 0, res.output
    assert "context-only" in res.stdout


def test_a_dash_reads_the_transcript_from_stdin(world: tuple[Path, Path, dict[str, str]]) -> None:
    t, ws, _ = world
    args = ["provenance", "--workspace", str(ws), "--phrase", "Tamsin", "--phrase", "Zanzibar", "--json"]
    from_file = CliRunner().invoke(app, [*args, "--transcript", str(t)])
    from_stdin = CliRunner().invoke(app, [*args, "--transcript", "-"], input=t.read_bytes())
    assert from_file.exit_code == from_stdin.exit_code == 0, from_stdin.output
    a, b = json.loads(from_stdin.stdout), json.loads(from_file.stdout)
    assert a.pop("transcript") == "<stdin>" and b.pop("transcript") == str(t)  # not the private copy's path
    assert a == b
    table = CliRunner().invoke(app, ["provenance", "--transcript", "-", "--phrase", "Tamsin"], input=t.read_bytes())
    assert table.exit_code == 0 and " in <stdin>: " in table.stdout, table.output
    empty = CliRunner().invoke(app, ["provenance", "--transcript", "-", "--phrase", "Tamsin"], input=b"")
    assert empty.exit_code == EXIT.INVALID and "<stdin>" in empty.stderr and "kurahi-stdin-" not in empty.stderr


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("extra", "code", "needle"),
    [
        (["--reply", "@cue", "--phrase", "Tamsin"], EXIT.USAGE, "not an assistant message"),
        (["--reply", "nope", "--phrase", "Tamsin"], EXIT.NOT_FOUND, "no entry with id"),
        (["--phrase", "x"], EXIT.USAGE, "shorter than 2"),
        (["--phrase", " x  "], EXIT.USAGE, "shorter than 2"),
        ([], EXIT.USAGE, "at least one phrase"),
        (["--workspace", "@missing", "--phrase", "Tamsin"], EXIT.NOT_FOUND, "does not exist"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    world: tuple[Path, Path, dict[str, str]], tmp_path: Path, extra: list[str], code: int, needle: str
) -> None:
    t, _, ids = world
    extra = [ids["cue"] if a == "@cue" else str(tmp_path / "missing") if a == "@missing" else a for a in extra]
    before = snapshot(tmp_path)
    res = CliRunner().invoke(app, ["provenance", "--transcript", str(t), *extra])
    assert res.exit_code == code, res.output
    assert needle in " ".join(res.output.split())
    assert snapshot(tmp_path) == before


def test_bad_input_in_the_library(world: tuple[Path, Path, dict[str, str]]) -> None:
    t, _, ids = world
    with pytest.raises(ProvenanceError, match="not an assistant message") as info:
        provenance(t, reply_id=ids["tool"], phrases=["Tamsin"])
    assert isinstance(info.value, LineageError)
    assert info.value.path == str(t)


def test_cli_needs_one_source(world: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    t, _, _ = world
    res = CliRunner().invoke(app, ["provenance", "--phrase", "Tamsin"])
    assert res.exit_code == EXIT.USAGE
    res = CliRunner().invoke(app, ["provenance", "--home", str(tmp_path), "--transcript", str(t), "--phrase", "ab"])
    assert res.exit_code == EXIT.USAGE
    res = CliRunner().invoke(app, ["provenance", "--home", str(tmp_path), "--phrase", "ab"])
    assert res.exit_code == EXIT.USAGE
