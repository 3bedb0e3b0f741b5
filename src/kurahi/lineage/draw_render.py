"""SVG and HTML rendering of a :class:`~kurahi.lineage.draw.Drawing` (no scripts, fonts or network).

Layout: one column per file, side by side; each column starts level with the previous
column's leaf (a staircase, so a reset chain reads left to right and top to bottom). Nodes
sit on a vertical spine; collapsed runs are dashed segments; abandoned side branches are
grey stubs to the right of their branch point; marker pins hang to the left.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from xml.sax.saxutils import escape

from kurahi.lineage.draw import Column, Drawing, Node, Run

__all__ = ["esc", "render_html", "render_svg"]

COL_W = 480
MARGIN = 20
LEGEND_H = 40
GAP = 44
"""From one column's leaf down to the next column's root."""
LINE_H = 13
RUN_H = 44
MIN_W = 780
"""Wide enough for the legend."""
CHARS = 64
STUBS = 3
"""Side branches drawn per branch point; the rest share one line."""

INK = "#1f2933"
NODE = "#1f5fa8"
RUN = "#8aa4c8"
COMPACTION = "#7b3fb5"
STITCH = "#e8590c"
PIN = "#c92a2a"
GREY = "#9aa5b1"

_INVALID_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def esc(text: object) -> str:
    """``text`` safe inside XML text and double-quoted attributes (invalid characters replaced)."""
    clean = _INVALID_XML.sub("\ufffd", str(text))
    return escape(clean, {'"': "&quot;"})


def _n(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def _cut(text: str, width: int = CHARS) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _text(x: float, y: float, text: str, *, cls: str = "", anchor: str = "") -> str:
    attrs = (f' class="{cls}"' if cls else "") + (f' text-anchor="{anchor}"' if anchor else "")
    return f'<text x="{x:.0f}" y="{y:.0f}"{attrs}>{esc(text)}</text>'


def _line(x1: float, y1: float, x2: float, y2: float, cls: str) -> str:
    return f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" class="{cls}"/>'


_STYLE = f"""
text {{ font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 11px; fill: {INK}; }}
.h {{ font-size: 13px; font-weight: bold; }} .m {{ fill: #52606d; }} .g {{ fill: {GREY}; }}
.p {{ fill: {PIN}; font-weight: bold; }} .s {{ fill: {STITCH}; font-weight: bold; }} .c {{ fill: {COMPACTION}; }}
.spine {{ stroke: {NODE}; stroke-width: 2; }} .run {{ stroke: {RUN}; stroke-width: 4; stroke-dasharray: 3 3; }}
.stub {{ stroke: {GREY}; stroke-width: 1.5; stroke-dasharray: 4 2; }} .pin {{ stroke: {PIN}; stroke-width: 1.5; }}
.stitch {{ stroke: {STITCH}; stroke-width: 5; fill: none; }} .link {{ stroke-dasharray: 8 4; }}
.n {{ fill: {NODE}; }} .nc {{ fill: {COMPACTION}; }} .ns {{ fill: {STITCH}; }} .np {{ fill: {PIN}; }}
"""


def _node_shape(node: Node, x: float, y: float) -> str:
    if "compaction" in node.flags:
        points = f"{x:.0f},{y - 7:.0f} {x + 7:.0f},{y:.0f} {x:.0f},{y + 7:.0f} {x - 7:.0f},{y:.0f}"
        return f'<polygon points="{points}" class="nc"/>'
    cls = "ns" if "stitch" in node.flags else "np" if {"edit", "removed", "replaced"} & set(node.flags) else "n"
    r = 7 if {"root", "leaf"} & set(node.flags) else 5
    ring = ' stroke="#52606d" stroke-width="2"' if "branch" in node.flags else ""
    return f'<circle cx="{x:.0f}" cy="{y:.0f}" r="{r}" class="{cls}"{ring}/>'


def _node(node: Node, x: float, y: float, out: list[str]) -> float:
    """Draw ``node`` with its spine at ``x``, top at ``y``; return its height."""
    cy = y + 10
    head = f"{node.kind} {node.entry_id} · line {node.line:,}"
    tags = [f for f in node.flags if f in ("root", "leaf", "stitch", "edit", "removed", "replaced")]
    if tags:
        head += " · " + ", ".join(tags)
    out.append(f"<g><title>{esc(node.title)}</title>{_node_shape(node, x, cy)}")
    cls = "s" if "stitch" in node.flags else "c" if "compaction" in node.flags else ""
    cls = "p" if {"edit", "removed", "replaced"} & set(node.flags) else cls
    out.append(_text(x + 14, cy + 4, _cut(head), cls=cls))
    lines = 1
    if node.detail:
        out.append(_text(x + 14, cy + 4 + LINE_H, _cut(node.detail), cls="c" if "compaction" in node.flags else "m"))
        lines += 1
    if node.markers:
        py = cy + 4 + LINE_H * lines
        out.append(_line(x - 6, cy, x - 16, py - 4, "pin"))
        out.append(f'<circle cx="{x - 16:.0f}" cy="{py - 4:.0f}" r="4" class="np"/>')
        out.append(_text(x + 14, py, _cut("pin: " + " | ".join(node.markers)), cls="p"))
        lines += 1
    for sb in node.side[:STUBS]:
        sy = cy + 4 + LINE_H * lines
        noun = "entry" if sb.size == 1 else "entries"
        out.append(_line(x, cy, x + 22, sy - 4, "stub"))
        out.append(
            _text(x + 26, sy, _cut(f"abandoned: {sb.size:,} {noun} (from line {sb.first_line:,})", CHARS - 2), cls="g")
        )
        lines += 1
    if len(node.side) > STUBS:
        rest = node.side[STUBS:]
        size = sum(b.size for b in rest)
        out.append(_text(x + 26, cy + 4 + LINE_H * lines, f"+ {len(rest):,} more branches, {size:,} entries", cls="g"))
        lines += 1
    out.append("</g>")
    return max(26.0, 10 + LINE_H * lines + 6)


def _run(run: Run, x: float, y: float, out: list[str]) -> float:
    label = run.label
    out.append(f"<g><title>{esc(f'path #{run.start:,}–#{run.start + run.count - 1:,}: {label}')}</title>")
    height = RUN_H + (LINE_H if run.folded else 0)
    out.append(_line(x, y, x, y + height, "run"))
    out.append(_text(x + 14, y + RUN_H / 2 + 4, _cut(run.head), cls="m"))
    if run.folded:
        out.append(_text(x + 14, y + RUN_H / 2 + 4 + LINE_H, _cut("  " + run.folded), cls="g"))
    out.append("</g>")
    return height


def _header(col: Column) -> list[tuple[str, str]]:
    """The lines above a column: file, session, counts, markers found and missing."""
    facts = f"{col.total_entries:,} entries · path {col.path_length:,} · {_n(col.compactions, 'compaction')}"
    facts += f" · {_n(col.side_branches, 'side branch', 'side branches')} ({col.abandoned:,} abandoned)"
    lines = [(PurePath(col.file).name, "h"), (f"session {col.session_id}", "m"), (facts, "m")]
    found = [f"{m} ×{n:,}" for m, n in col.marker_hits.items() if n]
    missing = [m for m, n in col.marker_hits.items() if not n]
    if found:
        lines.append(("markers: " + " · ".join(found), "p"))
    if missing:
        lines.append(("missing: " + " · ".join(missing), "p"))
    return lines


def _header_h(col: Column) -> float:
    return 14 * len(_header(col)) + 16


def _column(col: Column, x0: float, y0: float, out: list[str]) -> tuple[float, float, float, float]:
    """Draw ``col``; return (root y, leaf y, bottom y, spine x)."""
    sx = x0 + 34
    for k, (text, cls) in enumerate(_header(col)):
        line = _text(x0 + 4, y0 + 14 * (k + 1), _cut(text, CHARS + 4), cls=cls)
        out.append(f"<g><title>{esc(col.file)}</title>{line}</g>" if k == 0 else line)
    y = y0 + _header_h(col)
    root_y = leaf_y = y + 10
    if not col.items:
        out.append(_text(x0 + 4, y + 14, "(empty: no entries on the canonical path)", cls="g"))
        return root_y, leaf_y, y + 30, sx
    prev_node_y: float | None = None
    first = True
    for item in col.items:
        if isinstance(item, Node):
            node = item
            cy = y + 10
            if prev_node_y is not None:
                cls = "stitch" if node.stitched_from_parent else "spine"
                out.append(_line(sx, prev_node_y, sx, cy, cls))
                if node.stitched_from_parent:
                    out.append(_text(sx - 10, (prev_node_y + cy) / 2 + 4, "stitch", cls="s", anchor="end"))
            if first:
                root_y = cy
            leaf_y = cy
            y += _node(node, sx, y, out)
            prev_node_y = cy
        else:
            if prev_node_y is not None:
                out.append(_line(sx, prev_node_y, sx, y, "spine"))
            y += _run(item, sx, y, out)
            prev_node_y = y
        first = False
    return root_y, leaf_y, y, sx


def _legend(out: list[str]) -> None:
    y = MARGIN + 10
    x = MARGIN
    out.append('<g class="legend">')
    out.append(f'<circle cx="{x + 5}" cy="{y}" r="5" class="n"/>{_text(x + 14, y + 4, "entry")}')
    x += 70
    out.append(f'<polygon points="{x + 5},{y - 6} {x + 11},{y} {x + 5},{y + 6} {x - 1},{y}" class="nc"/>')
    out.append(_text(x + 16, y + 4, "compaction", cls="c"))
    x += 110
    out.append(_line(x, y, x + 24, y, "stitch") + _text(x + 30, y + 4, "stitch edge / reset link", cls="s"))
    x += 210
    out.append(f'<circle cx="{x + 4}" cy="{y}" r="4" class="np"/>{_text(x + 12, y + 4, "marker pin", cls="p")}')
    x += 100
    out.append(_line(x, y + 4, x + 22, y - 4, "stub") + _text(x + 28, y + 4, "abandoned branch", cls="g"))
    x += 150
    out.append(_line(x, y - 8, x, y + 8, "run") + _text(x + 10, y + 4, "collapsed run", cls="m") + "</g>")


def render_svg(drawing: Drawing, *, standalone: bool = True) -> str:
    """The drawing as SVG (``standalone``: an XML document with the SVG namespace)."""
    out: list[str] = []
    _legend(out)
    y0: float = MARGIN + LEGEND_H
    bottom = y0
    prev: tuple[float, float] | None = None
    for i, col in enumerate(drawing.columns):
        x0 = MARGIN + i * COL_W
        if prev is not None:
            y0 = prev[1] + GAP - _header_h(col) - 10
        root_y, leaf_y, end_y, sx = _column(col, x0, y0, out)
        bottom = max(bottom, end_y)
        if prev is not None and col.items:
            px, py = prev
            path = f"M{px:.0f},{py:.0f} C{px:.0f},{root_y:.0f} {px + 40:.0f},{root_y:.0f} {sx:.0f},{root_y:.0f}"
            out.append(f"<g><title>reset: {esc(drawing.columns[i - 1].file)} → {esc(col.file)}</title>")
            out.append(f'<path d="{path}" class="stitch link"/>')
            out.append(_text(sx - 14, root_y - 6, "reset → next file", cls="s", anchor="end") + "</g>")
        if col.items:
            prev = (sx, leaf_y)
    width = max(MIN_W, MARGIN * 2 + len(drawing.columns) * COL_W)
    height = bottom + MARGIN
    ns = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
    head = f'<svg{ns} width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img">'
    style = f"<style>{_STYLE}</style>"
    doc = head + "<title>Kurahi lineage</title>" + style + "\n" + "\n".join(out) + "\n</svg>\n"
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + doc) if standalone else doc


def _table(col: Column) -> str:
    rows = [
        ("file", col.file),
        ("session", col.session_id),
        ("entries", f"{col.total_entries:,}"),
        ("canonical path", f"{col.path_length:,} entries, leaf {col.leaf_id}"),
        ("leaf", "moved by a durable leaf marker" if col.pi_leaf_moved else "Pi's (last line)"),
        ("compactions on path", f"{col.compactions:,}"),
        ("branch points", f"{col.branch_points:,}"),
        ("side branches", f"{col.side_branches:,} ({col.abandoned:,} entries abandoned)"),
    ]
    for edge in col.stitch_edges:
        where = "on the canonical path" if edge.on_path else "not on the canonical path"
        rows.append(("stitch edge", f"{edge.child} re-parented to {edge.parent} ({where})"))
    for marker, n in col.marker_hits.items():
        rows.append((f"marker “{marker}”", f"{n:,} path entries" if n else "not on the path"))
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def render_html(drawing: Drawing) -> str:
    """A self-contained page: legend, one summary table per file, the SVG inline."""
    legend = (
        f'<ul class="legend"><li><b style="color:{NODE}">●</b> entry on the canonical path</li>'
        f'<li><b style="color:{COMPACTION}">◆</b> compaction (summary length)</li>'
        f'<li><b style="color:{STITCH}">━</b> stitch edge (re-parented root) and reset link between files</li>'
        f'<li><b style="color:{PIN}">●</b> marker pin; context edit, and an entry it removed or replaced</li>'
        f'<li><b style="color:{GREY}">╌</b> abandoned side branch (greyed, with its size)</li>'
        f'<li><b style="color:{RUN}">┆</b> collapsed run (count and kinds)</li></ul>'
        "<p>Hover a node for its id, parent, line, time and text.</p>"
    )
    tables = "".join(
        f"<section><h2>{i + 1}. {esc(PurePath(c.file).name)}</h2>{_table(c)}</section>"
        for i, c in enumerate(drawing.columns)
    )
    css = (
        "body{font-family:system-ui,sans-serif;margin:16px;color:#1f2933}"
        "table{border-collapse:collapse;margin:4px 0 12px}th,td{border:1px solid #cbd2d9;padding:2px 8px;"
        "text-align:left;font-size:13px}th{background:#f0f4f8}.legend{list-style:none;padding:0}"
        ".tables{display:flex;flex-wrap:wrap;gap:16px}h2{font-size:15px}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Kurahi lineage</title>'
        f"<style>{css}</style></head><body><h1>Lineage</h1>{legend}"
        f'<div class="tables">{tables}</div>\n{render_svg(drawing, standalone=False)}</body></html>\n'
    )
