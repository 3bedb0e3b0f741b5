"""The recipes in docs/continuity.md work on a real manifest, as written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kurahi.continuity import build_manifest
from support.gateways import make_gateway_home

DOC = Path(__file__).resolve().parents[2] / "docs" / "continuity.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def _recipe() -> str:
    (block,) = [b for b in BLOCKS if "rfc8785" in b]
    return block


def _manifest(tmp_path: Path) -> dict[str, object]:
    home = make_gateway_home(tmp_path)
    (home.agent("alice").workspace / "memory" / "notes.md").write_text("- é, 😀, \u2028 and a tab\t\n")
    m = build_manifest(home, "alice")
    (tmp_path / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    return m


def test_recipe_verifies_a_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    m = _manifest(tmp_path)
    monkeypatch.chdir(tmp_path)
    exec(_recipe(), {})
    assert capsys.readouterr().out == f"ok: root {m['root']} signed by {m['fingerprint']}\n"


def test_recipe_catches_an_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = _manifest(tmp_path)
    m["entries"][2]["value"]["size"] += 1  # type: ignore[index]
    (tmp_path / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AssertionError, match=r"entries\[2\]"):
        exec(_recipe(), {})


def test_first_example_runs(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    exec(BLOCKS[0], {"home": home})
