"""The one interface every foreign runtime implements, and the facts of the views they send.

A *runtime* is a program whose history Kurahi reads and repairs: Pi (its session files),
OpenClaw (its state dir, JSON era then SQLite era), and, later, others. Each lives in its own
room under :mod:`kurahi.runtimes` and answers :class:`Runtime`; the generic rooms (``lineage
find`` / ``stitch`` / ``check``, rescue, the activation driver, the continuity runner, ``kurahi
mcp``, ``kurahi doctor``) ask through it and never name one. The registry is
:mod:`kurahi.runtimes` itself.

What a runtime sends the model of a session is its *view* (:class:`View`); the rules that cut
a view to the model's window are in :mod:`kurahi.runtimes.view`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

if TYPE_CHECKING:  # the views' facts are read on every check: they must not load the reading stack
    from kurahi.locations.dirs import Location
    from kurahi.pi.transcript import Transcript
    from kurahi.runtimes.own_files import OwnSession, SentView
    from kurahi.runtimes.pieces import Lineage, Piece
    from kurahi.runtimes.session_losses import SessionLoss, SessionLosses

__all__ = ["Agent", "AppendRepair", "Boundary", "ResetPolicy", "Runtime", "SessionAppend", "View"]


class View(msgspec.Struct, frozen=True, kw_only=True):
    """What a runtime sends the model of a session's path, as facts the generic rooms decide by."""

    name: str
    """Its name in reports and on the command line (``lineage check --runtime``)."""
    label: str
    """Its name in sentences (``OpenClaw 2026.9``)."""
    after_last_reset: bool
    """Sends only what follows the last ``reset`` entry on the path (else the whole path)."""
    overflow: str
    """How it cuts a history longer than the window: ``compaction`` (Pi's token budget; OpenClaw
    2026.5 keeps a prompt floor) or ``bytes`` (it loads the newest stored bytes that fit)."""
    empty_when_moved: bool
    """A catalog naming a transcript outside the state dir makes it start empty."""
    request_runtimes: tuple[str, ...]
    """The runtimes ``kurahi session doctor`` judges its next request as."""
    fold: str
    """How what a repair brings back past the window reaches the model after all, in a clause
    (``rescue`` says it under "stays out")."""


class Boundary(msgspec.Struct, frozen=True):
    """What a runtime's own records say about the boundary that ended a lost stretch."""

    kind: str
    """``reset``, ``new``, ``idle``, ``daily``, ``rollover``, ``moved``, ``migration`` or ``unknown``."""
    at_ms: int | None
    """When it happened."""
    evidence: list[str]
    """What marks it, in words."""


class ResetPolicy(msgspec.Struct, frozen=True):
    """The runtime's reset policy, to tell an idle rollover from a daily one."""

    mode: str | None = None
    """``idle``, ``daily`` or ``None`` (not known, or it does not reset by itself)."""
    idle_minutes: float | None = None


class Agent(Protocol):
    """One agent of a runtime's state, opened read-only (a snapshot where the runtime keeps a store).

    Everything the generic rooms read of a state goes through here: its keys, a key's lineage
    (pieces, boundaries, evidence), a piece's transcript, the view and window the runtime uses.
    """

    root: Path
    agent: str

    @property
    def keys(self) -> list[str]:
        """Every session key of the agent."""

    def lineage(self, key: str | None = None) -> Lineage:
        """The lineage of ``key`` (default: the agent's main key, else its only one)."""

    def open_piece(self, piece: Piece) -> AbstractContextManager[Transcript]:
        """A piece's transcript, open."""

    def session_file(self, session_id: str) -> Path:
        """A session of the runtime's store as a private JSONL file (read by the transcript reader)."""

    def transcript_bytes(self, piece: Piece) -> bytes:
        """A piece's transcript bytes."""

    def view(self, lineage: Lineage) -> View:
        """The view the runtime that loads this state uses for ``lineage``."""

    def window(self, key: str) -> tuple[int | None, str | None]:
        """The model's context window for ``key`` and where that came from."""

    def write_refusal(self) -> str | None:
        """Why an activation would refuse to write this agent's state, and what to do (``None``: it would not)."""

    def hidden(self, key: str) -> bool:
        """Whether ``key`` is the runtime's own bookkeeping whose pieces belong to another key."""

    def boundary(self, lineage: Lineage, piece: Piece, after: Piece | None, policy: ResetPolicy) -> Boundary:
        """The boundary after ``piece`` (the next piece is ``after``), by the runtime's records."""

    def reset_policy(self) -> ResetPolicy:
        """The runtime's reset policy for this state, as it resolves it."""

    def reasons(self) -> Mapping[str, str | None]:
        """Session id → the reason the runtime recorded for opening it (when it records one)."""


