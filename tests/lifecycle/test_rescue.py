"""``kurahi rescue``: every loss found, nothing else, and one brought back with one command.

On copies of the OpenClaw samples (both eras and the upgraded dirs) and on JSON-era folders
built as OpenClaw 2026.5 lays them out (``json_era.py``): the console script in a subprocess,
as a user runs it, its exit codes and JSON; the state dir's bytes and names compared before
and after every read and every refusal. The real-OpenClaw proofs are in
``tests/peers/test_rescue_openclaw.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from hashlib import sha256
from pathlib import Path
from typing import Any

import pytest

from kurahi.lineage.find import find_lineage
from support.json_era import T0, JsonEraDir, iso
from support.rescue_resets import FIRST, SECOND, many_resets, phrase_of
from support.testdata import (
    IDLE_UPGRADED,
    RESET_IDLE_UPGRADED,
    SQLITE_ERA,
    SQLITE_SCHEMA_19,
    UPGRADED,
    data_path,
    openclaw_state_copy,
    tree_hash,
)

KURAHI = [sys.executable, "-m", "kurahi.cli"]


def kurahi(*args: str, code: int | None = 0, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``kurahi ARGS`` in a process of its own; with ``code``, fails the test on another exit code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KOLO_", "KURAHI_", "OPENCLAW_"))}
    out = subprocess.run([*KURAHI, *args], capture_output=True, text=True, env=env, input=stdin, timeout=120)
    assert "Traceback" not in out.stderr, out.stderr
    if code is not None:
        assert out.returncode == code, f"kurahi {' '.join(args)}: exit {out.returncode}\n{out.stdout}{out.stderr}"
    return out


def losses(state: Path, *extra: str) -> list[dict[str, Any]]:
    out = kurahi("rescue", "--openclaw", str(state), "--json", *extra, code=None)
    assert out.returncode in (0, 1), out.stderr
    found: list[dict[str, Any]] = json.loads(out.stdout)["losses"]
    assert out.returncode == (1 if found else 0)
    return found


def full_store(tmp_path: Path) -> Path:
    """A copy of the complete 2026.9.6 store (one reset inside the main session)."""
    import shutil

    dst = tmp_path / "state"
    shutil.copytree(data_path("openclaw", "2026.9.6-full", "state"), dst)
    return dst


# ---- SQLite era and upgraded dirs ------------------------------------------------------------


def test_a_2026_9_reset_is_listed_read_only_and_brought_back(tmp_path: Path) -> None:
    state = full_store(tmp_path)
    before = tree_hash(state)
    (loss,) = losses(state)
    assert (loss["kind"], loss["key"], loss["confidence"], loss["runtime"]) == (
        "reset",
        "agent:main:main",
        "recorded",
        "openclaw-2026.9",
    )
    assert loss["lostMessages"] == 6 and loss["restore"]["fits"] is True
    assert loss["restore"]["window"] == 128000
    assert tree_hash(state) == before, "listing losses changed the state dir"

    out = kurahi("rescue", "apply", loss["id"], "--openclaw", str(state), "--yes", "--out", str(tmp_path / "pkg"))
    assert "brought back 6 message(s), e.g. 'TEAL-HERON-ALPHA'" in out.stdout, out.stdout
    assert "verified: yes" in out.stdout
    rollback = out.stdout.split("undo with: ", 1)[1].split()
    assert losses(state) == [], "the loss is still listed after it was brought back"

    # The rollback command it printed works, and the loss comes back under the same id.
    kurahi(*rollback[1:])
    assert [x["id"] for x in losses(state)] == [loss["id"]]


def _respell_as_an_upgrade_does(db: Path) -> None:
    """What OpenClaw's own upgrade leaves in a store that means exactly 2026.9.6's schema:
    statements respelled (whitespace, quoted names), a nullable column added at the end of a
    table activation writes, and SQLite's statistics."""
    import sqlite3

    con = sqlite3.connect(db, isolation_level=None)
    try:
        con.execute("BEGIN")
        for kind, name, sql in con.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE type IN ('index', 'trigger') "
            "AND tbl_name IN ('session_windows', 'session_nodes', 'transcript_event_identities') AND sql IS NOT NULL"
        ).fetchall():
            con.execute(f"DROP {kind} {name}")
            con.execute(" ".join(sql.split()).replace(" ON session_nodes", ' ON "session_nodes"'))
        con.execute("ALTER TABLE transcript_event_identities ADD COLUMN kurahi_test_extra TEXT")
        con.execute("ALTER TABLE session_windows ADD COLUMN kurahi_test_note TEXT DEFAULT 'x'")
        con.execute("COMMIT")
        con.execute("ANALYZE")
    finally:
        con.close()


