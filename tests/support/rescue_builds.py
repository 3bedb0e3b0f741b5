"""Drive real OpenClaw releases to make the rescue scenarios (see :mod:`rescue_scenarios`).

Each ``build_*`` makes all the scenarios of one era in one pass, so that peer start-ups are
shared and an idle window runs out while the other dirs are built.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from support.openclaw_peer import (
    JSON_ERA,
    MAIN_KEY,
    SESSIONS_DIR,
    SQLITE_ERA,
    OpenClawPeer,
    OpenClawVersion,
    wait_past_idle_window,
)
from support.rescue_scenario import ALICE, BOB, Loss, Piece, Scenario, copy_root, phrase

SMALL_WINDOW = 16_384
"""The stand-in's ``contextWindow`` in ``sqlite-overflow``: OpenClaw 2026.9 sends a system prompt of
about 19k estimated tokens already, so a handful of large turns is well past it."""
OVERFLOW_TURN_WORDS = 1500
"""Filler words per turn in ``sqlite-overflow`` (about 2k tokens each)."""


class _Clock:
    """Seconds spent per scenario; a run shared by several is charged to each in turn."""

    def __init__(self) -> None:
        self.mark = time.monotonic()

    def lap(self) -> float:
        now = time.monotonic()
        spent, self.mark = now - self.mark, now
        return spent


def _say(peer: OpenClawPeer, key: str, text: str, turns: int = 1) -> tuple[str, ...]:
    """``turns`` turns on ``key`` saying one fresh phrase tagged ``text``; returns it."""
    said = phrase(text)
    wording = ("Please keep {} in mind.", "Say {} back later.", "And once more: {}.")
    for n in range(turns):
        peer.turn(wording[n % len(wording)].format(said), key=key)
    return (said,)


def _after_idle(peer: OpenClawPeer, tag: str) -> tuple[str, ...]:
    """Start again, and as soon as the idle window after the last turn has run out (counted from
    that turn, not from the stop) one turn on the main key, which rolls it over; stop."""
    peer.start()
    wait_past_idle_window(peer)
    said = _say(peer, MAIN_KEY, tag)
    assert peer.stop() == 0
    return said


def _cut(peer: OpenClawPeer, to: Path) -> Path:
    """After a clean stop, a copy of the peer's dir at ``to`` (as :func:`copy_root` makes it)."""
    assert not peer.running, "a cut is taken with the gateway stopped"
    copy_root(peer.root, to)
    return to


def build_json(base: Path) -> dict[str, Scenario]:
    """The 2026.5.28 scenarios (see the module docstring), built in one pass."""
    clock, built = _Clock(), {}
    idle = OpenClawPeer(JSON_ERA, base / "json-reset-idle", idle_minutes=1)
    try:
        idle.start()
        a = _say(idle, MAIN_KEY, "J-RESET-IDLE-A", turns=2)
        idle.reset()
        b = _say(idle, MAIN_KEY, "J-RESET-IDLE-B")
        assert idle.stop() == 0
        first = clock.lap()

        # While the idle window of the first runs out, the others are built.
        built["json-two-resets"] = build_two_resets(base, JSON_ERA, "json-two-resets", "J-TWO")
        clock.lap()  # build_two_resets keeps its own time

        built["json-two-keys"] = _two_keys(base, clock)
        built["json-daily"] = build_daily(base, JSON_ERA, "json-daily")
        clock.lap()  # build_daily keeps its own time

        c = _after_idle(idle, "J-RESET-IDLE-C")
    finally:
        idle.close()
    built["json-reset-idle"] = Scenario(
        "json-reset-idle", JSON_ERA, idle.root,
        (Piece(MAIN_KEY, a, "reset", False), Piece(MAIN_KEY, b, "idle", False), Piece(MAIN_KEY, c, None, True)),
        first + clock.lap(),
        notes={"turns": tuple(idle.turn_log)},
    )  # fmt: skip

    # The same dir, moved whole after its clean stop: a copy made as OpenClaw would have
    # written it at a first place, which is then renamed, so nothing is left where the
    # catalog's absolute paths point.
    first_place, moved = base / "json-moved-from", base / "json-moved"
    copy_root(idle.root, first_place)
    first_place.rename(moved)
    source = built["json-reset-idle"]
    built["json-moved"] = Scenario(
        "json-moved", JSON_ERA, moved,
        tuple(replace(p, in_view=False, ended_by=p.ended_by or "moved") for p in source.pieces), clock.lap(),
        notes={"moved_from": str(first_place / "state")},
    )  # fmt: skip
    return built


