"""Stitch A + B → C and check it: byte-identical copies, Pi agrees, markers on both sides."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.cli.common import EXIT
from kurahi.context.files import project_file
from kurahi.errors import ParentCycleError, StitchError
from kurahi.lineage.check import check, messages_sha256
from kurahi.lineage.stitch import stitch
from kurahi.store.session import Session
from kurahi.testing import assistant_message, user_message
from support.peer import PiPeer
from support.testdata import JSON_ERA, openclaw_state

OPENCLAW = openclaw_state(JSON_ERA) / "agents" / "main" / "sessions"
OLD = "fe0cc71e-f9a6-41ee-8e2a-ecb95f96fc86.jsonl.reset.2026-11-30T08-24-46.695Z"
NEW = "ed83c604-551f-41af-9a44-65881d6be000.jsonl"


def reply(text: str, ts: int) -> dict[str, Any]:
    return assistant_message([{"type": "text", "text": text}], ts)


@pytest.fixture
def a_and_b(tmp_path: Path) -> tuple[Path, Path]:
    """A: a branch abandoned, a compaction keeping the marker; B: a clean path with its own marker."""
    a, b = tmp_path / "A.jsonl", tmp_path / "B.jsonl"
    with Session.create(a, cwd="/home/ava") as s:
        s.append_model_change("deterministic", "alpha")
        s.append_thinking_level_change("low")
        s.append_message(user_message("plan the week", 1))
        a1 = s.append_message(reply("here is a plan", 2))
        s.append_message(user_message("no, a different plan", 3))
        s.append_message(reply("abandoned plan", 4))
        s.branch(a1)
        u3 = s.append_message(user_message("remember PURPLE-GIRAFFE-ALPHA", 5))
        s.append_message(reply("noted", 6))
        s.append_compaction("We planned the week.", u3, 1234)
        s.append_message(user_message("what next?", 7))
        s.append_message(reply("the second item", 8))
    with Session.create(b, cwd="/home/ava") as s:
        s.append_message(user_message("after the reset: ORANGE-WALRUS-OMEGA", 10))
        s.append_message(reply("carrying on", 11))
    return a, b


@pytest.fixture(params=[1, 3, 4096])
def batch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Lines copied per write: tiny batches put the re-parented root and renamed ids on edges."""
    import kurahi.lineage.stitch as stitch_module

    monkeypatch.setattr(stitch_module, "_BATCH", request.param)
    return int(request.param)


def _lines(p: Path) -> list[bytes]:
    with open(p, "rb") as fh:  # read independently of kurahi's readers
        return fh.read().split(b"\n")[:-1]


def test_every_copied_line_is_byte_identical(a_and_b: tuple[Path, Path], tmp_path: Path, batch: int) -> None:
    a, b = a_and_b
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (a, b)}
    c = tmp_path / "C.jsonl"
    rep = stitch([a, b], c)
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (a, b)} == before, "a source changed"
    assert [s.sha256 for s in rep.sources] == [before[a], before[b]]
    out = _lines(c)
    header = json.loads(out[0])
    assert header["type"] == "session" and header["parentSession"] == str(b)
    assert [s["sessionId"] for s in header["lineage"]["sources"]] == [json.loads(_lines(p)[0])["id"] for p in (a, b)]
    src_lines = {str(a): _lines(a), str(b): _lines(b)}
    changed = 0
    for s in rep.sources:
        for out_no, src_no, sha, change in s.lines:
            got, want = out[out_no - 1], src_lines[s.path][src_no - 1]
            assert hashlib.sha256(want).hexdigest() == sha
            if change is None:
                assert got == want
            else:
                changed += 1
                assert change == "parentId"
                g, w = json.loads(got), json.loads(want)
                assert w["parentId"] is None and g["parentId"] == rep.sources[0].leaf_id
                assert {**g, "parentId": None} == w
                assert got.replace(b'"parentId":"' + g["parentId"].encode() + b'"', b'"parentId":null') == want
    assert changed == 1
    # A's abandoned branch is left out, B is copied whole.
    assert rep.sources[0].not_copied == 3 and rep.sources[1].not_copied == 0
    assert len(out) == 1 + rep.sources[0].copied + rep.sources[1].copied
    assert hashlib.sha256(c.read_bytes()).hexdigest() == rep.out_sha256