class AppendRepair(msgspec.Struct, kw_only=True):
    """What a runtime's room appends to one session file to mend one loss, checked by its loader's model."""

    file: Path
    """The session file to append to."""
    data: bytes
    """Its bytes the repair was computed on (the apply refuses a file that is no longer these)."""
    appended: bytes
    """The bytes to append, as the runtime writes its rows."""
    rows: list[str]
    """The ids of the rows appended, in order."""
    lost_rows: int
    """Rows the repair puts back on the path the runtime's loader walks."""
    lost_items: int
    """Texts, tool calls and tool results that must be sent again."""
    view_messages: int
    """Messages the loader's model sends once the repair is appended."""
    own: dict[str, Any] = msgspec.field(default_factory=dict)
    """What the package keeps for the room's own checks (rows as they were, what must come back)."""


class SessionAppend(Protocol):
    """What a runtime whose sessions are append-only files says about a repair appended to one.

    The activation driver's session-append target
    (:mod:`kurahi.lifecycle.activation.targets.session_append`) writes and cuts the bytes; the
    runtime's room says which rows, whether the runtime has the session open, and whether its
    loader then sends what the repair brought back. ``plan`` is the package's ``activation.json``.
    """

    store: str
    """The ``store`` its packages' plans name."""
    package_words: str
    """What its packages are called in a refusal (``Claude Code repair package``)."""
    writer: str
    """The program that appends to its session files, in a sentence (``claude``)."""

    def refuse_if_running(self, plan: Mapping[str, Any]) -> None:
        """Raise (a :class:`~kurahi.errors.KurahiError` exiting 5) while the runtime has the session open."""

    def refuse_open(self, root: Path, session_id: str) -> None:
        """The same, before there is a plan: ``session_id`` of the state at ``root``."""

    def repair(self, root: Path, loss: SessionLoss, markers: list[str]) -> AppendRepair:
        """What to append to mend ``loss`` (one of :meth:`Runtime.losses`), checked by the loader's model.

        ``markers``: phrases the loader must send once it is appended.

        Raises:
            LossNotFoundError: the session changed since it was listed.
            RescueError: no append mends it (the reason), or the model does not confirm the repair.
        """

    def rows(self, plan: Mapping[str, Any]) -> int:
        """How many rows the repair appends."""

    def rows_before(self, plan: Mapping[str, Any]) -> tuple[int, bytes]:
        """The rows the repair replaced, as they were and as the runtime writes them (a later row wins)."""

    def check(self, data: bytes, plan: Mapping[str, Any]) -> tuple[bool, list[str]]:
        """Whether the runtime's loader, reading ``data``, sends what the repair brought back; the problems."""


