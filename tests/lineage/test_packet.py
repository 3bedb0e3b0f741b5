"""Evidence packets: everything a repair read and wrote, hashed; verify catches any change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kurahi.cli.evidence import app
from kurahi.errors import UsageError
from kurahi.lineage.packet import first_replies, verify_packet, write_packet
from kurahi.store.session import Session
from kurahi.testing import assistant_message, build_session, user_message

runner = CliRunner()


def _live(tmp_path: Path) -> Path:
    p = tmp_path / "live.jsonl"
    with Session.create(p, cwd="/w") as s:
        s.append_message(user_message("do you remember the lantern?", 1))
        s.append_message(assistant_message([{"type": "text", "text": "Yes: the lantern is COBALT-7."}], 2))
        s.append_message(user_message("and the gate?", 3))
        s.append_message(assistant_message([{"type": "text", "text": "Gate code 4471."}], 4))
    return p


def _pieces(tmp_path: Path) -> dict[str, Path]:
    a, b, c = tmp_path / "A.jsonl", tmp_path / "B.jsonl", tmp_path / "C.jsonl"
    build_session(a, entries=80, seed=1)
    build_session(b, entries=40, seed=2)
    c.write_bytes(a.read_bytes())
    pkg = tmp_path / "pkg"
    (pkg / "rollback").mkdir(parents=True)
    (pkg / "plan.json").write_text('{"plan": 1}')
    (pkg / "rollback" / "old.jsonl").write_bytes(b.read_bytes())
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("nothing about lanterns\n")
    return {"a": a, "b": b, "c": c, "pkg": pkg, "live": _live(tmp_path), "ws": ws}


def test_packet_holds_everything_and_verifies(tmp_path: Path) -> None:
    p = _pieces(tmp_path)
    out = tmp_path / "packet"
    r = runner.invoke(
        app,
        [
            "packet", "--out", str(out), "--source", str(p["a"]), "--source", str(p["b"]),
            "--reconstruction", str(p["c"]), "--activation", str(p["pkg"]), "--live", str(p["live"]),
            "--replies", "2", "--phrase", "COBALT-7", "--workspace", str(p["ws"]), "--json",
        ],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["files"]) == {
        "sources/A.jsonl", "sources/B.jsonl", "reconstruction/C.jsonl",
        "activation/plan.json", "activation/rollback/old.jsonl", "live/live.jsonl",
    }  # fmt: skip
    assert (out / "activation/rollback/old.jsonl").read_bytes() == p["b"].read_bytes()
    replies = json.loads((out / "replies.json").read_text())
    assert [x["text"] for x in replies] == ["Yes: the lantern is COBALT-7.", "Gate code 4471."]
    report = json.loads((out / "reports/provenance-1.json").read_text())
    assert report["replyId"] == replies[0]["entryId"]
    assert [(x["phrase"], x["verdict"]) for x in report["phrases"]] == [("COBALT-7", "absent")]
    assert (out / "reports/provenance-2.json").exists()
    assert runner.invoke(app, ["verify", str(out)]).exit_code == 0
    # Any change is caught: an edited copy, an extra file, a removed file.
    (out / "sources/A.jsonl").write_bytes(p["a"].read_bytes() + b"\n")
    check = verify_packet(out)
    assert not check.ok and any("sources/A.jsonl" in x for x in check.problems)
    (out / "sources/A.jsonl").write_bytes(p["a"].read_bytes())
    (out / "stray.txt").write_text("x")
    assert any("stray.txt" in x for x in verify_packet(out).problems)
    (out / "stray.txt").unlink()
    (out / "replies.json").unlink()
    assert any("replies.json" in x for x in verify_packet(out).problems)


def test_hashes_only_leaves_the_conversation_out(tmp_path: Path) -> None:
    p = _pieces(tmp_path)
    out = write_packet(
        tmp_path / "shareable",
        sources=[p["a"], p["b"]],
        reconstruction=p["c"],
        activation=p["pkg"],
        live=p["live"],
        replies=2,
        hashes_only=True,
    )
    assert not (out / "sources").exists() and not (out / "reconstruction").exists()
    assert not (out / "activation/rollback/old.jsonl").exists() and (out / "activation/plan.json").exists()
    text = "".join(f.read_text(errors="replace") for f in out.rglob("*") if f.is_file())
    assert "COBALT-7" not in text and "lantern" not in text
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["hashesOnly"] and manifest["files"]["sources/A.jsonl"]["included"] is False
    assert len(manifest["files"]["sources/A.jsonl"]["sha256"]) == 64
    assert all(len(r["sha256"]) == 64 and "text" not in r for r in json.loads((out / "replies.json").read_text()))
    assert verify_packet(out).ok


def test_bad_input(tmp_path: Path) -> None:
    p = _pieces(tmp_path)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(UsageError, match="not an empty directory"):
        write_packet(tmp_path / "full", sources=[p["a"]])
    with pytest.raises(UsageError, match="no such file"):
        write_packet(tmp_path / "new", sources=[tmp_path / "missing.jsonl"])
    assert not (tmp_path / "new").exists()  # nothing written for a refused packet
    r = runner.invoke(app, ["verify", str(tmp_path)])
    assert r.exit_code == 2 and "not an evidence packet" in r.output
    assert first_replies(p["live"], 1, after="nope") == []
