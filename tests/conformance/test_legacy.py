"""Legacy v1 / v2 files, every header version with every entry kind, against both Pis.

:mod:`legacy_files` writes one file per (version, kind) pair; Pi 0.73.1 and Pi 1.6.0 each
open every file (``pi_peer.mjs report --seed-ids``: v1 migration's random ids become
``00000001``, ``00000002``, ... in entry order) and Kurahi must make of it what they make:
the context (both of Kurahi's readers), the model messages, the leaf, the branch, the tree
and the labels. Where the Pis disagree Kurahi follows 1.6.0. Ids are compared too: Pi's
k-th seeded id stands for Kurahi's k-th migrated id (Kurahi derives them from the session
id and line, so that two reads agree), so every parent link, leaf and label is checked.

Pi rewrites each migrated file (``rewritten``); Kurahi migrates in memory and must leave
the bytes and the modification time alone.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from legacy_files import KINDS, VERSIONS, LegacyFile, write_legacy_files
from test_differential import same

from kurahi.context import build_context
from kurahi.context.files import project_file
from kurahi.context.llm import convert_to_llm
from kurahi.errors import KurahiError
from kurahi.js.values import MISSING
from kurahi.pi import Transcript
from support.peer import PI_VERSIONS, PiPeer, missing

pytestmark = pytest.mark.pi

CASES = [(version, kind) for version in VERSIONS for kind in [*KINDS, "mixed"]]

_SEEDED = re.compile(r"[0-9a-f]{8}")


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[LegacyFile, dict[str, Any]]]:
    """Every generated file with each Pi's report of it."""
    for version in PI_VERSIONS:
        why = missing(version)
        if why:
            pytest.skip(why)
    files = write_legacy_files(tmp_path_factory.mktemp("legacy"))
    paths = [f.path for f in files]
    reports = {v: PiPeer(v).reports(paths) for v in PI_VERSIONS}
    out = {}
    for i, f in enumerate(files):
        assert all(reports[v][i]["file"] == str(f.path) for v in PI_VERSIONS), "Pi's reports lost a file"
        out[(f.version, f.kind)] = (f, {v: reports[v][i] for v in PI_VERSIONS})
    assert len(out) == len(CASES)
    return out


_COMPARED = ("leafId", "entryCount", "branch", "labels", "tree", "messages", "thinkingLevel", "model", "llmMessages")


