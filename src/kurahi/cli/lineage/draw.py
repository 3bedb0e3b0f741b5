"""``kurahi lineage draw``: a picture of the lineage (SVG or self-contained HTML)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kurahi.cli.common import console, translate_errors
from kurahi.errors import UsageError

if TYPE_CHECKING:  # imported where used, so `kurahi --help` stays quick
    pass

__all__ = ["draw_cmd"]

_FORMATS = (".svg", ".html")


def draw_cmd(
    files: list[Path] = typer.Argument(
        ..., help="Transcripts, oldest first (a reset chain's pieces, or one stitched file).", show_default=False
    ),
    out: Path = typer.Option(..., "--out", help="lineage.svg or lineage.html (must not exist)."),
    marker: list[str] = typer.Option([], "--marker", help="Pin every canonical-path entry containing TEXT (repeat)."),
    leaf: str | None = typer.Option(None, "--leaf", help="Draw the path to this entry (in the file that holds it)."),
) -> None:
    """Draw each file's canonical path side by side: runs collapsed, side branches greyed, compactions marked.

    The stitch edge (a stitched file's re-parented root, and the link from one file's leaf
    to the next file's root) is highlighted, and each --marker is pinned where it occurs on
    the path. The format follows --out's suffix: .svg, or .html (the SVG inline with a legend,
    a summary table per file and hover details; no scripts, no network). Sources are only read.
    """
    from kurahi.fs.durable import atomic_write
    from kurahi.lineage.draw import draw_lineage
    from kurahi.lineage.draw_render import render_html, render_svg

    with translate_errors():
        suffix = out.suffix.lower()
        if suffix not in _FORMATS:
            raise UsageError(f"--out must end in .svg or .html, not {out.suffix or 'no suffix'!r}: {out}")
        if out.exists() or out.is_symlink():
            raise UsageError(f"{out} already exists; not overwriting it (choose another --out)")
        if not out.parent.is_dir():
            raise UsageError(f"{out.parent} is not a directory")
        drawing = draw_lineage(files, markers=marker, leaf_id=leaf)
        text = render_svg(drawing) if suffix == ".svg" else render_html(drawing)
        if out.exists() or out.is_symlink():  # appeared while drawing
            raise UsageError(f"{out} already exists; not overwriting it (choose another --out)")
        atomic_write(out, text.encode("utf-8"), mode=0o644)
        nodes = drawing.nodes
        console.print(
            f"wrote {out}: {len(drawing.columns)} file(s), {nodes} nodes, {len(text.encode()):,} bytes", markup=False
        )
