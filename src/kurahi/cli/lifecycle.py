"""``kurahi lifecycle``: the freshness decision matrix, with and without the rollover guard."""

from __future__ import annotations

from typing import Annotated

import typer

from kurahi.cli.common import console, print_json

__all__ = ["app"]

app = typer.Typer(help="Session lifecycle: freshness policy and the rollover guard.", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """Session lifecycle: freshness policy and the rollover guard."""


@app.command("matrix")
def matrix_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
    only_differences: Annotated[
        bool, typer.Option("--differences", help="Only the rows where the guard changes the outcome.")
    ] = False,
) -> None:
    """Every combination of the decision's inputs with the unguarded and the guarded outcome."""
    from rich import box
    from rich.table import Table

    from kurahi.lifecycle.matrix import decision_matrix

    rows = [r for r in decision_matrix() if r.differs or not only_differences]
    if as_json:
        print_json([r.to_dict() for r in rows])
        return
    table = Table(box=box.SIMPLE_HEAD, title=f"{len(rows)} rows; the guard changes {sum(r.differs for r in rows)}")
    for col in ("type", "command", "entry", "freshness", "last run", "mtime", "unguarded", "guarded"):
        table.add_column(col)
    for r in rows:
        style = "bold yellow" if r.differs else ""
        table.add_row(
            r.session_type,
            r.command,
            r.usable,
            r.freshness,
            r.last_run,
            r.mtime,
            f"{r.unguarded.action} ({r.unguarded.kind})",
            f"{r.guarded.action} ({r.guarded.kind})",
            style=style,
        )
    console.print(table)
