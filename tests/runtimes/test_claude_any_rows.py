"""Any rows at all, linked any way at all: the reader, the loader model and the loss finder answer, never raise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kurahi.runtimes.claude.breaks import find_breaks
from kurahi.runtimes.claude.graph import Graph
from kurahi.runtimes.claude.loader import comparable, resume_view
from kurahi.runtimes.claude.losses import find_losses
from kurahi.runtimes.claude.rows import parse_rows
from kurahi.runtimes.claude.versions import newest

UUIDS = [f"00000000-0000-4000-8000-{n:012d}" for n in range(12)]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=6), st.sampled_from(UUIDS))
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
blocks = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image", "odd"])},
    optional={
        "text": values,
        "id": st.sampled_from(["toolu_1", "toolu_2", 5]),
        "tool_use_id": st.sampled_from(["toolu_1", "toolu_2", None]),
        "input": values,
        "content": values,
        "thinking": values,
    },
)
messages = st.fixed_dictionaries(
    {},
    optional={
        "id": st.sampled_from(["msg_1", "msg_2", None]),
        "content": st.one_of(values, st.lists(blocks, max_size=3)),
    },
)
rows = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "attachment", "system", "progress", "last-prompt", "mode", 7])},
    optional={
        "uuid": st.sampled_from([*UUIDS, 3, None]),
        "parentUuid": st.sampled_from([*UUIDS, None, "missing", 1]),
        "isSidechain": values,
        "isCompactSummary": values,
        "isMeta": values,
        "subtype": st.sampled_from(["compact_boundary", "stop_hook_summary", None, 2]),
        "leafUuid": st.sampled_from([*UUIDS, None]),
        "message": st.one_of(messages, values),
        "timestamp": st.sampled_from(["2026-12-01T10:00:00.000Z", "yesterday", None, 5, "9999-12-31T23:59:59Z"]),
        "cwd": values,
        "compactMetadata": st.one_of(
            values,
            st.fixed_dictionaries(
                {},
                optional={
                    "preservedMessages": st.one_of(
                        values, st.fixed_dictionaries({"uuids": st.lists(st.sampled_from(UUIDS))})
                    ),
                    "preservedSegment": st.one_of(
                        values,
                        st.fixed_dictionaries({"headUuid": st.sampled_from(UUIDS), "tailUuid": st.sampled_from(UUIDS)}),
                    ),
                },
            ),
        ),
    },
)
raw = st.sampled_from([b"\0\0\0", b'{"type":"user","uu', b"[]", b"", b"\xff\xfe", b"null"])


@given(st.lists(st.one_of(rows.map(lambda r: json.dumps(r).encode()), raw), max_size=25))
def test_any_rows_are_read_modelled_and_judged_without_raising(lines: list[bytes]) -> None:
    data = b"\n".join(lines)
    parsed = parse_rows(data)
    view = resume_view(parsed)
    comparable(view.message_dicts())
    found = find_breaks(Graph(parsed, newest()))
    for b in found.breaks:
        assert b.lost == sorted(set(b.lost))


@given(st.lists(rows, min_size=1, max_size=25))
def test_any_session_file_is_listed_without_raising(tmp_path_factory: Any, items: list[dict[str, Any]]) -> None:
    root: Path = tmp_path_factory.mktemp("claude")
    folder = root / "projects" / "-w"
    folder.mkdir(parents=True)
    (folder / f"{UUIDS[0]}.jsonl").write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in items))
    report = find_losses(root)
    for loss in report.losses:
        assert loss.lost_messages > 0 and loss.evidence and len(loss.id) == 8
