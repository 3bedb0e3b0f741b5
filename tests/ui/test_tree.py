"""The tree index on generated sessions of every shape: every entry is a row exactly once, folding
only hides entries, the highlighted context is what the projection sends."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kurahi.context.files import project_file
from kurahi.pi.transcript import Transcript
from kurahi.testing.sessions import generate_lines
from kurahi.ui.tree import RUN_MIN, TreeIndex


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    entries=st.integers(0, 400),
    branch=st.sampled_from([0.0, 0.05, 0.3]),
    compact_every=st.sampled_from([0, 40, 150]),
    seed=st.integers(0, 10_000),
    new_kinds=st.booleans(),
)
def test_rows_cover_every_entry_once_and_the_context_matches_the_projection(
    tmp_path_factory, entries: int, branch: float, compact_every: int, seed: int, new_kinds: bool
) -> None:  # type: ignore[no-untyped-def]
    lines = generate_lines(entries=entries, branch=branch, compact_every=compact_every, seed=seed, new_kinds=new_kinds)
    path = tmp_path_factory.mktemp("tree") / "s.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    with Transcript.open(path) as t:
        index = TreeIndex(t, context_window=128_000)
        n = len(t)
        assert sorted(index.order) == list(range(n))
        every = index.page(None, 0, n + 1)
        assert every["total"] == n and [r["pos"] for r in every["rows"]] == list(range(n))
        folded = index.page(frozenset(), 0, n + 1)
        shown = 0
        for row in folded["rows"]:
            if row.get("run"):
                assert row["count"] >= RUN_MIN
                shown += row["count"]
            else:
                shown += 1
        assert shown == n
        # Expanding every run one by one gives the same rows as expanding all.
        runs = frozenset(r["pos"] for r in folded["rows"] if r.get("run"))
        assert index.rows(runs) == index.rows(None)
        projected = project_file(path).context
        assert index.context["messages"] == len(projected.messages)
        assert index.context["leafId"] == projected.leaf_id
        if n:
            leaf_rows = [r for r in every["rows"] if "leaf" in r["flags"]]
            assert [r["id"] for r in leaf_rows] == [projected.leaf_id]
            for r in every["rows"]:
                assert ("path" in r["flags"]) != ("side" in r["flags"])
                if "context" in r["flags"]:
                    assert "path" in r["flags"]
