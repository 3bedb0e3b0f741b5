"""``kurahi rescue`` on the real OpenClaw scenarios (``tests/support/rescue_scenarios.py``): every loss listed,
each brought back, and OpenClaw's own next request holds every lost phrase and no other key's.

Issue 28's proof. For each scenario (OpenClaw 2026.5.28: a reset then an idle rollover, two
resets, a daily rollover, a moved dir, two keys reset within seconds; 2026.9.6: a reset, two
resets, an idle rollover, a reset then an idle rollover, a reset after `sessions compact`, a
history bigger than the window; a 2026.5 dir upgraded by 2026.9.6's doctor): ``kurahi rescue
--json`` as a user runs it lists the losses in time order with the right kinds; the state dir
is not changed by it; ``rescue apply`` of the key's oldest loss (``--yes``) brings it all back;
then OpenClaw starts and takes one turn, and its request is checked against the scenario's
phrases (:func:`rescue_scenario.check_view`). ``test_rescue_scenarios.py`` proves the premise:
before a rescue those phrases are not in OpenClaw's request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.cold_archives import make_cold
from support.openclaw_peer import MAIN_KEY, SQLITE_ERA, phrases_in, require
from support.rescue_builds import build_two_resets
from support.rescue_resets import FIRST, SECOND, many_resets, phrase_of
from support.rescue_scenario import Piece, Scenario
from support.rescue_scenarios import ALICE, BOB, check_view
from support.sqlite_activations import PHRASE_A, PHRASE_B, sqlite_setup
from support.testdata import tree_hash

pytestmark = pytest.mark.openclaw

KURAHI = [sys.executable, "-m", "kurahi.cli"]


def kurahi(*args: str, code: int | None = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KOLO_", "KURAHI_", "OPENCLAW_"))}
    out = subprocess.run([*KURAHI, *args], capture_output=True, text=True, env=env, timeout=300)
    assert "Traceback" not in out.stderr, out.stderr
    if code is not None:
        assert out.returncode == code, f"kurahi {' '.join(args[:3])}: exit {out.returncode}\n{out.stdout}{out.stderr}"
    return out


def losses(s: Scenario, *extra: str) -> list[dict[str, Any]]:
    out = kurahi("rescue", "--openclaw", str(s.state_dir), "--json", *extra, code=None)
    assert out.returncode in (0, 1), out.stderr
    found: list[dict[str, Any]] = json.loads(out.stdout)["losses"]
    assert out.returncode == (1 if found else 0)
    return found


def rescue(s: Scenario, tmp_path: Path, key: str, kinds: list[str]) -> dict[str, Any]:
    """List the key's losses (checking their kinds, time order and that listing wrote nothing),
    apply the oldest, and return what apply said."""
    before = tree_hash(s.state_dir)
    found = [x for x in losses(s) if x["key"] == key]
    assert [x["kind"] for x in found] == kinds, [(x["kind"], x["evidence"]) for x in found]
    assert [x["at"] for x in found] == sorted(x["at"] for x in found)
    assert tree_hash(s.state_dir) == before, "kurahi rescue changed the state dir"
    guesses = [a for x in found if x["confidence"] == "guess" for a in ("--accept-guess", x["id"])]
    args = ["rescue", "apply", found[0]["id"], "--openclaw", str(s.state_dir), "--yes", "--json"]
    done: dict[str, Any] = json.loads(kurahi(*args, *guesses, "--out", str(tmp_path / "pkg")).stdout)
    assert done["verified"], done
    assert [x for x in losses(s) if x["key"] == key] == [], "a loss is still listed after rescue apply"
    return done


CASES = [
    ("json_reset_idle", ["reset", "idle"]),
    ("json_two_resets", ["reset", "reset"]),
    ("json_daily", ["daily"]),
    ("json_moved", ["reset", "idle", "moved"]),
    ("sqlite_reset", ["reset"]),
    ("sqlite_two_resets", ["reset", "reset"]),
    ("sqlite_idle", ["idle"]),
    ("sqlite_reset_idle", ["reset", "idle"]),
    ("sqlite_compact_reset", ["reset"]),
    ("upgraded", ["migration", "migration"]),
]


@pytest.mark.parametrize(("name", "kinds"), CASES, ids=[c[0] for c in CASES])
def test_every_loss_is_listed_and_brought_back(
    name: str, kinds: list[str], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    s: Scenario = request.getfixturevalue(name)
    done = rescue(s, tmp_path, MAIN_KEY, kinds)
    lost = [m["text"] for m in done["plan"]["markers"] if m["part"] == "lost"]
    assert lost and all(m["inView"] for m in done["plan"]["markers"]), done["plan"]["markers"]
    body = s.one_turn(MAIN_KEY)
    check_view(s, body, MAIN_KEY, restored=True)
    assert phrases_in(body, lost) == set(lost), "a marker Kurahi checked is not in OpenClaw's request"


def test_bringing_back_the_later_of_two_resets_leaves_the_earlier_one_lost(tmp_path: Path) -> None:
    """2026.9.6, three pieces split by two resets: bringing back the second loss gives OpenClaw's request
    the second piece and the live one, not the first (a reset made on purpose before it still holds)."""
    require(SQLITE_ERA)
    s = build_two_resets(tmp_path, SQLITE_ERA, "sqlite-later-reset", "LATER")
    first, second, live = (p.phrases for p in s.of(MAIN_KEY))
    found = losses(s)
    assert [x["kind"] for x in found] == ["reset", "reset"], found
    args = ["rescue", "apply", found[1]["id"], "--openclaw", str(s.state_dir), "--yes", "--json"]
    done = json.loads(kurahi(*args, "--out", str(tmp_path / "pkg")).stdout)
    assert done["verified"], done
    body = s.one_turn(MAIN_KEY)
    said = (*first, *second, *live)
    assert phrases_in(body, said) == {*second, *live}, "OpenClaw's request is not the second loss and what followed"
    left = losses(s)
    assert [(x["kind"], x["at"], x["lostMessages"]) for x in left] == [
        (found[0]["kind"], found[0]["at"], found[0]["lostMessages"])
    ], left


def test_two_keys_reset_within_seconds_never_share_a_phrase(json_two_keys: Scenario, tmp_path: Path) -> None:
    s = json_two_keys
    assert losses(s, "--key", BOB) == [], "Bob, who lost nothing, is offered a loss"
    find = json.loads(kurahi("lineage", "find", "--state-dir", str(s.state_dir), "--key", BOB, "--json").stdout)
    assert not any(p["kind"] == "reset-archive" for p in find["pieces"]), "Alice's archive is one of Bob's pieces"
    done = rescue(s, tmp_path, ALICE, ["reset"])
    assert not any(ph in json.dumps(done) for ph in s.others(ALICE)), "Alice's rescue mentions Bob's phrases"
    check_view(s, s.one_turn(ALICE), ALICE, restored=True)
    check_view(s, s.one_turn(BOB), BOB, restored=False)  # Bob's view: his own, none of Alice's


def test_rescue_says_what_openclaw_will_send_of_a_history_bigger_than_the_window(
    sqlite_overflow: Scenario, tmp_path: Path
) -> None:
    """The pre-reset history is more tokens than the model's window: what rescue says will be sent
    (by OpenClaw 2026.9's own rule, the newest 8 bytes per window token) is what OpenClaw sends."""
    s = sqlite_overflow
    (loss,) = losses(s)
    assert loss["restore"]["tokens"] > loss["restore"]["window"], loss["restore"]
    done = rescue(s, tmp_path, MAIN_KEY, ["reset"])
    plan = done["plan"]
    assert (plan["sentMessages"] == plan["viewMessages"]) == loss["restore"]["fits"], (plan, loss["restore"])
    body = s.one_turn(MAIN_KEY)
    for marker in plan["markers"]:
        held = bool(phrases_in(body, [marker["text"]]))
        assert held == marker["inView"], f"rescue said {marker['text']!r} sent={marker['inView']}, OpenClaw: {held}"
    assert set(s.kept(MAIN_KEY)) <= phrases_in(body, s.kept(MAIN_KEY))


def test_the_fifteenth_of_thirty_resets_comes_back_without_undoing_the_fourteen_before_it(tmp_path: Path) -> None:
    """A 2026.9.6 key reset 30 times, one phrase per stretch: bringing back loss 15 gives OpenClaw's
    next request stretches 15 to 30 and the live one, and none of the 14 resets made before it."""
    require(SQLITE_ERA)
    run = tmp_path / "run"
    many_resets(run, 29)  # the sample's own reset, then 29 more: 30 losses on the main key, then the live stretch
    said = [FIRST, SECOND, *(phrase_of(n) for n in range(1, 30))]
    pieces = tuple(Piece(MAIN_KEY, (p,), "reset" if i < 30 else None, i == 30) for i, p in enumerate(said))
    s = Scenario("thirty-resets", SQLITE_ERA, run, pieces, 0.0)
    found = losses(s)
    assert len(found) == 30, [x["kind"] for x in found]
    assert all(x["kind"] == "reset" and x["key"] == MAIN_KEY for x in found)
    fifteenth = found[14]
    args = ["rescue", "apply", fifteenth["id"], "--openclaw", str(s.state_dir), "--yes", "--json"]
    done = json.loads(kurahi(*args, "--out", str(tmp_path / "pkg")).stdout)
    assert done["verified"], done
    body = s.one_turn(MAIN_KEY)
    assert phrases_in(body, said) == set(said[14:]), "OpenClaw's request is not loss 15 and what followed"
    left = [x["at"] for x in losses(s)]
    assert left == [x["at"] for x in found[:14]], "the 14 earlier losses are not all still listed"


def test_a_loss_inside_a_cold_archive_is_brought_back_and_openclaw_sends_it(tmp_path: Path) -> None:
    """2026.9.6's full sample with its one session moved to cold storage (its events only in
    ``sessions/cold/*.jsonl.zst``): rescue apply, then OpenClaw's next request holds the phrase said
    before the reset, read out of the archive, and the one said after it."""
    require(SQLITE_ERA)
    run = tmp_path / "run"
    setup = sqlite_setup(run)
    make_cold(setup.db, setup.old_sid)
    pieces = (Piece(MAIN_KEY, (PHRASE_A,), "reset", False), Piece(MAIN_KEY, (PHRASE_B,), None, True))
    s = Scenario("cold", SQLITE_ERA, run, pieces, 0.0)
    (loss,) = losses(s)
    assert loss["source"].startswith("sqlite-cold") or "cold" in loss["source"], loss["source"]
    args = ["rescue", "apply", loss["id"], "--openclaw", str(s.state_dir), "--yes", "--json"]
    done = json.loads(kurahi(*args, "--out", str(tmp_path / "pkg")).stdout)
    assert done["verified"], done
    body = s.one_turn(MAIN_KEY)
    assert phrases_in(body, [PHRASE_A, PHRASE_B]) == {PHRASE_A, PHRASE_B}
