"""``kurahi lineage find``: every transcript in a session key's lineage, in time order."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kurahi.cli.common import EXIT, fail, print_json, translate_errors
from kurahi.errors import UsageError
from kurahi.fs.os_errors import os_error

if TYPE_CHECKING:  # imported where used, so `kurahi --help` stays quick
    from kurahi.lineage.find import Lineage

__all__ = ["find_cmd"]


def _short(source: str, state_dir: Path) -> str:
    """A source relative to the state directory, so the table stays readable."""
    if source.startswith("sqlite:"):
        db, _, sid = source[len("sqlite:") :].partition("#")
        return f"sqlite:{_short(db, state_dir)}#{sid}"
    try:
        return str(Path(source).relative_to(state_dir))
    except ValueError:
        return source


def _export(lineage: Lineage, state_dir: Path, folder: Path) -> list[str]:
    from kurahi.lineage.find import export_piece

    if folder.absolute().resolve().is_relative_to(state_dir.absolute().resolve()):
        raise UsageError(f"{folder}: --export must not be inside the state directory {state_dir}")
    for piece in lineage.pieces:
        sid = piece.session_id
        # The id comes from the SQLite store and becomes a file name: it must not climb out of the folder.
        if piece.db_path is not None and (not sid or sid in (".", "..") or any(c in sid for c in "/\\\0")):
            raise UsageError(f"session id {sid[:80]!r} in {piece.db_path} cannot be a file name; nothing exported")
    try:
        folder.mkdir(parents=True, exist_ok=False)
    except FileExistsError as exc:
        raise UsageError(f"{folder}: already exists; --export needs a new directory") from exc
    except OSError as exc:
        raise os_error(UsageError, "cannot create", exc, path=folder) from exc
    return [
        str(export_piece(piece, folder / f"{piece.session_id}.jsonl"))
        for piece in lineage.pieces
        if piece.db_path is not None
    ]


def _time(ms: int | None) -> str:
    from kurahi.lineage.find import iso

    text = iso(ms)
    return text.replace("T", " ").removesuffix("Z") if text else "-"


def _name(source: str) -> str:
    """The file name, or ``<db name>#<session id>`` for a SQLite piece."""
    if source.startswith("sqlite:"):
        db, _, sid = source.partition("#")
        return f"{Path(db).name}#{sid}"
    return Path(source).name


def _print_table(lineage: Lineage, state_dir: Path, exported: list[str]) -> None:
    from kurahi.cli.output import say, table

    folders = sorted({_short(str(Path(p.db_path or p.source).parent), state_dir) for p in lineage.pieces})
    say((lineage.key, "bold"), f" (agent {lineage.agent}, {lineage.layout} layout)")
    say(f"in {', '.join(folders) or state_dir}")
    rows = [
        [
            str(n),
            _name(p.source),
            p.kind,
            _time(p.first_ms),
            _time(p.last_ms),
            str(p.entry_count),
            str(p.compaction_count),
        ]
        for n, p in enumerate(lineage.pieces, 1)
    ]
    headers = ["#", "transcript", "kind", "first entry (UTC)", "last entry (UTC)", "entries", "comp."]
    table(headers, rows, right=(0, 5, 6), keys=range(7), title="Pieces, oldest first")
    for n, p in enumerate(lineage.pieces, 1):
        say(f"  #{n} found by: {'; '.join(p.found_by)}")
    number = {p.source: f"#{n}" for n, p in enumerate(lineage.pieces, 1)}
    if not lineage.boundaries:
        say("No reset boundaries: one piece without reset entries.")
    else:
        bounds = []
        for b in lineage.boundaries:
            gap = "-" if b.gap_seconds is None else f"{b.gap_seconds:g}"
            if b.kind == "reset-entry":
                where = f"in {number[b.before]}: entry {b.entry_id} ({b.reason or 'reset'})"
            else:
                where = f"{number[b.before]} → {number[b.after]}"
            bounds.append([b.kind, _time(b.from_ms), _time(b.to_ms), gap, where])
        headers = ["kind", "from (UTC)", "to (UTC)", "gap (s)", "where"]
        table(headers, bounds, right=(3,), title="Candidate reset boundaries")
    for line in [*(f"unlinked: {u}" for u in lineage.unlinked), *(f"note: {n}" for n in lineage.notes)]:
        say(line)
    for path in exported:
        say(f"exported: {path}")


