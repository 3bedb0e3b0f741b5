"""``kurahi audit``: check the gateway's hash-chained audit log and show its latest records."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kurahi.cli.common import EXIT, fail, print_json, translate_errors
from kurahi.cli.home import HOME_DEFAULT
from kurahi.cli.output import say, table

if TYPE_CHECKING:
    from kurahi.store.base import AuditLog

__all__ = ["app", "tail_command", "verify_command"]

app = typer.Typer(
    help="The audit chain (<home>/audit/chain.jsonl): verify every link, show the latest records.",
    no_args_is_help=True,
)

HomeOption = Annotated[
    Path | None,
    typer.Option(
        "--home",
        show_default=HOME_DEFAULT,
        help="State directory whose audit/chain.jsonl is read.",
    ),
]


def _chain(home: Path | None) -> AuditLog:
    """The home's audit chain, wherever the home's store keeps it (``KOLO_STORE``)."""
    import os

    from kurahi.cli.home import home_root
    from kurahi.cli.sessions import open_store

    # With a database store (KOLO_STORE) the chain is in the database, and no home directory is needed.
    root = home_root(home, must_exist=not os.environ.get("KOLO_STORE"))
    return open_store(root).audit()


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
        say(f"ok: {path}: {result.entries} records verify ({head})")
    else:
        say((f"BROKEN: {path}:{result.first_bad_line}: record seq {result.first_bad_seq}: {result.reason}", "bold red"))
        last = f"up to seq {result.head_seq}, hash {result.head_hash}" if result.head_seq else "no record verifies"
        say(f"the chain holds {last}")
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
    rows = [
        [
            str(r.seq),
            r.ts[:19].replace("T", " "),
            r.actor,
            r.action,
            r.hash[:12],
            msgspec.json.encode(r.details, order="sorted").decode() if r.details else "",
        ]
        for r in records
    ]
    headers = ["seq", "time (UTC)", "actor", "action", "hash", "details"]
    table(headers, rows, right=(0,), keys=(0, 1, 4), title=f"audit chain {path}")
