"""What a rescue scenario is: a real OpenClaw state dir and the phrases of its pieces, in time order.

See :mod:`rescue_scenarios` for the scenarios and their fixtures, :mod:`rescue_builds` for how
OpenClaw is driven to make them.
"""

from __future__ import annotations

import secrets
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from support.openclaw_peer import CONTEXT_WINDOW, JSON_ERA, MAIN_KEY, OpenClawPeer, OpenClawVersion, phrases_in, require

ALICE = "agent:main:alice"
BOB = "agent:main:bob"

Loss = Literal["reset", "idle", "daily", "compact-reset", "moved"]
"""What ended a piece: OpenClaw's reset, an idle or a daily rollover, ``sessions compact`` then a
reset, or (the live piece of a moved dir) the move. An upgraded dir's pieces keep what ended
them before the upgrade."""


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

        The peer gets a ten-year idle window, so the turn itself rolls nothing over.
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