def _default_state_dir() -> Path:
    """OpenClaw's state dir when there is one, else the Kurahi home (where ``kurahi doctor`` looks)."""
    from kurahi.locations.dirs import kurahi_home
    from kurahi.runtimes.openclaw.config import openclaw_state_dir

    with translate_errors():
        openclaw, home = openclaw_state_dir(), kurahi_home()
    for where in (openclaw, home):
        if where.path.is_dir():
            return where.path
    fail(
        f"no state dir found (looked in {openclaw.path} and {home.path}); name one with --state-dir",
        EXIT.NOT_FOUND,
    )


def _find_own(
    root: Path | None,
    session: str | None,
    state_dir: Path | None,
    agent: str | None,
    key: str | None,
    export: Path | None,
    as_json: bool,
) -> None:
    """``--claude DIR``: the runtime that reads its own sessions joins them."""
    from kurahi.runtimes.registry import named

    if root is None:
        fail("--session goes with --claude DIR", EXIT.USAGE)
    if state_dir is not None or agent is not None or key is not None or export is not None:
        fail("--claude takes none of --state-dir, --agent, --key, --export", EXIT.USAGE)
    if not root.is_dir():
        fail(f"{root}: no such directory (expected a Claude Code config dir)", EXIT.NOT_FOUND)
    with translate_errors():
        lineage = named("claude").own_lineage(root, session)
    assert lineage is not None
    if as_json:
        print_json({**lineage.to_dict(), "exported": []})
        return
    from kurahi.cli.output import say, table

    say((lineage.key, "bold"), f" (the conversation in {lineage.agent})")
    rows = [
        [str(n), p.session_id, _time(p.first_ms), _time(p.last_ms), str(p.entry_count), p.confidence, p.found_by[0]]
        for n, p in enumerate(lineage.pieces, 1)
    ]
    headers = ["#", "session", "first row (UTC)", "last row (UTC)", "rows", "link", "found by"]
    table(headers, rows, right=(0, 4), title="Pieces, oldest first")
    for b in lineage.boundaries:
        say(f"{b.kind}: {b.reason}")
    for n in lineage.notes:
        say(f"note: {n}")


def find_cmd(
    state_dir: Path | None = typer.Option(
        None,
        "--state-dir",
        help="A Kurahi home or an OpenClaw state directory (JSON or SQLite era). Default: OpenClaw's, found as "
        "`kurahi doctor` finds it (OPENCLAW_STATE_DIR, else ~/.openclaw), else the Kurahi home.",
    ),
    agent: str | None = typer.Option(None, "--agent", help="Agent id (default: the only agent present)."),
    key: str | None = typer.Option(
        None, "--key", help="Session key (default: agent:<agent>:main when present, else the only key)."
    ),
    export: Path | None = typer.Option(
        None, "--export", help="Write every SQLite piece as JSONL into this new directory"
    ),
    claude: Path | None = typer.Option(
        None,
        "--claude",
        help="A Claude Code config dir (~/.claude): join the conversation whose newest session is --session "
        "(default: the newest) over /clear, `claude --continue` from another folder and a moved project folder.",
    ),
    session: str | None = typer.Option(None, "--session", help="With --claude: the conversation's newest session."),
    as_json: bool = typer.Option(False, "--json", help="Print the lineage as one JSON object."),
) -> None:
    """List every transcript in a session key's lineage, oldest first, and the candidate reset boundaries.

    Pieces are the live transcript, reset and deleted archives, sessions named by
    previousSessionId or a header's parentSession, SQLite sessions (OpenClaw 2026.8+), and
    reset archives matched by time (each piece says which rule linked it). Boundaries are
    each piece's last entry to the next piece's first, and in-transcript reset entries.
    Reads only: nothing is written into the state directory.
    """
    from kurahi.lineage.find import find_lineage

    if claude is not None or session is not None:
        _find_own(claude, session, state_dir, agent, key, export, as_json)
        return
    if state_dir is None:
        state_dir = _default_state_dir()
    if not state_dir.is_dir():
        fail(f"{state_dir}: no such directory (expected a Kurahi home or an OpenClaw state directory)", EXIT.NOT_FOUND)
    with translate_errors():
        lineage = find_lineage(state_dir, agent=agent, key=key)
        exported = _export(lineage, state_dir, export) if export is not None else []
    if as_json:
        print_json({**lineage.to_dict(), "exported": exported})
    else:
        _print_table(lineage, state_dir, exported)
