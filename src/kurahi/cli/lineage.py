"""``kurahi lineage``: rebuild one history across a session reset and check what it projects."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kurahi.cli.common import EXIT, console, err_console, print_json, translate_errors
from kurahi.cli.lineage_draw import draw_cmd
from kurahi.cli.lineage_find import find_cmd

if TYPE_CHECKING:  # imported where used, so `kurahi --help` stays quick
    pass

__all__ = ["app"]

app = typer.Typer(help="Find, trace, stitch and check the pieces of one history.", no_args_is_help=True)
app.command("find")(find_cmd)
app.command("draw")(draw_cmd)


@app.command("path")
def path_cmd(
    file: Path = typer.Argument(..., help="A transcript (.jsonl).", show_default=False),
    leaf: str | None = typer.Option(None, "--leaf", help="Trace from this entry instead of Pi's leaf."),
    as_json: bool = typer.Option(False, "--json", help="Print the path as JSON."),
) -> None:
    """The canonical path from a leaf, its branch points, and the side branches it leaves out."""
    from rich.markup import escape
    from rich.table import Table

    from kurahi.lineage.canonical import canonical_path
    from kurahi.store.transcript import Transcript

    with translate_errors(), Transcript.open(file) as t:
        cp = canonical_path(t, leaf)
        if as_json:
            print_json(cp.to_dict())
            return
        console.print(
            f"[bold]{escape(str(file))}[/]: leaf [cyan]{cp.leaf_id}[/], {len(cp.entries)} of {cp.total_entries} "
            f"entries on the path, {len(cp.compactions)} compactions, {len(cp.side_branches)} side branches "
            f"({cp.abandoned} entries left out)"
        )
        if cp.side_branches:
            table = Table(header_style="bold")
            for col in ("branch point", "side branch starts at", "line", "entries"):
                table.add_column(col)
            for s in cp.side_branches:
                table.add_row(s.at, s.first, str(s.first_line), str(s.size))
            console.print(table)


@app.command("stitch")
def stitch_cmd(
    before: Path = typer.Argument(..., help="A: the transcript before the reset.", show_default=False),
    after: list[Path] = typer.Argument(..., help="B (and later pieces), in time order.", show_default=False),
    out: Path = typer.Option(..., "--out", help="C: the new transcript (must not exist)."),
    leaf: str | None = typer.Option(None, "--leaf", help="A's reset-time leaf (default: Pi's leaf of A)."),
    report: Path | None = typer.Option(None, "--report", help="Write the line-by-line report here (JSON)."),
    rename_colliding: bool = typer.Option(False, "--rename-colliding", help="Rename ids that collide."),
    force: bool = typer.Option(False, "--force", help="Stitch even when a later piece starts before A ends."),
    evidence: Path | None = typer.Option(None, "--evidence", help="Write an evidence folder here."),
    as_json: bool = typer.Option(False, "--json", help="Print a summary as JSON."),
) -> None:
    """Stitch A + B → C: A's canonical path, then B's whole tree re-parented onto A's leaf."""
    import msgspec

    from kurahi.lineage.evidence import write_evidence
    from kurahi.lineage.stitch import stitch
    from kurahi.store.fsio import atomic_write

    sources = [before, *after]
    with translate_errors():
        rep = stitch(sources, out, leaf_id=leaf, rename_colliding=rename_colliding, force=force)
        data = rep.to_dict()
        if report is not None:
            if report.exists():
                raise typer.BadParameter(f"{report} exists", param_hint="--report")
            # msgspec writes the same JSON (compact, UTF-8) several times faster than json.dumps.
            atomic_write(report, msgspec.json.encode(data), mode=0o644)
        if evidence is not None:
            write_evidence(
                evidence,
                inputs={f"source{i}": p for i, p in enumerate(sources)},
                outputs={"stitched": out},
                reports={"stitch": data},
            )
    from rich.markup import escape  # rich only once there is something to print for people

    for w in rep.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(w)}", soft_wrap=True)
    summary = {k: v for k, v in data.items() if k != "sources"}
    summary["sources"] = [{k: v for k, v in s.items() if k != "lines"} for s in data["sources"]]
    if as_json:
        print_json(summary)
        return
    from rich.table import Table

    table = Table(header_style="bold")
    for col in ("source", "role", "entries", "copied", "left out", "reset-time leaf"):
        table.add_column(col)
    for s in rep.sources:
        table.add_row(escape(s.path), s.role, str(s.entries), str(s.copied), str(s.not_copied), str(s.leaf_id))
    console.print(table)
    console.print(
        f"wrote {escape(str(out))} (sha256 {rep.out_sha256[:16]}…): {data['identicalLines']} lines byte-identical "
        f"to their source, {data['changedLines']} changed ({', '.join(e['child'] for e in rep.edges)} re-parented)"
    )