def test_check_finds_markers_from_both_sides(a_and_b: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = a_and_b
    c = tmp_path / "C.jsonl"
    stitch([a, b], c)
    rep = check(c, markers=["PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"], reserves=[16384, 50000])
    assert rep.ok and rep.projections_agree
    assert [m.part for m in rep.markers] == ["retained", "later"]
    assert (rep.summary, rep.retained) == (1, 2)
    assert len(rep.routes) == 2 and all(r["route"] == "fits" for r in rep.routes)
    alone = check(b, markers=["PURPLE-GIRAFFE-ALPHA"])
    assert not alone.ok and alone.markers[0].index is None
    res = CliRunner().invoke(app, ["lineage", "check", str(b), "--marker", "PURPLE-GIRAFFE-ALPHA"])
    assert res.exit_code == EXIT.FAILED and "missing" in res.output


@pytest.mark.pi
def test_pi_projects_what_check_reports(a_and_b: tuple[Path, Path], tmp_path: Path, pi: PiPeer) -> None:
    a, b = a_and_b
    c = tmp_path / "C.jsonl"
    stitch([a, b], c)
    live = pi.context(c)
    rep = check(c)
    assert messages_sha256(live["messages"]) == rep.fast_sha256 and len(live["messages"]) == rep.messages
    assert live["thinkingLevel"] == "low"


def test_real_openclaw_reset_is_rebuilt(tmp_path: Path) -> None:
    src = tmp_path / "sessions"
    shutil.copytree(OPENCLAW, src)
    c = tmp_path / "C.jsonl"
    res = CliRunner().invoke(
        app,
        ["lineage", "stitch", str(src / OLD), str(src / NEW), "--out", str(c), "--report", str(tmp_path / "r.json")],
    )
    assert res.exit_code == 0, res.output
    rep = check(c, markers=["PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"])
    assert rep.ok
    assert check(src / NEW, markers=["PURPLE-GIRAFFE-ALPHA"]).markers[0].index is None
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["changedLines"] == 1 and report["edges"][0]["parent"] == report["sources"][0]["leafId"]


def test_bad_inputs_are_refused_and_sources_untouched(a_and_b: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = a_and_b
    snapshot = {p: p.read_bytes() for p in (a, b)}
    with pytest.raises(StitchError, match="same file"):
        stitch([a, a], tmp_path / "x.jsonl")
    exists = tmp_path / "exists.jsonl"
    exists.write_text("keep me\n")
    with pytest.raises(StitchError, match="never overwrites"):
        stitch([a, b], exists)
    assert exists.read_text() == "keep me\n"
    with pytest.raises(StitchError, match="at least one AFTER"):
        stitch([a], tmp_path / "y.jsonl")
    # B's root already parented (a stitched file used as AFTER has a parented root if re-stitched).
    parented = tmp_path / "parented.jsonl"
    rows = _lines(b)
    first = json.loads(rows[1])
    first["parentId"] = "elsewhere"
    parented.write_bytes(b"\n".join([rows[0], json.dumps(first).encode(), *rows[2:]]) + b"\n")
    with pytest.raises(StitchError, match="already has a parent"):
        stitch([a, parented], tmp_path / "z.jsonl")
    # A cycle in a source.
    cyc = tmp_path / "cycle.jsonl"
    cyc.write_text(
        rows[0].decode()
        + '\n{"type":"message","id":"x","parentId":"y","timestamp":"t","message":{"role":"user","content":"a"}}'
        + '\n{"type":"message","id":"y","parentId":"x","timestamp":"t","message":{"role":"user","content":"b"}}\n'
    )
    with pytest.raises(ParentCycleError):
        stitch([cyc, b], tmp_path / "w.jsonl")
    # AFTER older than BEFORE: refused, or a warning with --force.
    with pytest.raises(StitchError, match="--force"):
        stitch([b, a], tmp_path / "v.jsonl", rename_colliding=True)
    rep = stitch([b, a], tmp_path / "v.jsonl", force=True)
    assert rep.warnings
    assert {p: p.read_bytes() for p in (a, b)} == snapshot
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_torn_last_line_and_a_damaged_line_are_named_never_dropped_silently(
    a_and_b: tuple[Path, Path], tmp_path: Path
) -> None:
    """A crash mid-write left B's last line torn, and A holds a line that is not JSON: Pi leaves
    both out, so stitch does too, but names each (file and line) in its output and its report."""
    a, b = a_and_b
    rows = _lines(a)
    damaged = tmp_path / "A-damaged.jsonl"
    damaged.write_bytes(b"\n".join([*rows[:3], b"{not json", *rows[3:]]) + b"\n")
    torn = b'{"type":"message","id":"t0rn","parentId":null,"message":{"role":"user","content":"half'
    with b.open("ab") as f:
        f.write(torn)
    snapshot = {p: p.read_bytes() for p in (damaged, b)}
    out, report = tmp_path / "C.jsonl", tmp_path / "report.json"
    args = ["lineage", "stitch", str(damaged), str(b), "--out", str(out), "--report", str(report)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == EXIT.OK, res.output
    torn_line = len(_lines(b)) + 1  # the lines with a newline, then the torn one
    said = [
        f"{damaged} line 4: not JSON",
        f"{b} line {torn_line}: torn last line ({len(torn)} bytes, no newline, not JSON: a crash mid-write): "
        f"not copied into {out}",
        f"`kurahi session repair {b}`",
    ]
    for text in said:
        assert text in " ".join(res.stderr.split()), (text, res.stderr)  # wrapped or not
    warnings = json.loads(report.read_text())["warnings"]
    assert any(w.startswith(f"{damaged} line 4: not JSON") for w in warnings), warnings
    assert any(w.startswith(f"{b} line {torn_line}: torn last line") for w in warnings), warnings
    assert b"t0rn" not in out.read_bytes() and b"{not json" not in out.read_bytes()
    assert {p: p.read_bytes() for p in (damaged, b)} == snapshot


def test_a_leaf_without_an_id_is_refused_as_an_attach_point(a_and_b: tuple[Path, Path], tmp_path: Path) -> None:
    # Found by fuzzing: an entry without an id as BEFORE's last line (Pi's leaf) left AFTER
    # nothing to attach to, and stitch failed on an assert. With --leaf it goes through.
    a, b = a_and_b
    idless = tmp_path / "idless.jsonl"
    rows = _lines(a)
    last = json.loads(rows[-1])
    late = {"type": "custom", "customType": "x", "parentId": last["id"], "timestamp": last["timestamp"]}
    idless.write_bytes(b"\n".join([*rows, json.dumps(late).encode()]) + b"\n")
    with pytest.raises(StitchError, match=rf"leaf \(line {len(rows) + 1}\) has no id.*--leaf"):
        stitch([idless, b], tmp_path / "c.jsonl")
    assert not (tmp_path / "c.jsonl").exists()
    rep = stitch([idless, b], tmp_path / "c.jsonl", leaf_id=last["id"])
    assert rep.edges[0]["parent"] == last["id"]
    # The same for a middle source, whose leaf the next one attaches to.
    later = tmp_path / "later.jsonl"
    with Session.create(later, cwd="/home/ava") as s:
        s.append_message(user_message("a second reset", 20))
    with pytest.raises(StitchError, match="its leaf has no id"):
        stitch([b, idless, later], tmp_path / "d.jsonl", rename_colliding=True, force=True)


def test_colliding_ids_are_refused_or_renamed(a_and_b: tuple[Path, Path], tmp_path: Path, batch: int) -> None:
    a, _ = a_and_b
    twin = tmp_path / "twin.jsonl"
    rows = _lines(a)
    twin.write_bytes(b"\n".join(rows[:1] + rows[3:5]) + b"\n")  # two of A's entries, same ids
    fixed = json.loads(twin.read_bytes().split(b"\n")[1])
    fixed["parentId"] = None
    twin_rows = twin.read_bytes().split(b"\n")
    twin_rows[1] = json.dumps(fixed).encode()
    twin.write_bytes(b"\n".join(twin_rows))
    with pytest.raises(StitchError, match="rename-colliding"):
        stitch([a, twin], tmp_path / "c1.jsonl", force=True)
    rep = stitch([a, twin], tmp_path / "c2.jsonl", rename_colliding=True, force=True)
    assert rep.renamed and all(len(v) == 8 for v in rep.renamed.values())
    assert check(tmp_path / "c2.jsonl").projections_agree
    out = _lines(tmp_path / "c2.jsonl")
    ids = [json.loads(x).get("id") for x in out[1:]]
    assert len(ids) == len(set(ids))
    rows = [row for src in rep.sources for row in src.lines]
    assert [row[0] for row in rows] == list(range(2, len(out) + 1))
    assert [row[3] for row in rep.sources[1].lines] == ["renamed+parentId", "renamed"]


def test_evidence_folder_verifies_with_sha256sum(a_and_b: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = a_and_b
    ev = tmp_path / "evidence"
    res = CliRunner().invoke(
        app, ["lineage", "stitch", str(a), str(b), "--out", str(tmp_path / "C.jsonl"), "--evidence", str(ev)]
    )
    assert res.exit_code == 0, res.output
    manifest = json.loads((ev / "manifest.json").read_text())
    assert manifest["outputs"]["stitched"]["sha256"] == hashlib.sha256((tmp_path / "C.jsonl").read_bytes()).hexdigest()
    if shutil.which("sha256sum"):
        subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=ev, check=True)


def test_path_command_reports_the_side_branch(a_and_b: tuple[Path, Path]) -> None:
    a, _ = a_and_b
    res = CliRunner().invoke(app, ["lineage", "path", str(a), "--json"])
    assert res.exit_code == 0
    data = json.loads(res.output)
    assert [s["size"] for s in data["sideBranches"]] == [2] and data["abandonedEntries"] == 2
    assert len(data["compactions"]) == 1
    assert project_file(a).context.to_dict()["leafId"] == data["path"][-1]["id"]


@pytest.mark.pi
def test_pi_agrees_with_check_on_many_random_stitches(tmp_path: Path, pi: PiPeer) -> None:
    """Random A (branches, compactions, leaf moves) + random B (and sometimes a third piece)."""
    from kurahi.testing import build_session

    outs: list[Path] = []
    reports = []
    for seed in range(40):
        pieces = []
        for k in range(2 + seed % 2):
            p = tmp_path / f"s{seed}-{k}.jsonl"
            build_session(p, entries=60 + (seed * 37) % 400, seed=seed * 10 + k, compact_every=40 + seed % 50)
            pieces.append(p)
        c = tmp_path / f"c{seed}.jsonl"
        stitch(pieces, c, rename_colliding=True, force=True)
        outs.append(c)
        reports.append(check(c))
    for c, rep, live in zip(outs, reports, pi.contexts(outs), strict=True):
        assert rep.projections_agree, c
        assert len(live["messages"]) == rep.messages and messages_sha256(live["messages"]) == rep.fast_sha256, c
