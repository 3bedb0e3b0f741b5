"""Every hand-made fixture in ``tests/fixtures/pi`` against what each Pi made of it.

Each ``NAME.jsonl`` there has ``NAME.pi-0.73.1.json`` and ``NAME.pi-1.6.0.json`` beside it:
the two Pis' reports, written by ``tests/fixtures/pi/regenerate.py``. Kurahi must equal Pi
1.6.0 on every fixture and Pi 0.73.1 on every fixture where the two Pis agree; the README in
that folder names the fixtures where they do not, and why. These run without node, from the
stored reports; ``test_fixtures_against_live_pi`` runs each Pi on the same files in the same
test run.

Kurahi's deliberate differences from Pi: it refuses an empty file and a file that is not a
session (Pi 1.6.0 writes a header into the first and throws on the second) with
``NotASessionError``; it never rewrites a file (Pi rewrites migrated files and adds a missing
final newline); a version 1 file is migrated in memory, with Kurahi's own ids for the entries
that had none, so on those files ids are compared by position.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kurahi.context import build_context
from kurahi.context.files import project_file
from kurahi.errors import NotASessionError
from kurahi.js.values import MISSING
from kurahi.pi import Transcript
from support.peer import CURRENT, FIXTURES, PI_VERSIONS, PiPeer, PiVersion, expected, fixture_files, pis_agree, stable

FIXTURE_FILES = fixture_files()
README = FIXTURES / "README.md"
MIN_FIXTURES = 45

CASES = [(path, CURRENT) for path in FIXTURE_FILES] + [
    (path, version) for version in PI_VERSIONS if version != CURRENT for path in FIXTURE_FILES if pis_agree(path)
]
"""(fixture, Pi version) pairs Kurahi must equal: 1.6.0 on all, 0.73.1 where both Pis agree."""


def _case_id(case: tuple[Path, PiVersion]) -> str:
    return f"{case[0].stem}@pi-{case[1]}"


def refused(path: Path) -> bool:
    """Files Kurahi refuses: empty ones, and those Pi 1.6.0 will not open as a session."""
    return path.stat().st_size == 0 or "error" in expected(path, CURRENT)


def is_v1(path: Path) -> bool:
    """Whether the header (the first line that parses) says version 1 (or says no version)."""
    for line in path.read_bytes().split(b"\n"):
        try:
            header = json.loads(line)
        except ValueError:
            continue
        return isinstance(header, dict) and header.get("version", 1) == 1
    return False


def _via_transcript(path: Path) -> dict[str, Any]:
    with Transcript.open(path) as t:
        leaf = t.leaf_id
        if leaf is None:
            return build_context([], None).to_dict()
        return build_context(t.path_entries(t.path_indices(len(t) - 1)), leaf).to_dict()


def _check_context(name: str, got: dict[str, Any], want: dict[str, Any], *, v1: bool) -> None:
    for key in ("messages", "thinkingLevel", "model"):
        assert got.get(key) == want.get(key), f"{name}: {key}\n expected {want.get(key)!r}\n actual   {got.get(key)!r}"
    if not v1:  # a v1 file's ids are drawn anew by each reader
        assert got["leafId"] == want["leafId"], f"{name}: leafId expected {want['leafId']!r}, got {got['leafId']!r}"


def _tree(nodes: list[Any]) -> list[dict[str, Any]]:
    out = []
    for n in nodes:
        d: dict[str, Any] = {"id": n.entry.id if n.entry.id is not MISSING else None, "type": n.entry.type}
        if n.label is not None:
            d["label"] = n.label
        d["children"] = _tree(n.children)
        out.append(d)
    return out


def _shape(tree: list[dict[str, Any]]) -> list[Any]:
    """A tree without its ids: what a v1 file's tree must look like whoever drew the ids."""
    return [[n["type"], n.get("label"), _shape(n["children"])] for n in tree]