class Runtime(Protocol):
    """A foreign runtime: where its state lives, its versions, its agents, and what it sends.

    Writing an activation into a runtime's state goes through the activation driver's target for
    :attr:`activation_store`; the runtime's room holds the statements that target runs.
    """

    name: str
    """Short and stable (``pi``, ``openclaw``)."""
    label: str
    """In sentences (``OpenClaw``)."""
    keyed: bool
    """Its state has agents and session keys (else a session is a file and nothing groups them)."""
    pi_transcripts: bool
    """Its sessions are transcripts in Pi's format (Pi's, OpenClaw's), which Kurahi's transcript reader
    reads (``session context``, ``lineage``, ``kurahi mcp``); else only its own room reads them."""
    how_to_stop: str
    """How its user stops it before a repair, in words."""
    state_words: str
    """What its state is called in a sentence (``OpenClaw state``)."""
    no_losses: str
    """A runtime without keys: why ``kurahi rescue`` has nothing to bring back there."""
    no_losses_mcp: str
    """The same, as ``kurahi mcp``'s ``losses`` tool says it."""

    session_append: SessionAppend | None
    """How a loss is mended by appending to one of its session files (``None``: it is not)."""

    def inventory(self, root: Path) -> tuple[dict[str, object], str]:
        """What its state at ``root`` holds: counts by name, and the same in words (read-only)."""

    versions: tuple[Any, ...]
    """One row of facts per release Kurahi has been run against, oldest first."""

    def locate(self, env: Mapping[str, str] | None = None) -> Location:
        """Where its state lives on this machine, and which setting said so."""

    def owns(self, root: Path) -> bool:
        """Whether ``root`` is this runtime's state (read-only: a look at names, nothing opened)."""

    def agents(self, root: Path) -> list[str]:
        """The agents of its state at ``root`` that have sessions."""

    def open_agent(self, root: str | os.PathLike[str], agent: str | None = None) -> AbstractContextManager[Agent]:
        """One agent's state, read-only."""

    def session_files(self, root: Path) -> list[Any]:
        """A runtime without keys: its session files (``session_id``, ``file``), oldest first; else none."""

    def history_folders(self, root: Path, agent: str | None) -> list[Path]:
        """The folders whose files hold ``agent``'s history (a stat of each tells it changed)."""

    def signature(self, root: Path) -> tuple[object, ...]:
        """What changes when a session is written, reset or rolled over (cheap: ``rescue watch`` polls it)."""

    def running(self, root: Path) -> str | None:
        """What shows the runtime is running on ``root`` (a held lock, in words), else ``None``."""

    def losses(self, root: Path) -> SessionLosses | None:
        """The losses the runtime finds itself in its state at ``root``, read-only; ``None``: it finds none itself.

        A runtime whose history breaks *inside* a session file (a row linked so that the runtime's
        loader no longer reaches what came before: Claude Code) lists those breaks here. A runtime
        whose history is lost *between* sessions, by agent and key (OpenClaw, a Kurahi home),
        answers ``None``: rescue reads its lineages instead (:mod:`kurahi.lifecycle.rescue.losses`);
        so does a runtime that loses nothing by itself (Pi), whose :attr:`no_losses` says why.

        Raises:
            UsageError: ``root`` is not a directory.
            TranscriptReadError: the state cannot be read at all (a file it cannot read is named
                in the answer's ``unread`` and notes instead).
        """

    def loading_view(self, root: Path, agent: str) -> tuple[str | None, int | None]:
        """The view (a name in :mod:`kurahi.runtimes.views`) and window that will load an activated session.

        ``(None, None)``: Pi's projection, without a window.
        """

    def activation_store(self, root: Path, agent: str) -> str:
        """Which activation target writes this agent's state: ``files`` or ``sqlite``."""

    def sent_view(self, path: Path, sure: bool = False) -> SentView | None:
        """What the runtime's own loader sends next for a session file only its room reads.

        ``None`` when the file is not one of its own (a runtime whose sessions are Pi transcripts
        always answers ``None``). ``sure``: the user said whose the file is; it is read as such
        without looking at its first lines.

        Raises:
            UnsafeFileError: the file is a link or not a regular file.
            TranscriptReadError: it cannot be read.
        """

    def own_keys(self, root: Path) -> list[str]:
        """A runtime whose sessions only its room reads: what groups them (one conversation place each), newest last."""

    def own_sessions(self, root: Path, key: str) -> list[OwnSession]:
        """The sessions of ``key``, readable, oldest first (the last one is current).

        Raises:
            UsageError: no such key.
        """

    def own_lineage(self, root: Path, session: str | None = None) -> Lineage | None:
        """A runtime whose sessions only its room reads: the pieces of one conversation split over several sessions.

        ``session``: the newest piece (default: the newest session). ``None``: the runtime's lineages are
        found by agent and key (:meth:`open_agent`).

        Raises:
            UsageError: no such session.
        """

    def own_stitch(self, sources: list[Path], out: Path) -> dict[str, Any] | None:
        """Stitch session files only its room reads into one new session file its loader sends whole.

        ``None``: the sources are not its files (they are stitched as Pi transcripts).

        Raises:
            UsageError: ``out`` exists or is not a name the runtime resumes.
        """

    def own_doctor(self, path: Path, *, fix: bool, dry_run: bool, sure: bool = False) -> dict[str, Any] | None:
        """``session doctor`` of a session file only its room reads (findings; with ``fix`` the mend).

        ``None``: not its file (``sure``: the user said it is).

        Raises:
            UsageError: a mend refused (the runtime runs on it, or no appended mend works).
        """
