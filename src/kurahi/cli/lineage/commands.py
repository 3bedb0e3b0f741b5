"""``kurahi lineage``: rebuild one history across a session reset and check what it projects."""

from __future__ import annotations

from pathlib import Path

import typer

from kurahi.cli.common import print_json, shown, stdin_files, translate_errors
from kurahi.cli.fast.lineage import run_check, run_stitch
from kurahi.cli.lineage.draw import draw_cmd
from kurahi.cli.lineage.find import find_cmd

__all__ = ["app"]

app = typer.Typer(help="Find, trace, stitch and check the pieces of one history.", no_args_is_help=True)
app.command("find")(find_cmd)
app.command("draw")(stdin_files("files")(draw_cmd))


@app.command("path")
@stdin_files("file")
def path_cmd(
    file: Path = typer.Argument(..., help="A transcript (.jsonl).", show_default=False),
    leaf: str | None = typer.Option(None, "--leaf", help="Trace from this entry instead of Pi's leaf."),
    as_json: bool = typer.Option(False, "--json", help="Print the path as JSON."),
) -> None:
    """The canonical path from a leaf, its branch points, and the side branches it leaves out."""
    from kurahi.cli.output import say, table
    from kurahi.lineage.path import canonical_path
    from kurahi.pi.transcript import Transcript

    with translate_errors(), Transcript.open(file) as t:
        cp = canonical_path(t, leaf)
        if as_json:
            print_json(cp.to_dict())
            return
        say(
            (shown(file), "bold"),
            ": leaf ",
            (str(cp.leaf_id), "cyan"),
            f", {len(cp.entries)} of {cp.total_entries} entries on the path, {len(cp.compactions)} compactions, "
            f"{len(cp.side_branches)} side branches ({cp.abandoned} entries left out)",
        )
        rows = [[str(s.at), str(s.first), str(s.first_line), str(s.size)] for s in cp.side_branches]
        table(
            ["branch point", "side branch starts at", "line", "entries"],
            rows,
            right=(2, 3),
            keys=range(4),
            title="side branches",
        )


@app.command("stitch")
@stdin_files("before", "after")
def stitch_cmd(
    before: Path = typer.Argument(
        ...,
        help="A: the transcript before the reset (a file, or sqlite:<db>#<session id> as `lineage find` names it).",
        show_default=False,
    ),
    after: list[Path] | None = typer.Argument(
        None,
        help="B (and later pieces), in time order. None when A holds in-transcript reset entries (OpenClaw 2026.9): "
        "they are bypassed.",
        show_default=False,
    ),
    out: Path = typer.Option(..., "--out", help="C: the new transcript (must not exist)."),
    leaf: str | None = typer.Option(None, "--leaf", help="A's reset-time leaf (default: Pi's leaf of A)."),
    report: Path | None = typer.Option(None, "--report", help="Write the line-by-line report here (JSON)."),
    rename_colliding: bool = typer.Option(False, "--rename-colliding", help="Rename ids that collide."),
    force: bool = typer.Option(False, "--force", help="Stitch even when a later piece starts before A ends."),
    evidence: Path | None = typer.Option(None, "--evidence", help="Write an evidence folder here."),
    as_json: bool = typer.Option(False, "--json", help="Print a summary as JSON."),
) -> None:
    """Stitch A + B → C: A's canonical path, then B's whole tree re-parented onto A's leaf.

    Reset entries (OpenClaw 2026.9) are bypassed: the entry after each is re-parented onto the
    entry before it, so `stitch S --out C` rebuilds one session across its in-transcript reset.
    """
    code = run_stitch(
        [_source(before), *(_source(a) for a in after or [])],
        out,
        leaf=leaf,
        report=report,
        rename_colliding=rename_colliding,
        force=force,
        evidence=evidence,
        as_json=as_json,
    )
    if code:
        raise typer.Exit(code)


def _source(path: Path) -> Path | str:
    """A SQLite source stays a string (a Path would fold its ``//``)."""
    text = str(path)
    return text if text.startswith("sqlite:") else path


@app.command("check")
@stdin_files("file")
def check_cmd(
    file: Path = typer.Argument(
        ...,
        help="A transcript (usually the stitched C), or a SQLite session as `lineage find` names it "
        "(sqlite:<db>#<session id>).",
        show_default=False,
    ),
    marker: list[str] = typer.Option(
        [], "--marker", help="Text that must be in what the runtime sends (the effective context)."
    ),
    window: int | None = typer.Option(
        None,
        "--context-window",
        "--window",
        help="The model's context window (tokens). Default: the OpenClaw config's when the file lives in a "
        "state dir, else 200000. A marker past what the runtime sends under it fails the check.",
        min=1,
        show_default=False,
    ),
    reserve: list[int] = typer.Option([], "--reserve", help="Reserve tokens to route against (repeatable)."),
    system_prompt_tokens: list[int] = typer.Option(
        [], "--system-prompt-tokens", help="Synthetic system-prompt loads to add (repeatable)."
    ),
    evidence: Path | None = typer.Option(None, "--evidence", help="Write an evidence folder here."),
    runtime: str | None = typer.Option(
        None,
        "--runtime",
        help="Whose view decides: pi, openclaw-2026.5 (Pi's projection), openclaw-2026.9 (only what follows "
        "the last reset entry) or claude (what `claude --resume` sends next). Default: the runtime the source "
        "belongs to (a SQLite session, or a file holding reset entries: openclaw-2026.9; a file beside "
        "sessions.json: openclaw-2026.5; a file of Claude Code's rows: claude; any other file: pi).",
        show_default=False,
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Project a transcript two independent ways and check markers and token pressure.

    Reports what Pi and OpenClaw 2026.9 would send, and what the chosen runtime really sends
    when the history is larger than the window. Exits 1 when a marker is missing from what
    the chosen runtime sends or the two projections disagree.
    """
    code = run_check(
        file,
        runtime=runtime,
        markers=marker,
        window=window,
        reserves=reserve,
        system_prompt_tokens=system_prompt_tokens,
        evidence=evidence,
        as_json=as_json,
    )
    if code:
        raise typer.Exit(code)
