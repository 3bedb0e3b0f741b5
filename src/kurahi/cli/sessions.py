"""``kurahi sessions``: the session catalogs (``sessions.json``) of a state directory."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kurahi.cli.common import EXIT, fail, print_json, translate_errors
from kurahi.cli.home import HOME_DEFAULT

if TYPE_CHECKING:  # imported where used, so `kurahi --help` stays quick
    from kurahi.cli.output import Part
    from kurahi.store.base import Backend

__all__ = ["app", "default_home", "list_command", "open_store", "repair_command"]

app = typer.Typer(
    help="Session catalogs (sessions.json): list the keys of every agent, repair a corrupt catalog.",
    no_args_is_help=True,
)


def default_home() -> Path:
    """The home used when ``--home`` is not given: ``KURAHI_HOME``, else ``KOLO_HOME``, else ``~/.kolo``."""
    from kurahi.locations.dirs import kurahi_home

    with translate_errors():
        return kurahi_home().path


def open_store(home: Path | None) -> Backend:
    """The backend of a home: files in it, unless ``KOLO_STORE`` names another store (a database URL)."""
    from kurahi.store.open import open_backend

    return open_backend(home or default_home(), os.environ.get("KOLO_STORE") or None)


def _human_time(ms: int | None) -> str:
    if ms is None:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return str(ms)


@app.command("ls")
def list_command(
    home: Annotated[
        Path | None,
        typer.Option(
            "--home",
            show_default=HOME_DEFAULT,
            help="State directory holding agents/<agentId>/sessions/sessions.json.",
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Only this agent id (default: every agent)."),
    ] = None,
    pi: Annotated[
        bool,
        typer.Option(
            "--pi",
            help="List Pi's sessions instead: PI_CODING_AGENT_SESSION_DIR, else $PI_CODING_AGENT_DIR/sessions, "
            "else ~/.pi/agent/sessions.",
        ),
    ] = False,
    openclaw: Annotated[
        bool,
        typer.Option(
            "--openclaw",
            help="List OpenClaw's catalogs instead: OPENCLAW_STATE_DIR, else $OPENCLAW_HOME/.openclaw, "
            "else ~/.openclaw.",
        ),
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print a JSON list of objects instead of a table."),
    ] = False,
) -> None:
    """List every session key of every agent's catalog, with its transcript's presence (or Pi's session files)."""
    from kurahi.cli.home import home_root
    from kurahi.cli.output import table
    from kurahi.locations.listing import list_sessions

    if sum((pi, openclaw, home is not None)) > 1:
        fail("give at most one of --home, --pi and --openclaw", EXIT.USAGE)
    if pi:
        if agent is not None:
            fail("--agent goes with a Kurahi home or --openclaw; Pi has no agents", EXIT.USAGE)
        _list_pi(as_json)
        return
    if openclaw:
        from kurahi.runtimes.openclaw.config import openclaw_state_dir

        where = openclaw_state_dir()
        if not where.path.is_dir():
            fail(f"no OpenClaw state at {where.path} ({where.source}); set OPENCLAW_STATE_DIR", EXIT.NOT_FOUND)
        root = where.path
    else:
        # With a database store (KOLO_STORE) the catalogs are in the database: no home directory is needed.
        root = home_root(home, must_exist=not os.environ.get("KOLO_STORE"))
    with translate_errors():
        listings = list_sessions(root, agent, backend=open_store(root) if os.environ.get("KOLO_STORE") else None)
    if as_json:
        print_json([listing.to_dict() for listing in listings])
        return
    rows: list[list[Part]] = [
        [
            item.agent,
            item.key,
            item.session_id or "-",
            _human_time(item.updated_at),
            item.status or "-",
            ("yes", "green") if item.transcript_exists else ("missing", "red"),
        ]
        for item in listings
    ]
    table(
        ["agent", "key", "session id", "updated (UTC)", "status", "file"],
        rows,
        keys=range(6),
        title=f"sessions under {root}",
    )


def _list_pi(as_json: bool) -> None:
    from kurahi.cli.output import table
    from kurahi.runtimes.pi.sessions import list_pi_sessions, pi_sessions_dir

    where = pi_sessions_dir()
    if not where.path.is_dir():
        fail(
            f"no Pi sessions at {where.path} ({where.source}); set PI_CODING_AGENT_DIR if Pi keeps them elsewhere",
            EXIT.NOT_FOUND,
        )
    listings = list_pi_sessions(where.path)
    if as_json:
        print_json([s.to_dict() for s in listings])
        return
    rows = [
        [s.session_id or "(no header)", (s.started or "-")[:16].replace("T", " "), str(s.bytes), s.cwd or "-"]
        for s in listings
    ]
    table(["session id", "started (UTC)", "bytes", "cwd"], rows, right=(2,), title=f"Pi sessions in {where.path}")


@app.command("repair")
def repair_command(
    file: Annotated[
        Path,
        typer.Argument(help="The sessions.json to repair.", show_default=False),
    ],
    any_name: Annotated[
        bool,
        typer.Option("--any-name", help="Repair a catalog that is not named sessions.json."),
    ] = False,
) -> None:
    """Move a catalog that does not parse aside to sessions.json.corrupt.<time>; leave a healthy one."""
    from kurahi.store.catalog import Catalog

    if file.name != "sessions.json" and not any_name:
        # Anything that does not parse would be moved aside: a mistyped path must not be.
        fail(
            f"{file}: not named sessions.json, and repair moves the file aside; "
            "--any-name repairs a catalog under another name",
            EXIT.USAGE,
        )
    with translate_errors():
        moved = Catalog(file).repair()
    if moved is None:
        fail(f"{file}: no such file", EXIT.NOT_FOUND)
    from kurahi.cli.output import say

    say(f"moved the corrupt catalog {file} aside to:")
    say(f"  {moved}")
    say("the next change to this catalog starts an empty one")