SPLICE_GAP = 5.0
"""The splice case needs Bob's session to start at most this long after Alice's reset (the window
in which ``lineage find`` of the JSON era gives a reset archive to a session that starts)."""


def _two_keys(base: Path, clock: _Clock, attempts: int = 3) -> Scenario:
    """Alice says a private phrase and is reset; Bob's first turn goes right after.

    The gap is measured from the files (the archive's time, Bob's header), not assumed: on a
    loaded machine a try can miss the window, and then the whole dir is made again, from
    nothing.
    """
    gap = None
    for attempt in range(attempts):
        with OpenClawPeer(JSON_ERA, base / f"json-two-keys-{attempt}", http_api=True) as peer:
            peer.start()
            private = _say(peer, ALICE, "J-ALICE-PRIVATE")
            peer.reset(key=ALICE)
            # Bob writes through the HTTP API, as an integration would: an `openclaw agent`
            # call took 5-9 s to start under load, past the window.
            public = (phrase("J-BOB"),)
            peer.http_turn(f"Please keep {public[0]} in mind.", key=BOB)
            assert peer.stop() == 0
        gap = bob_after_reset(peer.root / "state")
        if 0 <= gap <= SPLICE_GAP:
            pieces = (Piece(ALICE, private, "reset", False), Piece(BOB, public, None, True))
            notes = {"bob_started_after_reset_s": gap, "attempts": attempt + 1}
            return Scenario("json-two-keys", JSON_ERA, peer.root, pieces, clock.lap(), notes=notes)
    raise AssertionError(f"Bob's session never started within {SPLICE_GAP} s of Alice's reset (last: {gap} s)")


def bob_after_reset(state: Path) -> float:
    """Seconds from the reset archive's time (in its name) to the start of Bob's session (its header)."""
    sessions = state / SESSIONS_DIR
    (archive,) = sessions.glob("*.jsonl.reset.*")
    reset_at = datetime.strptime(archive.name.rsplit(".reset.", 1)[1], "%Y-%m-%dT%H-%M-%S.%fZ").replace(tzinfo=UTC)
    book = json.loads((sessions / "sessions.json").read_text(encoding="utf-8"))
    bob_file = sessions / Path(book[BOB]["sessionFile"]).name
    header = json.loads(bob_file.read_text(encoding="utf-8").splitlines()[0])
    started = datetime.fromisoformat(header["timestamp"].replace("Z", "+00:00"))
    return (started - reset_at).total_seconds()


def build_sqlite(base: Path) -> dict[str, Scenario]:
    """The 2026.9.6 scenarios (see the module docstring), built in one pass."""
    clock, built = _Clock(), {}
    ri = OpenClawPeer(SQLITE_ERA, base / "sqlite-reset-idle", idle_minutes=1)
    solo = OpenClawPeer(SQLITE_ERA, base / "sqlite-idle", idle_minutes=1)
    try:
        ri.start()
        a = _say(ri, MAIN_KEY, "S-RESET-A", turns=2)
        ri.reset()
        b = _say(ri, MAIN_KEY, "S-RESET-B")
        assert ri.stop() == 0
        _cut(ri, base / "sqlite-reset")
        built["sqlite-reset"] = Scenario(
            "sqlite-reset", SQLITE_ERA, base / "sqlite-reset",
            (Piece(MAIN_KEY, a, "reset", False), Piece(MAIN_KEY, b, None, True)), clock.lap(),
        )  # fmt: skip

        solo.start()
        g = _say(solo, MAIN_KEY, "S-IDLE-A", turns=2)
        assert solo.stop() == 0
        solo_first = clock.lap()

        built["sqlite-two-resets"] = build_two_resets(base, SQLITE_ERA, "sqlite-two-resets", "S-TWO")
        clock.lap()  # build_two_resets keeps its own time

        with OpenClawPeer(SQLITE_ERA, base / "sqlite-compact-reset") as comp:
            comp.start()
            h = _say(comp, MAIN_KEY, "S-COMPACTED", turns=2)
            compacted = comp.compact()
            h2 = _say(comp, MAIN_KEY, "S-AFTER-COMPACT")
            comp.reset()
            j = _say(comp, MAIN_KEY, "S-AFTER-RESET")
            assert comp.stop() == 0
        built["sqlite-compact-reset"] = Scenario(
            "sqlite-compact-reset", SQLITE_ERA, comp.root,
            (Piece(MAIN_KEY, h, "compact-reset", False), Piece(MAIN_KEY, h2, "reset", False),
             Piece(MAIN_KEY, j, None, True)),
            clock.lap(), notes={"compact": compacted},
        )  # fmt: skip

        with OpenClawPeer(SQLITE_ERA, base / "sqlite-overflow", context_window=SMALL_WINDOW) as big:
            big.start()
            filler = " ".join(f"w{n}" for n in range(OVERFLOW_TURN_WORDS))
            early = tuple(phrase(f"S-BIG-{n}") for n in range(6))
            for said in early:
                big.turn(f"{said} {filler}")
            big.reset()
            after = _say(big, MAIN_KEY, "S-BIG-AFTER")
            assert big.stop() == 0
        built["sqlite-overflow"] = Scenario(
            "sqlite-overflow", SQLITE_ERA, big.root,
            (Piece(MAIN_KEY, early, "reset", False), Piece(MAIN_KEY, after, None, True)), clock.lap(),
            context_window=SMALL_WINDOW,
        )  # fmt: skip

        c = _after_idle(ri, "S-RESET-C")
        built["sqlite-reset-idle"] = Scenario(
            "sqlite-reset-idle", SQLITE_ERA, ri.root,
            (Piece(MAIN_KEY, a, "reset", False), Piece(MAIN_KEY, b, "idle", False), Piece(MAIN_KEY, c, None, True)),
            built["sqlite-reset"].seconds + clock.lap(),
            notes={"turns": tuple(ri.turn_log)},
        )  # fmt: skip

        g2 = _after_idle(solo, "S-IDLE-B")
        built["sqlite-idle"] = Scenario(
            "sqlite-idle", SQLITE_ERA, solo.root,
            (Piece(MAIN_KEY, g, "idle", False), Piece(MAIN_KEY, g2, None, True)), solo_first + clock.lap(),
        )  # fmt: skip
    finally:
        ri.close()
        solo.close()
    return built


