"""Real OpenClaw state dirs in which a resident lost its past: the ground truth for ``kurahi rescue``.

Each scenario is a state dir that a real OpenClaw from npm wrote, driven by the peer harness
(:mod:`openclaw_peer`) against the logging stand-in model: turns on one or more session keys,
and between them what loses history in that release (a reset, an idle rollover, a compaction
then a reset, a move of the whole dir, an upgrade by the next release's doctor). Every
*piece* (the turns between two losses, on one key) says a phrase made fresh for this test
session, so a test can tell exactly which piece a request or a file holds, and no phrase can
come from an earlier run or from OpenClaw's own prompt.

The dirs are built once per test session, by era, so that peer start-ups and idle waits are
shared (a 2026.5.28 gateway takes 10-25 s to start on the shared machine, a turn 3-13 s):

- :func:`json_runs` (OpenClaw 2026.5.28) builds ``json-reset-idle`` (a reset, then an idle
  rollover), ``json-two-resets``, ``json-moved`` (``json-reset-idle`` after a clean stop,
  moved to another folder) and ``json-two-keys`` (``agent:main:alice`` says a private phrase
  and is reset; ``agent:main:bob`` starts right after: the splice case). The idle wait of
  the first runs while the others are built.
- :func:`sqlite_runs` (OpenClaw 2026.9.6) builds ``sqlite-reset`` (a copy cut from the
  ``sqlite-reset-idle`` run after its clean stop), ``sqlite-reset-idle``, ``sqlite-two-resets``,
  ``sqlite-idle``, ``sqlite-compact-reset`` (a reset after ``openclaw sessions compact``) and
  ``sqlite-overflow`` (a pre-reset history bigger than a small model window).
- :func:`upgraded_run`: a copy of ``json-reset-idle`` put through 2026.9.6's
  ``openclaw doctor --fix --non-interactive``.

A test takes a scenario through its fixture (``json_reset_idle``, ``sqlite_overflow``, ...): a
:class:`Scenario` whose state dir is a fresh copy under the test's ``tmp_path``, so the test
may write to it. :meth:`Scenario.one_turn` starts OpenClaw on that copy, takes one turn on a
key and returns the request OpenClaw sent the model; :func:`view` says which of the scenario's
phrases that request holds, per piece. ``docs/openclaw-peer.md`` ("How OpenClaw loses history")
says what each release writes for each kind of loss.
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pytest

from openclaw_peer import (
    CONTEXT_WINDOW,
    JSON_ERA,
    MAIN_KEY,
    SESSIONS_DIR,
    SQLITE_ERA,
    OpenClawPeer,
    OpenClawVersion,
    phrases_in,
    require,
    wait_past_idle_window,
)

ALICE = "agent:main:alice"
BOB = "agent:main:bob"
SMALL_WINDOW = 16_384
"""The stand-in's ``contextWindow`` in ``sqlite-overflow``: OpenClaw 2026.9 sends a system prompt of
about 19k estimated tokens already, so a handful of large turns is well past it."""
OVERFLOW_TURN_WORDS = 1500
"""Filler words per turn in ``sqlite-overflow`` (about 2k tokens each)."""

Loss = Literal["reset", "idle", "compact-reset", "moved", "upgrade"]
"""What ended a piece: OpenClaw's reset, an idle rollover, ``sessions compact`` then a reset, or
(for a dir whose every piece is lost) a move of the dir, an upgrade."""


def phrase(tag: str) -> str:
    """A phrase no earlier run, and nothing in OpenClaw's own prompt, can contain."""
    return f"{tag}-{secrets.token_hex(5).upper()}"


@dataclass(frozen=True)
class Piece:
    """The turns on one key between two losses (or after the last one)."""

    key: str
    """The session key the turns went to."""
    phrases: tuple[str, ...]
    """The phrases its turns said, in order (one per turn, or one for all its turns)."""
    ended_by: Loss | None
    """What ended it; ``None`` for the piece OpenClaw's current session still holds."""
    in_view: bool
    """Whether OpenClaw's next request on ``key`` still holds these phrases, as built."""


