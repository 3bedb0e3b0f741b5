"""``kurahi lifecycle``: the freshness decision matrix, with and without the rollover guard."""

from __future__ import annotations

from typing import Annotated

import typer

from kurahi.cli.common import print_json

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
    from kurahi.cli.output import table
    from kurahi.lifecycle.freshness.matrix import decision_matrix

    rows = [r for r in decision_matrix() if r.differs or not only_differences]
    if as_json:
        print_json([r.to_dict() for r in rows])
        return

    def cell(text: str, differs: bool) -> tuple[str, str]:
        return (text, "bold yellow" if differs else "")

    cells = [
        [
            cell(text, r.differs)
            for text in (
                r.session_type,
                r.command,
                r.usable,
                r.freshness,
                r.last_run,
                r.mtime,
                f"{r.unguarded.action} ({r.unguarded.kind})",
                f"{r.guarded.action} ({r.guarded.kind})",
            )
        ]
        for r in rows
    ]
    headers = ["type", "command", "entry", "freshness", "last run", "mtime", "unguarded", "guarded"]
    title = f"{len(rows)} rows; the guard changes {sum(r.differs for r in rows)}"
    table(headers, cells, keys=(0, 1, 3, 4, 5), title=title)