def test_a_store_whose_schema_means_2026_9_6s_is_brought_back(tmp_path: Path) -> None:
    """Issue 38: compatibility is what the schema means, not the text of its CREATE statements."""
    state = full_store(tmp_path)
    _respell_as_an_upgrade_does(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    (loss,) = losses(state)
    out = kurahi("rescue", "apply", loss["id"], "--openclaw", str(state), "--yes", "--out", str(tmp_path / "pkg"))
    assert "brought back 6 message(s)" in out.stdout and "verified: yes" in out.stdout, out.stdout
    assert losses(state) == []


def test_a_trigger_on_a_table_activation_writes_is_refused_by_name_and_nothing_changes(tmp_path: Path) -> None:
    import sqlite3

    state = full_store(tmp_path)
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    con = sqlite3.connect(db, isolation_level=None)
    con.execute(
        "CREATE TRIGGER planted AFTER INSERT ON transcript_events BEGIN DELETE FROM transcript_events "
        "WHERE session_id != new.session_id; END"
    )
    con.execute("CREATE UNIQUE INDEX planted_unique ON session_windows (session_key)")
    con.close()
    (loss,) = losses(state)
    before = tree_hash(state)
    out = kurahi("rescue", "apply", loss["id"], "--openclaw", str(state), "--yes", "--out", str(tmp_path / "p"), code=4)
    assert "trigger planted on transcript_events is not one OpenClaw 2026.9.6 creates" in out.stderr, out.stderr
    assert "unique index on session_windows(session_key collate binary) is not one" in out.stderr, out.stderr
    assert tree_hash(state) == before


def test_a_2026_9_5_store_schema_21_is_listed_read_only(tmp_path: Path) -> None:
    """Issue 38: the listing reads every schema a released OpenClaw 2026.9.x writes (21 here)."""
    import shutil

    state = tmp_path / "state"
    shutil.copytree(data_path("openclaw", "2026.9.5-reset", "state"), state)
    before = tree_hash(state)
    (loss,) = losses(state)
    assert (loss["kind"], loss["key"], loss["runtime"]) == ("reset", "agent:main:main", "openclaw-2026.9")
    assert loss["lostMessages"] == 12  # six turns before the /reset
    assert tree_hash(state) == before


def test_the_listing_promises_no_apply_that_apply_would_refuse(tmp_path: Path) -> None:
    """Issue 38: the listing runs apply's write check; a 2026.9.5 store gets why, and what to do."""
    import shutil

    state = tmp_path / "state"
    shutil.copytree(data_path("openclaw", "2026.9.5-reset", "state"), state)
    before = tree_hash(state)
    (loss,) = losses(state)
    assert "schema version 21" in loss["applyRefused"] and "start OpenClaw 2026.9.6 once" in loss["applyRefused"]
    out = kurahi("rescue", "--openclaw", str(state), code=1)
    assert "kurahi rescue apply" not in out.stdout, out.stdout
    assert "Not yet: schema version 21" in " ".join(out.stdout.split()), out.stdout
    page = tmp_path / "losses.html"
    kurahi("rescue", "--openclaw", str(state), "--html", str(page), code=1)
    assert "kurahi rescue apply" not in page.read_text() and "Cannot be brought back yet" in page.read_text()
    out = kurahi("rescue", "apply", loss["id"], "--openclaw", str(state), "--yes", "--out", str(tmp_path / "p"), code=4)
    assert "start OpenClaw 2026.9.6 once" in " ".join(out.stderr.split()), out.stderr
    assert tree_hash(state) == before
    # A store apply writes into is offered as before.
    (fine,) = losses(full_store(tmp_path / "full"))
    assert fine["applyRefused"] is None


def test_a_2026_9_4_store_schema_19_is_listed_read_only_and_apply_waits_for_2026_9_6(tmp_path: Path) -> None:
    """Issue 38: schema 19 (OpenClaw 2026.8.1-2026.9.4) is listed, its loss holds the phrases said
    before the reset, and apply (which writes only 23) refuses, naming the way forward."""
    state = openclaw_state_copy(SQLITE_SCHEMA_19, tmp_path / "state")
    before = tree_hash(state)
    (loss,) = losses(state)
    assert (loss["kind"], loss["key"], loss["runtime"]) == ("reset", "agent:main:main", "openclaw-2026.9")
    assert loss["confidence"] == "recorded" and loss["lostMessages"] == 6  # three turns before the /reset
    assert loss["restore"]["fits"] is True
    refused = " ".join(loss["applyRefused"].split())
    assert "schema version 19" in refused and "OpenClaw 2026.8.1-2026.9.4" in refused, refused
    assert "start OpenClaw 2026.9.6 once" in refused, refused
    # The loss's source holds the phrase said before the reset, out of what OpenClaw sends next.
    check = kurahi(
        "lineage", "check", loss["source"], "--marker", "CRIMSON-IBEX-ALPHA", "--marker", "SLATE-MARLIN-OMEGA",
        "--json", code=1,
    )  # fmt: skip
    found = {m["marker"]: m["found"] for m in json.loads(check.stdout)["markers"]}
    assert found == {"CRIMSON-IBEX-ALPHA": False, "SLATE-MARLIN-OMEGA": True}
    out = kurahi("rescue", "--openclaw", str(state), code=1)
    assert "kurahi rescue apply" not in out.stdout, out.stdout
    assert "Not yet: schema version 19" in " ".join(out.stdout.split()), out.stdout
    for args in (["apply", loss["id"], "--yes"], ["plan", loss["id"]]):
        out = kurahi("rescue", *args, "--openclaw", str(state), "--out", str(tmp_path / "p"), code=4)
        assert "start OpenClaw 2026.9.6 once" in " ".join(out.stderr.split()), out.stderr
        assert not (tmp_path / "p").exists()
    assert tree_hash(state) == before  # no -wal or -shm appeared either (2026.9.4 leaves none)


@pytest.mark.parametrize("era", [UPGRADED, IDLE_UPGRADED])
def test_history_an_upgrade_left_behind_is_a_migration_loss(era: Any, tmp_path: Path) -> None:
    state = openclaw_state_copy(era, tmp_path / "state")
    (loss,) = losses(state)
    assert loss["kind"] == "migration" and loss["lostMessages"] == 12
    assert loss["runtime"] == "openclaw-2026.9"
    out = json.loads(
        kurahi(
            "rescue", "apply", loss["id"][:5], "--openclaw", str(state), "--yes", "--json", "--out", str(tmp_path / "p")
        ).stdout
    )
    lost = [m for m in out["plan"]["markers"] if m["part"] == "lost"]
    assert [m["text"] for m in lost] == ["PURPLE-GIRAFFE-ALPHA"] and lost[0]["inView"], out["plan"]["markers"]
    assert out["verified"] and out["plan"]["broughtBack"] == 12
    assert losses(state) == []


# ---- JSON era: which key a piece belongs to ---------------------------------------------------


def doctor_moved_trajectory(state: Path, loss: dict[str, Any], key: str, at_ms: int) -> Path:
    """The lost session's ``<sid>.trajectory.jsonl`` where OpenClaw 2026.9.5's ``doctor --fix`` moves it.

    Into ``agents/<id>/session-sqlite-import-archive/``, renamed ``<slug>.<basename>.imported-<ms>``: a
    trajectory no catalog entry references (a reset's) under the slug ``archive-tier``, one that goes
    with a transcript it imports under that transcript's key (a recovered orphan's), ``:`` as ``_``.
    """
    sid = loss["sessionId"]
    recovered = loss["source"].startswith("sqlite:")
    slug = f"agent_main_recovered_{sid}" if recovered else "archive-tier"
    folder = state / "agents" / "main" / "session-sqlite-import-archive"
    folder.mkdir(exist_ok=True)
    path = folder / f"{slug}.{sid}.trajectory.jsonl.imported-{at_ms}"
    record = {"traceSchema": "openclaw-trajectory", "schemaVersion": 1, "sessionId": sid, "sessionKey": key}
    path.write_text(json.dumps(record) + "\n")
    return path


@pytest.mark.parametrize("era", [UPGRADED, IDLE_UPGRADED, RESET_IDLE_UPGRADED])
def test_a_trajectory_the_upgrade_moved_still_records_the_link(era: Any, tmp_path: Path) -> None:
    """After 2026.9.5's doctor the trajectories sit in its import archive: the links stay ``recorded``."""
    state = openclaw_state_copy(era, tmp_path / "state")
    before = losses(state)
    assert before and all(x["confidence"] == "matched" for x in before), before  # no trajectory: clocks
    for n, loss in enumerate(before):
        doctor_moved_trajectory(state, loss, "agent:main:main", 1_796_618_619_190 + n)
    after = losses(state)
    assert [x["sessionId"] for x in after] == [x["sessionId"] for x in before]
    for loss in after:
        assert loss["confidence"] == "recorded", loss
        assert any("trajectory" in e and "session-sqlite-import-archive" in e for e in loss["evidence"]), loss


def test_another_keys_archive_is_never_spliced_in(tmp_path: Path) -> None:
    """Alice is reset; Bob starts 2 s later: Alice's archive is hers, never Bob's first piece."""
    d = JsonEraDir(tmp_path / "state")
    alice, _ = d.transcript(T0, ["my secret is MAGENTA-OTTER-7"])
    d.point("agent:main:alice", alice, T0)
    reset_at = T0 + 60_000
    alice2, _ = d.reset("agent:main:alice", alice, reset_at, ["hello again"])
    bob, _ = d.transcript(reset_at + 2_000, ["what is the weather"])
    d.point("agent:main:bob", bob, reset_at + 2_000)

    bob_lineage = find_lineage(d.root, key="agent:main:bob")
    assert [p.session_id for p in bob_lineage.pieces] == [bob]
    alice_lineage = find_lineage(d.root, key="agent:main:alice")
    assert [p.session_id for p in alice_lineage.pieces] == [alice, alice2]
    assert alice_lineage.pieces[0].confidence == "matched" and alice_lineage.pieces[1].current

    found = losses(d.root)
    assert [(x["key"], x["kind"], x["sessionId"]) for x in found] == [("agent:main:alice", "reset", alice)]
    assert not any("MAGENTA" in json.dumps(x) for x in losses(d.root, "--key", "agent:main:bob"))


def test_an_archive_as_close_to_two_keys_goes_to_neither(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    old, _ = d.transcript(T0, ["whose is this"])
    at = T0 + 60_000
    d.archive(old, at)
    for key in ("agent:main:a", "agent:main:b"):
        sid, _ = d.transcript(at, ["hi"])
        d.point(key, sid, at)
    for key in ("agent:main:a", "agent:main:b"):
        lineage = find_lineage(d.root, key=key)
        assert len(lineage.pieces) == 1, lineage.pieces
        assert any("given to none" in n for n in lineage.notes), lineage.notes
    assert losses(d.root) == []


def test_an_idle_leftover_is_a_guess_applied_only_when_accepted(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    old, last = d.transcript(T0, ["we planned the COPPER-SEXTANT voyage"])
    new, _ = d.transcript(last + 2 * 3_600_000, ["good morning"])
    d.point("agent:main:main", new, last + 2 * 3_600_000)
    (loss,) = losses(d.root)
    assert (loss["kind"], loss["confidence"], loss["sessionId"]) == ("idle", "guess", old)
    assert any("clocks only" in e for e in loss["evidence"])
    before = tree_hash(d.root)

    out = kurahi("rescue", "apply", loss["id"], "--openclaw", str(d.root), "--yes", code=2)
    assert f"--accept-guess {loss['id']}" in out.stderr and "nothing was changed" in out.stderr
    assert tree_hash(d.root) == before, "a refused guess changed the state dir"

    out = kurahi(
        "rescue", "apply", loss["id"], "--openclaw", str(d.root), "--yes", "--accept-guess", loss["id"],
        "--out", str(tmp_path / "pkg"),
    )  # fmt: skip
    assert "COPPER-SEXTANT" in out.stdout and "verified: yes" in out.stdout
    assert losses(d.root) == []


def test_a_trajectory_names_the_key_of_an_idle_leftover(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    old, last = d.transcript(T0, ["first day"])
    d.trajectory(old, "agent:main:main")
    other, _ = d.transcript(T0 + 1_000, ["a cron job"])
    d.point("agent:main:cron", other, T0 + 1_000)
    new, _ = d.transcript(last + 3_600_000, ["second day"])
    d.point("agent:main:main", new, last + 3_600_000)
    (loss,) = losses(d.root)
    assert (loss["key"], loss["confidence"], loss["kind"]) == ("agent:main:main", "recorded", "idle")
    assert any("trajectory sessionKey" in e for e in loss["evidence"])
    lineage = find_lineage(d.root)
    assert not any("trajectory" in u for u in lineage.unlinked), lineage.unlinked


def test_an_orphan_two_keys_could_own_is_offered_to_none(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    _, last = d.transcript(T0, ["whose leftover"])
    for n, key in enumerate(("agent:main:main", "agent:main:other")):
        sid, _ = d.transcript(last + 3_600_000 + n, ["later"])
        d.point(key, sid, last + 3_600_000 + n)
    assert losses(d.root) == []
    lineage = find_lineage(d.root)
    assert any("could belong to any of" in n for n in lineage.notes), lineage.notes


def test_two_resets_are_two_losses_in_time_order_and_the_oldest_brings_both_back(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    key = "agent:main:main"
    a, last = d.transcript(T0, ["alpha phrase AMBER-KESTREL-1"])
    d.point(key, a, T0)
    b, last = d.reset(key, a, last + 60_000, ["beta phrase VIOLET-HERON-2"])
    c, _ = d.reset(key, b, last + 60_000, ["gamma phrase JADE-MARMOT-3"])
    found = losses(d.root)
    assert [(x["kind"], x["sessionId"]) for x in found] == [("reset", a), ("reset", b)]
    assert found[0]["at"] < found[1]["at"]
    assert found[0]["pieces"][-1].endswith(f"{c}.jsonl") and len(found[0]["pieces"]) == 3
    out = kurahi("rescue", "apply", found[0]["id"], "--openclaw", str(d.root), "--yes", "--out", str(tmp_path / "p"))
    for phrase in ("AMBER-KESTREL-1", "VIOLET-HERON-2"):
        assert phrase in out.stdout, out.stdout
    lineage = find_lineage(d.root)
    current = [p for p in lineage.pieces if p.current]
    assert len(current) == 1 and lineage.pieces[-1].current, "the repaired session is not the newest, current piece"
    gaps = [b.gap_seconds for b in lineage.boundaries if b.kind == "between-pieces"]
    assert all(g is None or g >= 0 for g in gaps[:2]), gaps


def sent_now(state: Path, phrases: list[str]) -> set[str]:
    """Which of ``phrases`` OpenClaw sends for the main key now: ``lineage check`` of its current session."""
    found = json.loads(kurahi("lineage", "find", "--state-dir", str(state), "--agent", "main", "--json").stdout)
    (current,) = [p["source"] for p in found["pieces"] if p["current"]]
    out = kurahi("lineage", "check", current, "--json", *(a for t in phrases for a in ("--marker", t)), code=None)
    report = json.loads(out.stdout)
    return {m["marker"] for m in report["markers"] if m["found"]}


def json_era_resets(tmp_path: Path, resets: int) -> tuple[Path, list[str]]:
    """A 2026.5 dir whose main key was reset ``resets`` times, one phrase per session; the state and its phrases."""
    d = JsonEraDir(tmp_path / "state")
    said = [f"session {n} phrase SESSION-{n:02d}-WOMBAT" for n in range(resets + 1)]
    sid, last = d.transcript(T0, [said[0]])
    d.point("agent:main:main", sid, T0)
    for text in said[1:]:
        sid, last = d.reset("agent:main:main", sid, last + 60_000, [text])
    return d.root, [t.rsplit(" ", 1)[1] for t in said]


def sqlite_era_resets(tmp_path: Path, resets: int) -> tuple[Path, list[str]]:
    """A 2026.9.6 store whose main key was reset ``resets`` times; the state and its phrases, oldest first."""
    return many_resets(tmp_path, resets - 1), [FIRST, SECOND, *(phrase_of(n) for n in range(1, resets))]


@pytest.mark.parametrize("k", [2, 5])
@pytest.mark.parametrize("build", [json_era_resets, sqlite_era_resets], ids=["2026.5", "2026.9"])
def test_bringing_back_one_of_many_resets_leaves_the_earlier_ones_lost(build: Any, k: int, tmp_path: Path) -> None:
    """Loss k of a key reset seven times: its stretch and the later ones come back, the earlier ones stay lost."""
    state, said = build(tmp_path, 7)  # said[i]: what was lost at loss i + 1; said[-1]: the live session's
    found = losses(state)
    assert len(found) == 7 and all(x["key"] == "agent:main:main" for x in found)
    assert sent_now(state, said) == {said[-1]}
    pick = found[k - 1]
    live = pick["restore"]["messages"] - sum(x["lostMessages"] for x in found[k - 1 :])
    # The listing says what apply gives: loss k's stretch and every later one, and the live one.
    assert live == found[-1]["restore"]["messages"] - found[-1]["lostMessages"] > 0

    pkg = str(tmp_path / "p")
    out = kurahi("rescue", "apply", pick["id"], "--openclaw", str(state), "--yes", "--json", "--out", pkg)
    result = json.loads(out.stdout)
    assert result["verified"] and result["plan"]["broughtBack"] == pick["restore"]["messages"] - live, result["plan"]
    assert sent_now(state, said) == set(said[k - 1 :]), "apply did not bring back exactly loss k and what followed"
    # The earlier losses are still listed, each to be brought back on its own.
    left = losses(state)
    assert [x["lostMessages"] for x in left] == [x["lostMessages"] for x in found[: k - 1]]
    assert [x["at"] for x in left] == [x["at"] for x in found[: k - 1]]


def small_window(state: Path, tokens: int) -> None:
    """Give the stand-in model a ``contextWindow`` of ``tokens`` in ``openclaw.json``, as a user would."""
    model = {"id": "stand-in", "contextWindow": tokens}
    config = {
        "agents": {"defaults": {"model": "standin/stand-in"}},
        "models": {"providers": {"standin": {"models": [model]}}},
    }
    (state / "openclaw.json").write_text(json.dumps(config))


def current_view(state: Path) -> dict[str, Any]:
    """``lineage check --json`` of the main key's current session: the runtime's view of it under its window."""
    found = json.loads(kurahi("lineage", "find", "--state-dir", str(state), "--agent", "main", "--json").stdout)
    (current,) = [p["source"] for p in found["pieces"] if p["current"]]
    view: dict[str, Any] = json.loads(kurahi("lineage", "check", current, "--json", code=None).stdout)["sent"]
    return view


def test_past_the_window_the_headline_says_how_many_are_sent_and_how_many_stay_out(tmp_path: Path) -> None:
    """The oldest of seven losses brought back under a 1,200-token window: the newest 17 of 22 are sent."""
    state = many_resets(tmp_path, 6)
    small_window(state, 1_200)
    live = current_view(state)["messages"]
    first = losses(state)[0]
    pkg = str(tmp_path / "p")
    out = kurahi("rescue", "apply", first["id"], "--openclaw", str(state), "--yes", "--out", pkg).stdout
    view = current_view(state)
    back = view["messages"] - live
    sent, stay = view["sentMessages"] - live, view["messages"] - view["sentMessages"]
    assert 0 < stay < back and sent > 0, view
    headline = out.splitlines()[0]
    assert f"brought back {back} message(s): {sent} sent" in headline, out
    assert f"{stay} past the model's window stay out" in headline, out
    assert "will not send them" not in out, out
    (fold,) = [line for line in out.splitlines() if line.lstrip().startswith("stays out:")]
    assert f"{stay} message(s)" in fold and "1,200-token window" in fold and "openclaw sessions compact" in fold, fold


def test_past_the_window_fits_back_names_the_rule_that_decided(tmp_path: Path) -> None:
    """The kept 2026.9.6 sample under an 1,800-token window: 2026.9's byte rule decides, not the tokens."""
    state = openclaw_state_copy(SQLITE_ERA, tmp_path / "state")
    small_window(state, 1_800)
    (loss,) = losses(state)
    restore = loss["restore"]
    assert restore["fits"] is False and restore["tokens"] < 1_800, restore
    stored = int(restore["figures"].split()[0].replace(",", ""))
    # The stored bytes and a newline per entry, against 8 bytes per window token.
    assert restore["figures"] == f"{stored:,} > 14,400 bytes" and stored > restore["bytes"], restore
    listed = kurahi("rescue", "--openclaw", str(state), code=1).stdout
    assert f"no: {restore['figures']}" in listed and "> 1,800" not in listed, listed
    assert "OpenClaw 2026.9 loads at most 14,400: 8 bytes per token of the 1,800-token window" in listed, listed


def test_past_the_window_rescue_brings_back_what_will_be_sent(tmp_path: Path) -> None:
    """A window that cuts between the oldest lost phrase and the model's echo of it: rescue chose that
    phrase, which ``lineage check`` finds first where it is not sent, and refused its own plan (exit 4)."""
    state = many_resets(tmp_path, 6)
    small_window(state, 660)
    first = losses(state)[0]
    before = tree_hash(state)
    planned = kurahi("rescue", "plan", first["id"], "--openclaw", str(state), "--out", str(tmp_path / "p1"), "--json")
    plan = json.loads(planned.stdout)
    assert tree_hash(state) == before
    assert plan["stayingOut"] > 0 and plan["broughtBackSent"] > 0, plan
    lost = [m["text"] for m in plan["markers"] if m["part"] == "lost"]
    assert lost and all(m["inView"] for m in plan["markers"]), plan["markers"]

    out = kurahi("rescue", "apply", first["id"], "--openclaw", str(state), "--yes", "--out", str(tmp_path / "p2"))
    assert "verified: yes" in out.stdout
    (fold,) = [line for line in out.stdout.splitlines() if line.lstrip().startswith("stays out:")]
    assert f"{plan['stayingOut']} message(s)" in fold and "660-token window" in fold, fold
    assert "openclaw sessions compact" in fold, fold
    found = json.loads(kurahi("lineage", "find", "--state-dir", str(state), "--agent", "main", "--json").stdout)
    (current,) = [p["source"] for p in found["pieces"] if p["current"]]
    kurahi("lineage", "check", current, *(a for t in lost for a in ("--marker", t)))  # sent, by check's own rule


def test_a_loss_says_when_it_was_said_and_when_it_left_the_view(tmp_path: Path) -> None:
    """Said in the evening, reset the next morning: both times, in the table and in the JSON."""
    d = JsonEraDir(tmp_path / "state")
    key = "agent:main:main"
    a, last = d.transcript(T0, ["evening talk RUSSET-OWL-8"])  # replies 2 s apart; ``last`` is one gap on
    d.point(key, a, T0)
    morning = last + 11 * 3_600_000
    d.reset(key, a, morning, ["morning talk"])
    (loss,) = losses(d.root)
    said = iso(last - 2_000)
    assert loss["at"] == iso(morning) and loss["lastMessageAt"] == said, loss
    assert loss["lastEntryAt"] == said  # kept as it was
    listed = kurahi("rescue", "--openclaw", str(d.root), code=1).stdout
    header = next(line for line in listed.splitlines() if line.startswith("id "))
    assert "last said (UTC)" in header and "lost at (UTC)" in header, listed
    row = next(line for line in listed.splitlines() if line.startswith(loss["id"]))
    assert said.replace("T", " ")[:19] in row and iso(morning).replace("T", " ")[:19] in row, listed


def test_a_relative_state_dir_lists_the_live_transcript_once(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    sid, _ = d.transcript(T0, ["hello"])
    d.point("agent:main:main", sid, T0)
    out = subprocess.run(
        [*KURAHI, "lineage", "find", "--state-dir", "state", "--json"], cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [p["sessionId"] for p in doc["pieces"]] == [sid] and doc["unlinked"] == []


# ---- refusals and the other outputs ----------------------------------------------------------


def test_a_running_openclaw_is_refused_naming_how_to_stop_it_and_nothing_changes(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    a, last = d.transcript(T0, ["before"])
    d.point("agent:main:main", a, T0)
    d.reset("agent:main:main", a, last + 60_000, ["after"])
    (loss,) = losses(d.root)
    # The lock a 2026.5 gateway holds: $TMPDIR/openclaw-<uid>/gateway.<sha256(config)[:8]>.lock, a live pid.
    config = str(d.root.absolute() / "openclaw.json")
    folder = Path(tempfile.gettempdir()) / f"openclaw-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    lock = folder / f"gateway.{sha256(config.encode()).hexdigest()[:8]}.lock"
    lock.write_text(json.dumps({"pid": os.getpid(), "configPath": config}))
    try:
        before = tree_hash(d.root)
        out = kurahi("rescue", "apply", loss["id"], "--openclaw", str(d.root), "--yes", code=5)
        assert "openclaw gateway stop" in out.stderr and "gateway run" in out.stderr
        assert tree_hash(d.root) == before
    finally:
        lock.unlink()


def test_an_unknown_loss_id_lists_the_known_ones(tmp_path: Path) -> None:
    state = full_store(tmp_path)
    (loss,) = losses(state)
    out = kurahi("rescue", "plan", "ffffffff", "--openclaw", str(state), "--out", str(tmp_path / "p"), code=3)
    assert loss["id"] in out.stderr


def test_rescue_plan_writes_a_package_and_changes_nothing(tmp_path: Path) -> None:
    state = full_store(tmp_path)
    before = tree_hash(state)
    (loss,) = losses(state)
    out = kurahi("rescue", "plan", loss["id"], "--openclaw", str(state), "--out", str(tmp_path / "pkg"))
    assert "will bring back 6 message(s)" in out.stdout
    assert (tmp_path / "pkg" / "plan.json").is_file() or any((tmp_path / "pkg").iterdir())
    assert tree_hash(state) == before


def test_a_marker_of_the_users_own_that_will_not_be_sent_is_refused(tmp_path: Path) -> None:
    state = full_store(tmp_path)
    before = tree_hash(state)
    (loss,) = losses(state)
    out = kurahi(
        "rescue", "apply", loss["id"], "--openclaw", str(state), "--yes", "--marker", "NEVER-SAID-THIS",
        "--out", str(tmp_path / "pkg"),
    code=4)  # fmt: skip
    assert "NEVER-SAID-THIS" in out.stderr
    assert tree_hash(state) == before


def test_the_html_page_has_a_section_and_a_picture_per_loss(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    key = "agent:main:main"
    a, last = d.transcript(T0, ["one"])
    d.point(key, a, T0)
    b, last = d.reset(key, a, last + 60_000, ["two"])
    d.reset(key, b, last + 60_000, ["three"])
    page = tmp_path / "r.html"
    kurahi("rescue", "--openclaw", str(d.root), "--html", str(page), code=1)
    text = page.read_text()
    ids = [x["id"] for x in losses(d.root)]
    for loss_id in ids:
        assert f'id="loss-{loss_id}"' in text
    assert text.count("<svg") == len(ids) == 2
    assert "<script" not in text
    kurahi("rescue", "--openclaw", str(d.root), "--html", str(page), code=2)  # never overwritten


def test_a_state_with_no_loss_exits_0(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    sid, _ = d.transcript(T0, ["hello"])
    d.point("agent:main:main", sid, T0)
    out = kurahi("rescue", "--openclaw", str(d.root))
    assert "No loss found" in out.stdout


def test_watch_prints_a_new_loss_runs_the_hook_and_stops_cleanly(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    key = "agent:main:main"
    a, last = d.transcript(T0, ["first"])
    d.point(key, a, T0)
    hooked = tmp_path / "hook.json"
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KOLO_", "KURAHI_", "OPENCLAW_"))}
    args = ["rescue", "watch", "--openclaw", str(d.root), "--interval", "0.2", "--json"]
    args += ["--on-loss", f"cat > {hooked}", "--prepare", str(prepared)]
    proc = subprocess.Popen([*KURAHI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None and proc.stdout is not None
        assert "0 loss(es) already there" in proc.stderr.readline()  # the baseline is read: now reset
        before = tree_hash(d.root)
        d.reset(key, a, last + 60_000, ["second"])
        after_reset = tree_hash(d.root)
        line = proc.stdout.readline()  # blocks until the watch prints (the test's timeout bounds it)
        loss = json.loads(line)
        assert (loss["kind"], loss["sessionId"]) == ("reset", a)
        assert before != after_reset
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert json.loads(hooked.read_text())["id"] == loss["id"]
    assert (prepared / loss["id"] / "C.jsonl").is_file()
    assert json.loads((prepared / loss["id"] / "rescue.json").read_text())["markers"]
    assert tree_hash(d.root) == after_reset, "the watch wrote into the state dir"


def test_a_history_repaired_once_and_reset_again_is_one_new_loss(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    key = "agent:main:main"
    a, last = d.transcript(T0, ["first day GARNET-FALCON-5"])
    d.point(key, a, T0)
    d.reset(key, a, last + 60_000, ["second day"])
    (loss,) = losses(d.root)
    kurahi("rescue", "apply", loss["id"], "--openclaw", str(d.root), "--yes", "--out", str(tmp_path / "p1"))
    assert losses(d.root) == []
    # The repaired session is reset in turn: only it is lost now (it carries both earlier pieces).
    repaired = json.loads((d.sessions / "sessions.json").read_text())[key]["sessionId"]
    later = int(time.time() * 1000) + 60_000  # after the repair, which stamped its header with the real clock
    d.reset(key, repaired, later, ["third day"])
    (again,) = losses(d.root)
    assert again["sessionId"] == repaired and again["kind"] == "reset"
    assert len(again["pieces"]) == 2, again["pieces"]
    out = kurahi("rescue", "apply", again["id"], "--openclaw", str(d.root), "--yes", "--out", str(tmp_path / "p2"))
    assert "GARNET-FALCON-5" in out.stdout and "verified: yes" in out.stdout
    assert losses(d.root) == []


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        (lambda db: db.write_bytes(b"garbage, not a database"), 4),
        (lambda db: db.write_bytes(db.read_bytes()[:5000]), 4),
    ],
    ids=["not-sqlite", "truncated"],
)
def test_a_damaged_store_is_a_clear_error_and_nothing_changes(damage: Any, code: int, tmp_path: Path) -> None:
    state = full_store(tmp_path)
    damage(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    before = tree_hash(state)
    out = kurahi("rescue", "--openclaw", str(state), code=code)
    assert "openclaw-agent.sqlite" in out.stderr
    kurahi("rescue", "apply", "abcd", "--openclaw", str(state), "--yes", code=code)
    assert tree_hash(state) == before


def test_a_reset_not_talked_to_since_is_brought_back_too(tmp_path: Path) -> None:
    """After a reset OpenClaw writes the new session's header at once; until a turn, it is empty."""
    d = JsonEraDir(tmp_path / "state")
    key = "agent:main:main"
    a, last = d.transcript(T0, ["before the reset OCHRE-BADGER-9"])
    d.point(key, a, T0)
    d.reset(key, a, last + 60_000, [])
    (loss,) = losses(d.root)
    out = kurahi("rescue", "apply", loss["id"], "--openclaw", str(d.root), "--yes", "--out", str(tmp_path / "p"))
    assert "OCHRE-BADGER-9" in out.stdout and "verified: yes" in out.stdout
    assert losses(d.root) == []


def test_doctor_and_find_point_at_the_loss_where_openclaw_keeps_state(tmp_path: Path) -> None:
    """With OPENCLAW_STATE_DIR set and no option: doctor warns and names rescue; lineage find reads it."""
    state = full_store(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KOLO_", "KURAHI_", "OPENCLAW_"))}
    env |= {"OPENCLAW_STATE_DIR": str(state), "HOME": str(tmp_path)}
    out = subprocess.run([*KURAHI, "doctor", "--json"], capture_output=True, text=True, env=env, timeout=120)
    (check,) = [c for c in json.loads(out.stdout)["checks"] if c["name"] == "openclaw"]
    assert check["status"] == "warn" and check["facts"]["losses"] == 1, check
    assert "kurahi rescue" in check["fix"]
    out = subprocess.run([*KURAHI, "lineage", "find", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["stateDir"] == str(state)
    out = subprocess.run([*KURAHI, "rescue", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 1 and len(json.loads(out.stdout)["losses"]) == 1, out.stdout + out.stderr


def test_json_output_is_no_consent(tmp_path: Path) -> None:
    state = full_store(tmp_path)
    before = tree_hash(state)
    (loss,) = losses(state)
    out = kurahi("rescue", "apply", loss["id"], "--openclaw", str(state), "--json", code=2)
    assert "--yes" in out.stderr
    assert tree_hash(state) == before


def test_a_secret_in_a_recorded_reset_reason_never_reaches_the_listing(tmp_path: Path) -> None:
    """The evidence quotes the reason a transcript records for a reset: it goes through the one secret
    set (``store.redact.scrub_text``) in the table, the JSON and the HTML alike."""
    secrets_said = ["sk-ant-api03-" + "Q" * 40, "hf_" + "Z" * 30, "password=hunter2hunter2"]
    state = many_resets(tmp_path, 1, reason=" ".join(secrets_said))
    page = tmp_path / "losses.html"
    outputs = [
        kurahi("rescue", "--openclaw", str(state), "--json", code=1).stdout,
        kurahi("rescue", "--openclaw", str(state), "--html", str(page), code=1).stdout,
        page.read_text(),
    ]
    (second,) = [x for x in json.loads(outputs[0])["losses"] if any("[redacted]" in e for e in x["evidence"])]
    assert any("password=[redacted]" in e for e in second["evidence"]), second["evidence"]
    for out in outputs:
        for secret in ("Q" * 40, "Z" * 30, "hunter2hunter2"):
            assert secret not in out