@dataclass(frozen=True)
class Scenario:
    """One real OpenClaw state dir and what is in it: the pieces' phrases in time order."""

    name: str
    version: OpenClawVersion
    """The OpenClaw release that runs on this dir now (an upgraded dir's is 2026.9.6)."""
    root: Path
    """Holds ``state/`` (the state dir) and ``home/`` (HOME) as OpenClaw left them."""
    pieces: tuple[Piece, ...]
    """Every piece, oldest first."""
    seconds: float
    """What building it cost (its share of a run that built several)."""
    context_window: int = CONTEXT_WINDOW
    notes: dict[str, Any] = field(default_factory=dict)
    """Facts of the run a test may check (e.g. ``bob_started_after_reset_s``)."""

    @property
    def state_dir(self) -> Path:
        """The OpenClaw state dir (``OPENCLAW_STATE_DIR``)."""
        return self.root / "state"

    @property
    def era(self) -> Literal["json", "sqlite"]:
        """How the dir keeps sessions now: ``sessions.json`` + ``.jsonl`` or the SQLite store."""
        return "json" if self.version == JSON_ERA else "sqlite"

    @property
    def keys(self) -> tuple[str, ...]:
        """The session keys that were talked to, in order of first use."""
        return tuple(dict.fromkeys(p.key for p in self.pieces))

    def of(self, key: str) -> tuple[Piece, ...]:
        """The pieces of ``key``, oldest first."""
        return tuple(p for p in self.pieces if p.key == key)

    def lost(self, key: str = MAIN_KEY) -> tuple[str, ...]:
        """The phrases of ``key`` that OpenClaw's next request no longer holds."""
        return tuple(ph for p in self.of(key) if not p.in_view for ph in p.phrases)

    def kept(self, key: str = MAIN_KEY) -> tuple[str, ...]:
        """The phrases of ``key`` that OpenClaw's next request still holds."""
        return tuple(ph for p in self.of(key) if p.in_view for ph in p.phrases)

    def others(self, key: str) -> tuple[str, ...]:
        """Every phrase said on another key than ``key``."""
        return tuple(ph for p in self.pieces if p.key != key for ph in p.phrases)

    def copy_to(self, root: Path) -> Scenario:
        """This scenario with its dir copied to ``root`` (see :func:`copy_root`).

        A moved dir's catalog keeps naming its old place, and OpenClaw 2026.5 recreates that
        place when it next writes the transcript; so each copy of it gets an old place of its
        own (beside ``root``, absent), and no two tests share one.
        """
        moved_from = self.notes.get("moved_from")
        if moved_from is None:
            copy_root(self.root, root)
            return replace(self, root=root)
        old_place = root.parent / f"{root.name}-old-place" / "state"
        copy_root(self.root, root, also={str(moved_from): str(old_place)})
        return replace(self, root=root, notes=self.notes | {"moved_from": str(old_place)})

    def one_turn(self, key: str = MAIN_KEY) -> dict[str, Any]:
        """Start OpenClaw on this dir, take one turn on ``key`` with a fresh phrase, stop; return
        the request that carried the turn (the runtime's view of the key, as sent).

        The peer gets a week-long idle window, so the turn itself rolls nothing over.
        """
        require(self.version)
        probe = phrase("PROBE")
        with OpenClawPeer(self.version, self.root, context_window=self.context_window) as peer:
            peer.start()
            peer.turn(f"Do you remember? {probe}", key=key)
            assert peer.stop() == 0, "OpenClaw did not stop cleanly on SIGTERM"
            carrying = [body for body in peer.requests() if phrases_in(body, [probe])]
        assert carrying, f"OpenClaw sent the model no request for the turn on {key}"
        return carrying[-1]


def view(scenario: Scenario, body: dict[str, Any]) -> dict[str, frozenset[str]]:
    """Which of the scenario's phrases a request holds, per key (keys with none map to empty)."""
    held = phrases_in(body, [ph for p in scenario.pieces for ph in p.phrases])
    return {key: frozenset(ph for p in scenario.of(key) for ph in p.phrases if ph in held) for key in scenario.keys}


def check_view(scenario: Scenario, body: dict[str, Any], key: str = MAIN_KEY, *, restored: bool) -> None:
    """Assert what a request on ``key`` holds: the kept phrases always; every lost phrase when
    ``restored``, none of them otherwise; never a phrase of another key."""
    seen = view(scenario, body)
    lost, kept = set(scenario.lost(key)), set(scenario.kept(key))
    assert kept <= seen[key], f"{scenario.name}: the request on {key} lacks {sorted(kept - seen[key])}"
    if restored:
        assert lost <= seen[key], f"{scenario.name}: not brought back on {key}: {sorted(lost - seen[key])}"
    else:
        assert not lost & seen[key], f"{scenario.name}: still in view on {key}: {sorted(lost & seen[key])}"
    leaked = {ph for other, held in seen.items() if other != key for ph in held}
    assert not leaked, f"{scenario.name}: the request on {key} holds another key's phrases {sorted(leaked)}"


