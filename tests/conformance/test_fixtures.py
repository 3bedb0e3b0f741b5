"""Every shared fixture against the output Pi 0.73.1 produced for it (stored beside it).

These run without node: the expected files were produced by Pi itself. When node is
present, ``test_fixtures_against_live_pi`` re-runs Pi on them in the same test run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kurahi.context import build_context
from kurahi.context.files import project_file
from kurahi.errors import NotASessionError
from kurahi.jsvalues import MISSING
from kurahi.store import Transcript
from peer import FIXTURES, PiPeer

FIXTURE_FILES = sorted(FIXTURES.glob("*.jsonl"))
NOT_SESSIONS = {"empty.jsonl", "not_session.jsonl"}  # Pi overwrites these; Kurahi refuses them


def _expected(path: Path) -> dict[str, Any]:
    return json.loads(path.with_suffix(".expected.json").read_text())  # type: ignore[no-any-return]


def _via_transcript(path: Path) -> dict[str, Any]:
    with Transcript.open(path) as t:
        leaf = t.leaf_id
        if leaf is None:
            return build_context([], None).to_dict()
        return build_context(t.path_entries(t.path_indices(len(t) - 1)), leaf).to_dict()


def _check(name: str, got: dict[str, Any], want: dict[str, Any]) -> None:
    for key in ("messages", "thinkingLevel", "model"):
        assert got.get(key) == want.get(key), f"{name}: {key}\n expected {want.get(key)!r}\n actual   {got.get(key)!r}"
    if name != "legacy_v1.jsonl":  # Pi draws random ids when it migrates v1
        assert got["leafId"] == want["leafId"], f"{name}: leafId expected {want['leafId']!r}, got {got['leafId']!r}"


def test_there_are_fixtures() -> None:
    assert len(FIXTURE_FILES) >= 20, f"fixtures not found under {FIXTURES}"


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_fixture_projection_matches_pi(path: Path) -> None:
    want = _expected(path)
    if path.name in NOT_SESSIONS:
        assert want["entryCount"] == 0 and want["rewritten"] is True
        with pytest.raises(NotASessionError):
            project_file(path)
        with pytest.raises(NotASessionError):
            Transcript.open(path)
        return
    _check(path.name, project_file(path).context.to_dict(), want)
    _check(path.name, _via_transcript(path), want)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_fixture_tree_and_labels_match_pi(path: Path) -> None:
    want = _expected(path)
    if path.name in NOT_SESSIONS:
        return
    with Transcript.open(path) as t:
        assert len(t) == want["entryCount"]
        if path.name != "legacy_v1.jsonl":
            branch = [e.id if e.id is not MISSING else None for e in t.path()] if t.leaf_id else []
            if t.leaf_id is MISSING:
                branch = []  # Pi's getBranch() of an undefined leaf is empty
            assert branch == want["branch"]
            labels = {k: v for k, v in t.labels().items() if isinstance(k, str)}
            assert labels == want["labels"]

            def tree(nodes: list[Any]) -> list[dict[str, Any]]:
                out = []
                for n in nodes:
                    d: dict[str, Any] = {
                        "id": n.entry.id if n.entry.id is not MISSING else None,
                        "type": n.entry.type,
                    }
                    if n.label is not None:
                        d["label"] = n.label
                    d["children"] = tree(n.children)
                    out.append(d)
                return out

            assert tree(t.tree()) == want["tree"]


def test_reading_never_changes_a_fixture(tmp_path: Path) -> None:
    for path in FIXTURE_FILES:
        copy = tmp_path / path.name
        copy.write_bytes(path.read_bytes())
        before = (copy.read_bytes(), copy.stat().st_mtime_ns)
        try:
            project_file(copy)
            Transcript.open(copy).close()
        except NotASessionError:
            pass
        assert (copy.read_bytes(), copy.stat().st_mtime_ns) == before, path.name


@pytest.mark.pi
def test_fixtures_against_live_pi(pi: PiPeer) -> None:
    files = [p for p in FIXTURE_FILES if p.name not in NOT_SESSIONS]
    for path, live in zip(files, pi.contexts(files), strict=True):
        _check(path.name, project_file(path).context.to_dict(), live)
