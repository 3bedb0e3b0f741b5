"""``kurahi audit``: check the gateway's hash-chained audit log and show its latest records."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kurahi.cli.common import EXIT, console, fail, print_json, translate_errors

if TYPE_CHECKING:
    from kurahi.store.backend import AuditLog

__all__ = ["app", "tail_command", "verify_command"]

app = typer.Typer(
    help="The audit chain (<home>/audit/chain.jsonl): verify every link, show the latest records.",
    no_args_is_help=True,
)

HomeOption = Annotated[
    Path | None,
    typer.Option(
        "--home",
        envvar="KOLO_HOME",
        show_default="$KOLO_HOME, else ~/.kolo",
        help="State directory whose audit/chain.jsonl is read.",
    ),
]


def _chain(home: Path | None) -> AuditLog:
    """The home's audit chain, wherever the home's store keeps it (``KOLO_STORE``)."""
    from kurahi.cli.sessions import open_store

    return open_store(home).audit()


@app.command("verify")
def verify_command(
    home: HomeOption = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the verification as one JSON object."),
    ] = False,
) -> None:
    """Recompute every hash of the chain; exit 0 if it holds, 1 naming the first bad record, 3 if missing."""
    from kurahi.errors import AuditError

    with translate_errors():
        chain = _chain(home)
        path = chain.locator
        try:
            result = chain.verify()
        except AuditError as exc:  # missing or unreadable: a broken chain is a result, not an error
            fail(str(exc), EXIT.NOT_FOUND)
    if as_json:
        print_json(result.to_dict())
    elif result.ok:
        head = f"head seq {result.head_seq}, hash {result.head_hash}" if result.head_seq else "empty"
        console.print(Text(f"ok: {path}: {result.entries} records verify ({head})"), soft_wrap=True)
    else:
        console.print(
            Text(
                f"BROKEN: {path}:{result.first_bad_line}: record seq {result.first_bad_seq}: {result.reason}",
                style="bold red",
            ),
            soft_wrap=True,
        )
        last = f"up to seq {result.head_seq}, hash {result.head_hash}" if result.head_seq else "no record verifies"
        console.print(Text(f"the chain holds {last}"), soft_wrap=True)
    if not result.ok:
        raise typer.Exit(EXIT.FAILED)


@app.command("tail")
def tail_command(
    home: HomeOption = None,
    count: Annotated[
        int,
        typer.Option("-n", "--count", min=1, help="How many of the latest records to show."),
    ] = 20,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print a JSON list of records (oldest first) instead of a table."),
    ] = False,
) -> None:
    """Show the latest records, oldest first, read from the end of the file (run `verify` to check them)."""
    import msgspec

    from kurahi.errors import AuditChainError, AuditError

    with translate_errors():
        chain = _chain(home)
        path = chain.locator
        if not chain.exists():
            fail(f"{path}: no audit chain here", EXIT.NOT_FOUND)
        try:
            records = chain.tail(count)
        except AuditChainError as exc:
            fail(f"{exc} (run `kurahi audit verify`)", EXIT.INVALID)
        except AuditError as exc:
            fail(str(exc), EXIT.NOT_FOUND)
    if as_json:
        print_json([r.to_dict() for r in records])
        return
    if not records:
        console.print(Text(f"{path}: no records yet"), soft_wrap=True)
        return
    table = Table(title=Text(f"audit chain {path}"), title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("seq", justify="right", no_wrap=True)
    table.add_column("time (UTC)", no_wrap=True)
    table.add_column("actor", overflow="fold")
    table.add_column("action", overflow="fold")
    table.add_column("details", overflow="fold")
    table.add_column("hash", no_wrap=True)
    for r in records:
        details = msgspec.json.encode(r.details, order="sorted").decode() if r.details else ""
        table.add_row(Text(str(r.seq)), Text(r.ts), Text(r.actor), Text(r.action), Text(details), Text(r.hash[:12]))
    console.print(table)