# ---- copies ---------------------------------------------------------------------------------


def copy_root(src: Path, dst: Path, *, also: dict[str, str] | None = None) -> None:
    """Copy a peer root's ``state/`` and ``home/`` to ``dst`` (``logs/`` starts empty).

    Every occurrence of the source state dir's absolute path in ``agents/*/sessions/``
    (``sessions.json``, transcripts, archives) becomes the copy's, which is what OpenClaw
    itself would have written running there: 2026.5 keeps ``sessionFile`` and the header's ``cwd`` as
    absolute paths and follows them, so an unrewritten copy would be a moved dir (OpenClaw
    starts it empty) whose catalog points into the source. The SQLite era's store resolves
    from the state dir; its recorded paths (the header's ``cwd``, prompt reports) stay as
    written and point at the source. ``also`` maps further paths to rewrite the same way.
    """
    dst.mkdir(parents=True, exist_ok=True)
    for part in ("state", "home"):
        if (src / part).exists():
            shutil.copytree(src / part, dst / part, symlinks=True)
    swaps = {str((src / "state").resolve()): str((dst / "state").resolve())} | (also or {})
    assert not any(set('"\\') & set(old + new) for old, new in swaps.items()), "paths that JSON would escape"
    for path in (dst / "state" / "agents").glob("*/sessions/*"):
        if path.is_file():
            data = original = path.read_bytes()
            for old, new in swaps.items():
                data = data.replace(old.encode(), new.encode())
            if data != original:
                path.write_bytes(data)


# ---- building -------------------------------------------------------------------------------


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
        with OpenClawPeer(JSON_ERA, base / "json-two-resets") as two:
            two.start()
            pieces = [_say(two, MAIN_KEY, "J-TWO-A", turns=2)]
            two.reset()
            pieces.append(_say(two, MAIN_KEY, "J-TWO-B"))
            two.reset()
            pieces.append(_say(two, MAIN_KEY, "J-TWO-C"))
            assert two.stop() == 0
        ends: list[Loss | None] = ["reset", "reset", None]
        built["json-two-resets"] = Scenario(
            "json-two-resets", JSON_ERA, two.root,
            tuple(Piece(MAIN_KEY, p, e, e is None) for p, e in zip(pieces, ends, strict=True)), clock.lap(),
        )  # fmt: skip

        built["json-two-keys"] = _two_keys(base, clock)

        # Past the idle window (counted from the last turn, not the stop): the next turn rolls
        # the key over to a new session and leaves the old transcript where it was.
        idle.start()
        wait_past_idle_window(idle)
        c = _say(idle, MAIN_KEY, "J-RESET-IDLE-C")
        assert idle.stop() == 0
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

    The gap is measured from the files (the archive's time, Bob's header), not assumed: a CLI
    call takes seconds to start, so on a loaded machine a try can miss the window, and then the
    whole dir is made again, from nothing.
    """
    gap = None
    for attempt in range(attempts):
        with OpenClawPeer(JSON_ERA, base / f"json-two-keys-{attempt}") as peer:
            peer.start()
            private = _say(peer, ALICE, "J-ALICE-PRIVATE")
            peer.reset(key=ALICE)
            public = _say(peer, BOB, "J-BOB")
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

        with OpenClawPeer(SQLITE_ERA, base / "sqlite-two-resets") as two:
            two.start()
            pieces = [_say(two, MAIN_KEY, "S-TWO-A", turns=2)]
            two.reset()
            pieces.append(_say(two, MAIN_KEY, "S-TWO-B"))
            two.reset()
            pieces.append(_say(two, MAIN_KEY, "S-TWO-C"))
            assert two.stop() == 0
        ends: list[Loss | None] = ["reset", "reset", None]
        built["sqlite-two-resets"] = Scenario(
            "sqlite-two-resets", SQLITE_ERA, two.root,
            tuple(Piece(MAIN_KEY, p, e, e is None) for p, e in zip(pieces, ends, strict=True)), clock.lap(),
        )  # fmt: skip

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

        ri.start()
        wait_past_idle_window(ri)
        c = _say(ri, MAIN_KEY, "S-RESET-C")
        assert ri.stop() == 0
        built["sqlite-reset-idle"] = Scenario(
            "sqlite-reset-idle", SQLITE_ERA, ri.root,
            (Piece(MAIN_KEY, a, "reset", False), Piece(MAIN_KEY, b, "idle", False), Piece(MAIN_KEY, c, None, True)),
            built["sqlite-reset"].seconds + clock.lap(),
            notes={"turns": tuple(ri.turn_log)},
        )  # fmt: skip

        solo.start()
        wait_past_idle_window(solo)
        g2 = _say(solo, MAIN_KEY, "S-IDLE-B")
        assert solo.stop() == 0
        built["sqlite-idle"] = Scenario(
            "sqlite-idle", SQLITE_ERA, solo.root,
            (Piece(MAIN_KEY, g, "idle", False), Piece(MAIN_KEY, g2, None, True)), solo_first + clock.lap(),
        )  # fmt: skip
    finally:
        ri.close()
        solo.close()
    return built


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


# ---- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def json_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Scenario]:
    """Every 2026.5.28 scenario, built once per test session (pristine: tests take copies)."""
    require(JSON_ERA)
    return build_json(tmp_path_factory.mktemp("rescue-json"))


@pytest.fixture(scope="session")
def sqlite_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Scenario]:
    """Every 2026.9.6 scenario, built once per test session (pristine: tests take copies)."""
    require(SQLITE_ERA)
    return build_sqlite(tmp_path_factory.mktemp("rescue-sqlite"))


@pytest.fixture(scope="session")
def upgraded_run(tmp_path_factory: pytest.TempPathFactory, json_runs: dict[str, Scenario]) -> Scenario:
    """``json-reset-idle`` upgraded by 2026.9.6's doctor, once per test session."""
    require(SQLITE_ERA)
    return build_upgraded(tmp_path_factory.mktemp("rescue-upgraded"), json_runs["json-reset-idle"])