def _expected(reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What Kurahi must equal: both Pis where they agree, Pi 1.6.0 where they differ."""
    return reports["1.6.0"]


def _tree(nodes: list[Any]) -> list[dict[str, Any]]:
    out = []
    for n in nodes:
        d: dict[str, Any] = {"id": n.entry.id if n.entry.id is not MISSING else None}
        if n.entry.type is not MISSING:
            d["type"] = n.entry.type
        if n.label is not None:
            d["label"] = n.label
        d["children"] = _tree(n.children)
        out.append(d)
    return out


def kurahi_report(path: Path) -> dict[str, Any]:
    """What Kurahi makes of ``path``, in the shape of ``pi_peer.mjs report``."""
    with Transcript.open(path) as t:
        leaf = t.leaf_id
        ids = [t.entry_at(i).id for i in range(len(t))]
        present = {i for i in ids if isinstance(i, str)}
        forward = (
            build_context(t.path_entries(t.path_indices(len(t) - 1)), leaf).to_dict()
            if len(t)
            else build_context([], None).to_dict()
        )
        report = {
            "ids": ids,
            "leafId": None if leaf is MISSING else leaf,
            "entryCount": len(t),
            "branch": [e.id if e.id is not MISSING else None for e in t.path()] if leaf not in (None, MISSING) else [],
            # Pi's report lists the labels of entries that exist.
            "labels": {k: v for k, v in t.labels().items() if isinstance(k, str) and k in present},
            "tree": _tree(t.tree()),
            "forward": forward,
            "warnings": [w.line for w in t.warnings],
        }
    backward = project_file(path).context.to_dict()
    report.update({k: backward[k] for k in ("messages", "thinkingLevel", "model")})
    report["llmMessages"] = convert_to_llm(backward["messages"])
    return report


def _rename(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, list):
        return [_rename(v, names) for v in value]
    if isinstance(value, dict):
        return {names.get(k, k): _rename(v, names) for k, v in value.items()}
    return value


def _tree_ids(nodes: list[dict[str, Any]]) -> list[Any]:
    out, stack = [], list(nodes)
    while stack:
        n = stack.pop()
        out.append(n["id"])
        stack.extend(n["children"])
    return out


def _seeded_names(want: dict[str, Any], ours: list[Any]) -> dict[str, str]:
    """Pi's seeded v1 ids -> Kurahi's ids for the same entries (empty when Pi did not migrate v1)."""
    seen = [i for i in _tree_ids(want["tree"]) if i is not None]
    seeded = [f"{k + 1:08x}" for k in range(want["entryCount"])]
    if not seen or not set(seen) <= set(seeded):
        return {}
    return {s: o for s, o in zip(seeded, ours, strict=False) if isinstance(o, str)}


@pytest.mark.parametrize(("version", "kind"), CASES, ids=[f"{v}--{k}" for v, k in CASES])
def test_legacy_file_reads_as_pi_reads_it(
    legacy: dict[tuple[str, str], tuple[LegacyFile, dict[str, Any]]], version: str, kind: str
) -> None:
    f, reports = legacy[(version, kind)]
    before = (f.path.read_bytes(), f.path.stat().st_mtime_ns)
    want = _expected(reports)
    if "error" in want:
        # Pi cannot open the file (a v1 entry that is a JSON number or string: TypeError as it
        # sets the id). Kurahi reads it, warning about the line that is not an object, or
        # refuses it with a clear error; never a traceback.
        try:
            ours = kurahi_report(f.path)
        except KurahiError:
            pass
        else:
            assert ours["warnings"], f"{f.path.name}: Pi fails ({want['error']}); Kurahi read it without a warning"
        assert (f.path.read_bytes(), f.path.stat().st_mtime_ns) == before
        return
    ours = kurahi_report(f.path)
    assert (f.path.read_bytes(), f.path.stat().st_mtime_ns) == before, f"{f.path.name}: reading changed the file"
    names = _seeded_names(want, ours["ids"])
    if names:
        assert len(set(names.values())) == len(names), f"{f.path.name}: Kurahi's migrated ids collide"
    theirs = {
        k: (_rename(want[k], names) if k in ("leafId", "branch", "labels", "tree") else want[k]) for k in _COMPARED
    }
    got = {**ours, **{f"forward {k}": v for k, v in ours["forward"].items()}}
    expect = {**theirs, **{f"forward {k}": theirs.get(k, want.get(k)) for k in ("messages", "thinkingLevel", "model")}}
    expect["forward leafId"] = theirs["leafId"]
    keys = [*_COMPARED, "forward messages", "forward thinkingLevel", "forward model", "forward leafId"]
    diffs = [k for k in keys if not same(got[k], expect[k])]
    assert not diffs, f"{f.path.name}: differs from Pi {want['pkgVersion']} in " + "; ".join(
        f"{k}\n    Pi     {expect[k]!r}\n    Kurahi {got[k]!r}" for k in diffs
    )


def test_the_pis_agree_where_kurahi_keeps_to_both(
    legacy: dict[tuple[str, str], tuple[LegacyFile, dict[str, Any]]],
) -> None:
    """Where the Pis differ on these files it is only in 1.6.0's handling of falsy lines."""
    differ = sorted(
        {
            kind
            for (_, kind), (_, reports) in legacy.items()
            if not same(
                {k: reports["0.73.1"].get(k) for k in _COMPARED if k != "llmMessages"},
                {k: reports["1.6.0"].get(k) for k in _COMPARED if k != "llmMessages"},
            )
        }
    )
    assert differ == ["falsy-lines"]


def test_migration_draws_every_branch(legacy: dict[tuple[str, str], tuple[LegacyFile, dict[str, Any]]]) -> None:
    """The generated set is not vacuous: Pi migrated v1 files, renamed hook messages, and kept some compactions."""
    migrated_v1 = [
        key for key, (_, r) in legacy.items() if "error" not in r["1.6.0"] and _seeded_names(r["1.6.0"], ["x"])
    ]
    renamed = [
        key
        for key, (_, r) in legacy.items()
        if key[1] == "hookMessage" and "error" not in r["1.6.0"] and r["1.6.0"]["messages"][-1]["role"] == "custom"
    ]
    summaries = [
        key
        for key, (_, r) in legacy.items()
        if "error" not in r["1.6.0"]
        and any(isinstance(m, dict) and m.get("role") == "compactionSummary" for m in r["1.6.0"]["messages"])
    ]
    rewritten = [key for key, (_, r) in legacy.items() if r["1.6.0"].get("rewritten")]
    assert len(migrated_v1) >= 10 * len(KINDS) // 2, migrated_v1[:5]
    assert {v for v, _ in renamed} >= {"missing", "1", "2", "str-2", "str-hex-2", "empty-array", "array-2"}, renamed
    assert {v for v, _ in renamed}.isdisjoint({"3-v1-shaped", "str-nan", "object", "1e400"})
    assert len(summaries) >= len(VERSIONS) and rewritten
    assert all(_SEEDED.fullmatch(i) for key in migrated_v1 for i in _tree_ids(legacy[key][1]["1.6.0"]["tree"]))


def test_the_status_page_states_this_matrix() -> None:
    readme = (Path(__file__).resolve().parents[2] / "docs" / "status.md").read_text()
    m = re.search(r"over (\d+) header versions × (\d+) entry kinds", readme)
    assert m is not None and (int(m[1]), int(m[2])) == (len(VERSIONS), len(KINDS))