@app.command("check")
def check_cmd(
    file: Path = typer.Argument(..., help="A transcript (usually the stitched C).", show_default=False),
    marker: list[str] = typer.Option([], "--marker", help="Text that must be in the effective context."),
    window: int = typer.Option(200_000, "--window", help="The model's context window (tokens).", min=1),
    reserve: list[int] = typer.Option([], "--reserve", help="Reserve tokens to route against (repeatable)."),
    system_prompt_tokens: list[int] = typer.Option(
        [], "--system-prompt-tokens", help="Synthetic system-prompt loads to add (repeatable)."
    ),
    evidence: Path | None = typer.Option(None, "--evidence", help="Write an evidence folder here."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Project a transcript two independent ways and check markers and token pressure.

    Exits 1 when a marker is missing or the two projections disagree.
    """
    from kurahi.context.budget import DEFAULT_RESERVE_TOKENS
    from kurahi.lineage.check import check
    from kurahi.lineage.evidence import write_evidence

    with translate_errors():
        rep = check(
            file,
            markers=marker,
            window=window,
            reserves=reserve or [DEFAULT_RESERVE_TOKENS],
            system_prompt_tokens=system_prompt_tokens or [0],
        )
        if evidence is not None:
            write_evidence(evidence, inputs={"transcript": file}, outputs={}, reports={"check": rep.to_dict()})
    if as_json:
        print_json(rep.to_dict())
    else:
        from rich.markup import escape
        from rich.table import Table

        agree = "[green]agree[/]" if rep.projections_agree else "[bold red]DISAGREE[/]"
        console.print(
            f"[bold]{escape(str(file))}[/]: {rep.messages} messages; fast and reference projections {agree} "
            f"(sha256 {rep.fast_sha256[:16]}…)"
        )
        if rep.compaction_id:
            console.print(
                f"operative compaction {rep.compaction_id}: 1 summary + {rep.retained} retained + {rep.later} later"
            )
        if rep.runtime_messages is not None:
            console.print(f"OpenClaw's runtime sends only what follows the last reset: {rep.runtime_messages} messages")
        if rep.markers:
            table = Table(header_style="bold")
            for col in ("marker", "found", "message", "part"):
                table.add_column(col)
            for m in rep.markers:
                found = "[green]yes[/]" if m.index is not None else "[bold red]missing[/]"
                table.add_row(escape(m.marker), found, str(m.index if m.index is not None else "-"), m.part or "-")
            console.print(table)
        if rep.routes:
            table = Table(header_style="bold")
            for col in ("system prompt", "reserve", "tokens", "threshold", "headroom", "route"):
                table.add_column(col, justify="right")
            for r in rep.routes:
                table.add_row(
                    str(r["systemPromptTokens"]),
                    str(r["reserveTokens"]),
                    str(r["contextTokens"]),
                    str(r["threshold"]),
                    str(r["headroom"]),
                    r["route"],
                )
            console.print(table)
    if not rep.ok:
        raise typer.Exit(EXIT.FAILED)