def check_against(path: Path, want: dict[str, Any]) -> None:
    """Assert that Kurahi reads ``path`` as the Pi report ``want`` says (see the module docstring)."""
    if refused(path):
        with pytest.raises(NotASessionError):
            project_file(path)
        with pytest.raises(NotASessionError):
            Transcript.open(path)
        return
    assert "error" not in want, f"{path.name}: this Pi could not open it ({want['error']}) but Pi {CURRENT} could"
    v1 = is_v1(path)
    _check_context(path.name, project_file(path).context.to_dict(), want, v1=v1)
    _check_context(path.name, _via_transcript(path), want, v1=v1)
    with Transcript.open(path) as t:
        assert len(t) == want["entryCount"], path.name
        branch = [e.id if e.id is not MISSING else None for e in t.path()] if t.leaf_id else []
        # Pi's report lists the labels of the entries in the file (a label may name a missing id).
        ids = t.entry_ids()
        labels = {k: v for k, v in t.labels().items() if isinstance(k, str) and k in ids}
        tree = _tree(t.tree())
    if v1:
        assert len(branch) == len(want["branch"]), path.name
        assert sorted(labels.values()) == sorted(want["labels"].values()), path.name
        assert _shape(tree) == _shape(want["tree"]), path.name
    else:
        assert branch == want["branch"], path.name  # Pi's getBranch() of an undefined leaf is empty
        assert labels == want["labels"], path.name
        assert tree == want["tree"], path.name


def test_there_are_fixtures() -> None:
    assert len(FIXTURE_FILES) >= MIN_FIXTURES, (
        f"{len(FIXTURE_FILES)} fixtures under {FIXTURES}, expected >= {MIN_FIXTURES}"
    )


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_fixture_matches_pi(case: tuple[Path, PiVersion]) -> None:
    path, version = case
    check_against(path, expected(path, version))


def test_refused_fixtures_are_the_empty_and_not_a_session_ones() -> None:
    # Pi 1.6.0 throws only on a non-empty file whose first parsed line is not a session header.
    assert sorted(p.name for p in FIXTURE_FILES if refused(p)) == [
        "bom_header.jsonl",
        "empty.jsonl",
        "not_a_session.jsonl",
    ]


def _readme_section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert m, f"{README} has no '## {title}' section"
    return m.group(1)


def test_readme_describes_every_fixture() -> None:
    described = set(re.findall(r"^- `([\w.-]+\.jsonl)`", README.read_text(encoding="utf-8"), re.M))
    names = {p.name for p in FIXTURE_FILES}
    assert names - described == set(), f"fixtures {README} does not describe"
    assert described - names == set(), f"{README} describes fixtures that do not exist"


def test_readme_names_exactly_the_fixtures_where_the_pis_differ() -> None:
    named = set(re.findall(r"`([\w.-]+\.jsonl)`", _readme_section("Where the two Pis differ")))
    differ = {p.name for p in FIXTURE_FILES if not pis_agree(p)}
    assert differ - named == set(), "the Pis differ on these, and the README does not say so"
    assert named - differ == set(), "the README says the Pis differ on these, and they agree"


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
def test_fixtures_against_live_pi(any_pi: PiPeer) -> None:
    """Each Pi, run now on every fixture: its report is the stored one, and Kurahi equals it."""
    live = any_pi.reports(FIXTURE_FILES, seed_ids=True)
    assert len(live) == len(FIXTURE_FILES) >= MIN_FIXTURES
    stale = [
        p.name
        for p, report in zip(FIXTURE_FILES, live, strict=True)
        if stable(report, p) != expected(p, any_pi.version)
    ]
    assert stale == [], f"Pi {any_pi.version} no longer makes the stored report: run tests/fixtures/pi/regenerate.py"
    checked = 0
    for path, report in zip(FIXTURE_FILES, live, strict=True):
        assert report["pkgVersion"] == any_pi.version, path.name
        if any_pi.version == CURRENT or pis_agree(path):
            check_against(path, report)
            checked += 1
    # Most fixtures use only the vocabulary both Pis share, so both Pis check most of them.
    assert checked > len(FIXTURE_FILES) // 2
