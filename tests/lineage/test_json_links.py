"""Which key each JSON-era transcript belongs to, and what ``find_losses`` makes of it (in process, fast).

The subprocess proofs of the same cases, through ``kurahi rescue``, are in
``tests/lifecycle/test_rescue.py``; these keep the decisions in the fast tier.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kurahi.lifecycle.rescue.losses import find_losses
from kurahi.lineage.find import find_lineage
from support.json_era import T0, JsonEraDir
from support.testdata import data_path, tree_hash


def test_the_closest_successor_decides_whose_archive_it_is(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    alice, _ = d.transcript(T0, ["private"])
    d.point("agent:main:alice", alice, T0)
    alice2, _ = d.reset("agent:main:alice", alice, T0 + 60_000, ["again"])
    bob, _ = d.transcript(T0 + 61_000, ["bob here"])
    d.point("agent:main:bob", bob, T0 + 61_000)
    assert [p.session_id for p in find_lineage(d.root, key="agent:main:bob").pieces] == [bob]
    pieces = find_lineage(d.root, key="agent:main:alice").pieces
    assert [(p.session_id, p.confidence, p.current) for p in pieces] == [
        (alice, "matched", False),
        (alice2, "recorded", True),
    ]


def test_a_stamp_a_little_before_the_next_session_is_a_guess(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    old, last = d.transcript(T0, ["before"])
    d.archive(old, last + 10_000)
    new, _ = d.transcript(last + 12_000, ["after"])
    d.point("agent:main:main", new, last + 12_000)
    (first, _) = find_lineage(d.root).pieces
    assert first.session_id == old and first.confidence == "guess"
    assert first.found_by == ("reset time 2 s before next header",)


def test_trajectory_and_checkpoint_files_are_artifacts_not_transcripts(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    sid, _ = d.transcript(T0, ["hello"])
    d.point("agent:main:main", sid, T0)
    d.trajectory(sid, "agent:main:main")
    (d.sessions / f"{sid}.trajectory-path.json").write_text("{}\n")
    (d.sessions / f"{sid}.checkpoint.0b6f1c9e-1111-4222-8333-444455556666.jsonl").write_text("{}\n")
    lineage = find_lineage(d.root)
    assert [p.session_id for p in lineage.pieces] == [sid] and lineage.unlinked == ()


def test_a_moved_catalog_is_a_moved_loss_of_the_live_session(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    sid, _ = d.transcript(T0, ["hello"])
    d.point("agent:main:main", sid, T0)
    d.catalog["agent:main:main"]["sessionFile"] = f"/old/place/agents/main/sessions/{sid}.jsonl"
    (d.sessions / "sessions.json").write_text(json.dumps(d.catalog))
    before = tree_hash(d.root)
    (loss,) = find_losses(d.root).losses
    assert (loss.kind, loss.session_id, loss.lost_messages) == ("moved", sid, 2)
    assert tree_hash(d.root) == before


def test_the_samples_losses(tmp_path: Path) -> None:
    """The 2026.9 sample: one reset inside the main session, 6 messages out of view."""
    (loss,) = find_losses(data_path("openclaw", "2026.9.6-full", "state")).losses
    assert (loss.kind, loss.confidence, loss.lost_messages, loss.restore.fits) == ("reset", "recorded", 6, True)
    assert loss.id == find_losses(data_path("openclaw", "2026.9.6-full", "state")).losses[0].id  # stable


def test_the_watcher_reads_again_only_when_a_file_changed_and_reports_only_new_losses(tmp_path: Path) -> None:
    from kurahi.lifecycle.rescue.watch import Watcher

    d = JsonEraDir(tmp_path / "state")
    key = "agent:main:main"
    a, last = d.transcript(T0, ["first"])
    d.point(key, a, T0)
    watcher = Watcher(d.root)
    assert watcher.start().losses == [] and watcher.reads == 1
    assert watcher.poll() == [] and watcher.reads == 1, "an unchanged state was read again"
    b, last = d.reset(key, a, last + 60_000, ["second"])
    (new,) = watcher.poll()
    assert (new.kind, new.session_id) == ("reset", a) and watcher.reads == 2
    assert watcher.poll() == []
    d.reset(key, b, last + 60_000, ["third"])
    assert [x.session_id for x in watcher.poll()] == [b], "the older loss was reported again"


def test_an_original_the_doctor_kept_but_did_not_import_is_a_migration_loss(tmp_path: Path) -> None:
    """``session-sqlite-import-archive/<key>.<id>.jsonl.imported-<ms>`` of a session the store lacks."""
    from support.testdata import UPGRADED, openclaw_state_copy

    state = openclaw_state_copy(UPGRADED, tmp_path / "state")
    sessions = state / "agents" / "main" / "sessions"
    (archive,) = sessions.glob("*.jsonl.reset.*")
    kept = state / "agents" / "main" / "session-sqlite-import-archive"
    kept.mkdir()
    sid = archive.name.split(".jsonl")[0]
    original = kept / f"agent_main_main.{sid}.jsonl.imported-1796172897560"
    archive.rename(original)
    lineage = find_lineage(state)
    (first, _) = lineage.pieces
    assert (first.kind, first.source, first.confidence) == ("import-archive", str(original), "recorded")
    (loss,) = find_losses(state).losses
    assert (loss.kind, loss.source) == ("migration", str(original))
    # Named for a key the store does not have: tied to none, and said so.
    original.rename(kept / f"agent_main_other.{sid}.jsonl.imported-1796172897560")
    assert find_losses(state).losses == []
    assert any("agent_main_other" in n for n in find_losses(state).notes)


SAMPLE_PHRASES = {
    "2026.5.28-reset-idle": ("J-RESET-IDLE-A-E3830DCA70", "J-RESET-IDLE-B-E85F4975F4", "J-RESET-IDLE-C-0E8CE4AD06"),
    "2026.9.6-reset-idle": ("S-RESET-A-54BC5BE213", "S-RESET-B-527B42C6BD", "S-RESET-C-6D7A6C0B32"),
    "2026.5.28-reset-idle-upgraded": (
        "J-RESET-IDLE-A-E3830DCA70",
        "J-RESET-IDLE-B-E85F4975F4",
        "J-RESET-IDLE-C-0E8CE4AD06",
    ),
}


@pytest.mark.parametrize("era", list(SAMPLE_PHRASES))
def test_every_earlier_session_of_the_main_key_is_a_piece_and_a_loss_in_time_order(era: Any, tmp_path: Path) -> None:
    """The reset-then-idle samples OpenClaw wrote: A (before the reset), B (reset to idle), C (live)."""
    from kurahi.lineage.find import open_agent
    from support.testdata import openclaw_state_copy

    state = openclaw_state_copy(era, tmp_path / "state")
    a, b, c = SAMPLE_PHRASES[era]
    with open_agent(state) as agent:
        lineage = agent.lineage()
        texts = [agent.transcript_bytes(p).decode() for p in lineage.pieces]
    # Each phrase in the first piece that holds it, in time order; the current piece holds C.
    first = [next(i for i, t in enumerate(texts) if phrase in t) for phrase in (a, b, c)]
    assert first == sorted(first) and lineage.pieces[first[2]].current, (first, lineage.pieces)
    assert lineage.unlinked == (), lineage.unlinked
    report = find_losses(state)
    lost_sources = {loss.source for loss in report.losses}
    assert {lineage.pieces[first[0]].source, lineage.pieces[first[1]].source} <= lost_sources | {
        p.source for p in lineage.pieces if p.current
    }
    assert [loss.at for loss in report.losses] == sorted(loss.at or "" for loss in report.losses)
