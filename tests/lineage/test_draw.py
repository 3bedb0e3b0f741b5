"""`kurahi lineage draw`: the picture of a lineage, bounded whatever the file size."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kurahi.cli.common import EXIT
from kurahi.cli.lineage.draw import draw_cmd
from kurahi.errors import EntryNotFoundError
from kurahi.lineage.draw import Node, Run, draw_lineage
from kurahi.lineage.draw_render import render_html, render_svg
from kurahi.lineage.path import canonical_path
from kurahi.pi.transcript import Transcript
from kurahi.testing import build_session

SVG = "{http://www.w3.org/2000/svg}"
MARKERS = ["PIN-ONE", 'pin <two> & "three"', "PIN-THREE"]

runner = CliRunner()


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg.encode("utf-8"))


def texts(root: ET.Element, cls: str | None = None) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text") if cls is None or t.get("class") == cls]


def strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def outside_legend(root: ET.Element, xpath: str) -> list[ET.Element]:
    legend = {id(e) for g in root.findall(f"./{SVG}g[@class='legend']") for e in g.iter()}
    return [e for e in root.findall(xpath) if id(e) not in legend]


def element_count(root: ET.Element) -> int:
    return sum(1 for _ in root.iter())


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("draw") / "small.jsonl"
    build_session(path, entries=500, seed=1, compact_every=100, branch_chance=0.03, markers=MARKERS)
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("draw") / "big.jsonl"
    build_session(path, entries=20_000, seed=2, markers=["BIG-MARKER"])
    return path


def stitched(tmp_path: Path) -> tuple[Path, str, str]:
    """A stitched file written by hand: A's path, then B with its root re-parented to A's leaf."""
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    build_session(a, entries=300, seed=11)
    build_session(b, entries=200, seed=12, markers=["AFTER-RESET"])
    with Transcript.open(a) as ta:
        cp = canonical_path(ta)
        a_lines = [e.raw for e in cp.entries]
        a_leaf = cp.leaf_id
        a_id = ta.session_id
    assert a_leaf is not None
    b_lines = b.read_bytes().splitlines()[1:]
    b_root = json.loads(b_lines[0])
    edge = {"child": b_root["id"], "parent": a_leaf}
    header = {
        "type": "session",
        "version": 3,
        "id": "stitched-0001",
        "timestamp": "2026-11-30T10:00:00.000Z",
        "cwd": "/home/resident",
        "parentSession": str(a),
        "lineage": {
            "sources": [
                {"path": str(a), "sessionId": a_id, "entries": len(a_lines)},
                {"path": str(b), "sessionId": "b", "entries": len(b_lines)},
            ],
            "edges": [edge],
        },
    }
    b_root["parentId"] = a_leaf
    lines = [json.dumps(header).encode(), *a_lines, json.dumps(b_root).encode(), *b_lines[1:]]
    c.write_bytes(b"\n".join(lines) + b"\n")
    return c, edge["child"], a_leaf


def test_small_file_markers_compactions_and_side_branches(small: Path) -> None:
    drawing = draw_lineage([small], markers=[*MARKERS, "NOT-ANYWHERE"])
    root = parse(render_svg(drawing))
    assert root.tag == f"{SVG}svg"
    with Transcript.open(small) as t:
        cp = canonical_path(t)
        # independent expectation: decode each path entry and look for the marker in its JSON
        on_path = {m: [e for e in cp.entries if any(m in s for s in strings(e.data))] for m in MARKERS}
    col = drawing.columns[0]
    assert col.path_length == len(cp.entries) and col.leaf_id == cp.leaf_id
    assert all(on_path.values()), "fixture precondition: every marker lands on the canonical path"
    assert col.marker_hits == {**{m: len(v) for m, v in on_path.items()}, "NOT-ANYWHERE": 0}
    pins = " ".join(texts(root, "p"))
    for marker in MARKERS:
        assert marker in pins  # escaped in the file, intact once parsed
    assert "missing: NOT-ANYWHERE" in pins
    pinned = {n.entry_id for n in col.items if isinstance(n, Node) and n.markers}
    assert pinned == {str(e.id) for v in on_path.values() for e in v}

    assert len(cp.compactions) >= 2
    compaction_texts = " ".join(texts(root, "c"))
    for cid in cp.compactions:
        assert f"compaction {cid}" in compaction_texts
    assert "summary " in compaction_texts and " chars" in compaction_texts
    assert len(outside_legend(root, f".//{SVG}polygon[@class='nc']")) == len(cp.compactions)

    assert cp.side_branches
    grey = texts(root, "g")
    for sb in cp.side_branches:
        noun = "entry" if sb.size == 1 else "entries"
        assert f"abandoned: {sb.size:,} {noun} (from line {sb.first_line:,})" in grey
    assert len(outside_legend(root, f".//{SVG}line[@class='stub']")) >= len(cp.side_branches)

    # every path entry is either a node or inside exactly one run, in order
    covered = 0
    for item in col.items:
        start = item.position if isinstance(item, Node) else item.start
        assert start == covered
        covered += 1 if isinstance(item, Node) else item.count
    assert covered == len(cp.entries)
    runs = [i for i in col.items if isinstance(i, Run)]
    assert runs and all(r.label in " ".join(t.text or "" for t in root.iter(f"{SVG}title")) for r in runs)
    # every node has a hover title
    assert len(root.findall(f".//{SVG}g/{SVG}title")) >= drawing.nodes


def test_twenty_thousand_entries_stay_bounded(big: Path) -> None:
    drawing = draw_lineage([big], markers=["willow"])
    svg = render_svg(drawing)
    root = parse(svg)
    assert element_count(root) < 5000
    assert len(svg.encode()) < 500_000
    col = drawing.columns[0]
    assert col.total_entries >= 20_000
    # a common word hits thousands of entries: a dozen pins, the rest counted in the runs
    assert col.marker_hits["willow"] > 100
    nodes = [n for n in col.items if isinstance(n, Node)]
    assert sum(bool(n.markers and not n.flags) for n in nodes) <= 12  # pinned for the marker alone
    pinned = sum("willow" in n.markers for n in nodes)
    folded = sum(r.marker_hits for r in col.items if isinstance(r, Run))
    assert pinned + folded == col.marker_hits["willow"]
    assert any(t.startswith("… ") and " entries: " in t for t in texts(root, "m"))


def test_stitch_edge_from_header_is_highlighted(tmp_path: Path) -> None:
    c, child, parent = stitched(tmp_path)
    drawing = draw_lineage([c], markers=["AFTER-RESET"])
    col = drawing.columns[0]
    assert [(e.child, e.parent, e.on_path) for e in col.stitch_edges] == [(child, parent, True)]
    nodes = {n.entry_id: n for n in col.items if isinstance(n, Node)}
    assert nodes[child].stitched_from_parent and "stitch" in nodes[child].flags
    assert "stitch" in nodes[parent].flags
    root = parse(render_svg(drawing))
    assert len(outside_legend(root, f".//{SVG}line[@class='stitch']")) == 1
    assert any(child in t and "stitch" in t for t in texts(root, "s"))
    html = render_html(drawing)
    assert f"{child} re-parented to {parent} (on the canonical path)" in html


def test_stitch_header_is_optional_and_lenient(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": "s",
        "lineage": {"edges": [{"child": 1}, "x", {"child": "zz", "parent": "yy"}]},
    }
    entry = {"type": "message", "id": "e1", "parentId": None, "message": {"role": "user", "content": "hi\x01 <b>"}}
    path.write_text(json.dumps(header) + "\n" + json.dumps(entry) + "\n")
    drawing = draw_lineage([path])
    assert [(e.child, e.on_path) for e in drawing.columns[0].stitch_edges] == [("zz", False)]
    root = parse(render_svg(drawing))  # the control character is replaced, not emitted
    assert "hi\ufffd <b>" in " ".join(t.text or "" for t in root.iter(f"{SVG}title"))


def test_two_files_side_by_side_linked(tmp_path: Path, small: Path) -> None:
    later = tmp_path / "later.jsonl"
    build_session(later, entries=300, seed=3)
    drawing = draw_lineage([small, later], markers=["PIN-ONE"])
    assert [c.file for c in drawing.columns] == [str(small), str(later)]
    root = parse(render_svg(drawing))
    links = root.findall(f".//{SVG}path[@class='stitch link']")
    assert len(links) == 1
    headers = texts(root, "h")
    assert headers == ["small.jsonl", "later.jsonl"]
    assert "reset → next file" in texts(root, "s")
    assert drawing.columns[1].marker_hits == {"PIN-ONE": 0}


def test_leaf_option_and_unknown_leaf(small: Path) -> None:
    with Transcript.open(small) as t:
        cp = canonical_path(t)
        target = cp.side_branches[0].first
    drawing = draw_lineage([small], leaf_id=target)
    assert drawing.columns[0].leaf_id == target
    with pytest.raises(EntryNotFoundError):
        draw_lineage([small], leaf_id="no-such-entry")


def test_empty_session(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(json.dumps({"type": "session", "version": 3, "id": "e"}) + "\n")
    drawing = draw_lineage([path], markers=["x"])
    assert drawing.columns[0].items == [] and drawing.nodes == 0
    parse(render_svg(drawing))
    assert "empty" in render_html(drawing)


def test_html_is_self_contained(small: Path) -> None:
    drawing = draw_lineage([small], markers=MARKERS)
    html = render_html(drawing)
    assert html.startswith("<!DOCTYPE html>")
    assert "<svg" in html and "</svg>" in html
    assert "http" not in html and "<script" not in html and "@import" not in html and "url(" not in html
    assert "<table>" in html and "small.jsonl" in html
    assert "pin &lt;two&gt; &amp; &quot;three&quot;" in html
    svg_part = html[html.index("<svg") : html.index("</svg>") + len("</svg>")]
    ET.fromstring(svg_part)  # well-formed inline SVG


# -- CLI ---------------------------------------------------------------------------------

app = typer.Typer()
app.command("draw")(draw_cmd)


@app.callback()
def _main() -> None:
    """Test harness."""


def test_cli_writes_svg_and_html(tmp_path: Path, small: Path) -> None:
    svg_out, html_out = tmp_path / "lineage.svg", tmp_path / "lineage.html"
    result = runner.invoke(app, ["draw", str(small), "--out", str(svg_out), "--marker", "PIN-ONE"])
    assert result.exit_code == 0, result.output
    assert "PIN-ONE" in "".join(parse(svg_out.read_text()).itertext())
    assert svg_out.stat().st_mode & 0o777 == 0o644
    result = runner.invoke(app, ["draw", str(small), str(small), "--out", str(html_out)])
    assert result.exit_code == 0, result.output
    assert html_out.read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lineage.html", "lineage.svg"]  # no temp files left


def test_cli_refuses_existing_output(tmp_path: Path, small: Path) -> None:
    out = tmp_path / "lineage.svg"
    out.write_text("keep me")
    result = runner.invoke(app, ["draw", str(small), "--out", str(out)])
    assert result.exit_code == EXIT.USAGE
    assert "already exists" in result.output
    assert out.read_text() == "keep me"


@pytest.mark.parametrize("name", ["lineage.png", "lineage", "lineage.svg.txt"])
def test_cli_refuses_bad_suffix(tmp_path: Path, small: Path, name: str) -> None:
    out = tmp_path / name
    result = runner.invoke(app, ["draw", str(small), "--out", str(out)])
    assert result.exit_code == EXIT.USAGE
    assert ".svg or .html" in result.output
    assert not out.exists()


def test_cli_missing_input_and_unknown_leaf(tmp_path: Path, small: Path) -> None:
    out = tmp_path / "x.svg"
    result = runner.invoke(app, ["draw", str(tmp_path / "nope.jsonl"), "--out", str(out)])
    assert result.exit_code == EXIT.NOT_FOUND
    result = runner.invoke(app, ["draw", str(small), "--out", str(out), "--leaf", "no-such-entry"])
    assert result.exit_code == EXIT.NOT_FOUND  # an unknown leaf is "not found", as everywhere
    assert "no-such-entry" in result.output
    assert not out.exists()
