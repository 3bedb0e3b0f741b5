"""`kurahi demo` runs end to end and shows what it claims."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.lineage.check import check


def test_demo_runs_and_keeps_its_files(tmp_path: Path) -> None:
    keep = tmp_path / "demo"
    res = CliRunner().invoke(app, ["demo", "--entries", "300", "--keep", str(keep)], terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "acknowledged entry" in res.output and "True" in res.output
    assert "moved line" in res.output
    assert "HARBOUR-LANTERN-42 missing" in res.output  # B alone
    stitched = keep / "stitched.jsonl"
    rep = check(stitched, markers=["HARBOUR-LANTERN-42", "ORCHARD-TIDE-7"])
    assert rep.ok
    header = json.loads(stitched.read_text().split("\n", 1)[0])
    assert [Path(s["path"]).name for s in header["lineage"]["sources"]] == ["demo-session.jsonl", "after-reset.jsonl"]
    assert list(keep.glob("demo-session.jsonl.torn-*"))  # the torn line was moved aside, not deleted