def build_two_resets(base: Path, version: OpenClawVersion, name: str, tag: str) -> Scenario:
    """Three pieces on the main key, split by two resets (the first piece two turns long)."""
    clock = _Clock()
    with OpenClawPeer(version, base / name) as peer:
        peer.start()
        pieces = [_say(peer, MAIN_KEY, f"{tag}-A", turns=2)]
        peer.reset()
        pieces.append(_say(peer, MAIN_KEY, f"{tag}-B"))
        peer.reset()
        pieces.append(_say(peer, MAIN_KEY, f"{tag}-C"))
        assert peer.stop() == 0
    ends: list[Loss | None] = ["reset", "reset", None]
    made = tuple(Piece(MAIN_KEY, p, e, e is None) for p, e in zip(pieces, ends, strict=True))
    return Scenario(name, version, peer.root, made, clock.lap())


def build_daily(base: Path, version: OpenClawVersion, name: str) -> Scenario:
    """A daily rollover: one turn a day ago (the OpenClaw processes' clock set back 24 hours, so
    no timestamp lies ahead of the real time), one turn now, under a daily policy at 04:00.

    2026.5.28 only: 2026.9.6's gateway refuses to start with the clock set back (its state
    migrations stop on "state lease heartbeat startup deadline expired").
    """
    clock = _Clock()
    with OpenClawPeer(version, base / name, reset_mode="daily") as peer:
        peer.clock_shift_hours = -24
        peer.start()
        yesterday = _say(peer, MAIN_KEY, f"{name.upper()}-A")
        assert peer.stop() == 0
        peer.clock_shift_hours = 0
        peer.start()
        today = _say(peer, MAIN_KEY, f"{name.upper()}-B")
        assert peer.stop() == 0
    pieces = (Piece(MAIN_KEY, yesterday, "daily", False), Piece(MAIN_KEY, today, None, True))
    return Scenario(name, version, peer.root, pieces, clock.lap(), notes={"turns": tuple(peer.turn_log)})


def build_upgraded(base: Path, source: Scenario) -> Scenario:
    """``source`` (a JSON-era scenario) copied and upgraded by 2026.9.6's own doctor."""
    clock = _Clock()
    root = base / f"{source.name}-upgraded"
    copy_root(source.root, root)
    peer = OpenClawPeer(SQLITE_ERA, root)
    try:
        done = peer.doctor("--fix", "--non-interactive", deadline=300)
    finally:
        peer.close()
    return Scenario(
        f"{source.name}-upgraded", SQLITE_ERA, root, source.pieces,
        clock.lap(), notes={"doctor_stdout": done.stdout[-4000:]},
    )  # fmt: skip
