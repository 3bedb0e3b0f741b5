"""``kurahi sessions``: the session catalogs (``sessions.json``) of a state directory."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kurahi.cli.common import EXIT, console, fail, print_json, translate_errors

if TYPE_CHECKING:  # imported where used, so `kurahi --help` stays quick
    from kurahi.store.backend import Backend

__all__ = ["app", "default_home", "list_command", "open_store", "repair_command"]

app = typer.Typer(
    help="Session catalogs (sessions.json): list the keys of every agent, repair a corrupt catalog.",
    no_args_is_help=True,
)


def default_home() -> Path:
    """Return the state directory used when ``--home`` is not given and ``KOLO_HOME`` is unset."""
    return Path.home() / ".kolo"


def open_store(home: Path | None) -> Backend:
    """The backend of a home: files in it, unless ``KOLO_STORE`` names another store (a database URL)."""
    from kurahi.store.backends import open_backend

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
            envvar="KOLO_HOME",
            show_default="$KOLO_HOME, else ~/.kolo",
            help="State directory holding agents/<agentId>/sessions/sessions.json.",
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Only this agent id (default: every agent)."),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print a JSON list of objects instead of a table."),
    ] = False,
) -> None:
    """List every session key of every agent's catalog, with its transcript's presence."""
    from kurahi.store.listing import list_sessions

    root = home if home is not None else default_home()
    with translate_errors():
        listings = list_sessions(root, agent, backend=open_store(root) if os.environ.get("KOLO_STORE") else None)
    if as_json:
        print_json([listing.to_dict() for listing in listings])
        return
    if not listings:
        console.print(Text(f"no sessions under {root}"))
        return
    table = Table(title=Text(f"sessions under {root}"), title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("agent", no_wrap=True)
    table.add_column("key", overflow="fold")
    table.add_column("session id", overflow="fold")
    table.add_column("updated (UTC)", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("file", no_wrap=True)
    for item in listings:
        table.add_row(
            Text(item.agent),
            Text(item.key),
            Text(item.session_id or "-"),
            Text(_human_time(item.updated_at)),
            Text(item.status or "-"),
            Text("yes", style="green") if item.transcript_exists else Text("missing", style="red"),
        )
    console.print(table)


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
    console.print(Text(f"moved the corrupt catalog {file} aside to:"), soft_wrap=True)
    console.print(Text(f"  {moved}"), soft_wrap=True)
    console.print(Text("the next change to this catalog starts an empty one"), soft_wrap=True)