def _copy(runs: dict[str, Scenario], name: str, tmp_path: Path) -> Scenario:
    return runs[name].copy_to(tmp_path / name)


@pytest.fixture
def json_reset_idle(json_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.5.28, main key: a phrase, ``sessions.reset``, a phrase, an idle rollover, a phrase."""
    return _copy(json_runs, "json-reset-idle", tmp_path)


@pytest.fixture
def json_two_resets(json_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.5.28, main key: three pieces split by two resets."""
    return _copy(json_runs, "json-two-resets", tmp_path)


@pytest.fixture
def json_moved(json_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """``json-reset-idle`` moved whole to another folder: the catalog still names the old place."""
    return _copy(json_runs, "json-moved", tmp_path)


@pytest.fixture
def json_two_keys(json_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.5.28: alice's private phrase, alice reset, bob's first turn right after (the splice case)."""
    return _copy(json_runs, "json-two-keys", tmp_path)


@pytest.fixture
def sqlite_reset(sqlite_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.9.6, main key: a phrase, ``/reset``, a phrase."""
    return _copy(sqlite_runs, "sqlite-reset", tmp_path)


@pytest.fixture
def sqlite_two_resets(sqlite_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.9.6, main key: three pieces split by two ``/reset``."""
    return _copy(sqlite_runs, "sqlite-two-resets", tmp_path)


@pytest.fixture
def sqlite_idle(sqlite_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.9.6, main key: a phrase, an idle rollover, a phrase."""
    return _copy(sqlite_runs, "sqlite-idle", tmp_path)


@pytest.fixture
def sqlite_reset_idle(sqlite_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.9.6, main key: a phrase, ``/reset``, a phrase, an idle rollover, a phrase."""
    return _copy(sqlite_runs, "sqlite-reset-idle", tmp_path)


@pytest.fixture
def sqlite_compact_reset(sqlite_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.9.6, main key: a phrase, ``sessions compact``, a phrase, ``/reset``, a phrase."""
    return _copy(sqlite_runs, "sqlite-compact-reset", tmp_path)


@pytest.fixture
def sqlite_overflow(sqlite_runs: dict[str, Scenario], tmp_path: Path) -> Scenario:
    """2026.9.6 with a 16k window: six large turns (a phrase each), ``/reset``, a phrase."""
    return _copy(sqlite_runs, "sqlite-overflow", tmp_path)


@pytest.fixture
def upgraded(upgraded_run: Scenario, tmp_path: Path) -> Scenario:
    """``json-reset-idle`` after 2026.9.6's ``doctor --fix``."""
    return upgraded_run.copy_to(tmp_path / upgraded_run.name)


def all_scenarios(*runs: dict[str, Scenario]) -> Iterator[Scenario]:
    """Every scenario of ``runs``, by name."""
    for run in runs:
        yield from (run[name] for name in sorted(run))
