"""Claude Code's rows read as its ``--resume`` reads them: tolerant of what crashes and releases leave."""

from __future__ import annotations

import json
import tracemalloc

from kurahi.runtimes.claude.rows import parse_rows
from support.claude_sessions import four_turns


def _line(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def test_every_row_is_read_with_its_type_and_line_and_metadata_rows_have_no_uuid() -> None:
    s, turns = four_turns()
    parsed = parse_rows(s.to_bytes())
    assert not parsed.invalid and not parsed.torn_tail
    kinds = {r.type for r in parsed.rows}
    assert {"user", "assistant", "attachment", "last-prompt", "queue-operation", "cost-state"} <= kinds
    assert parsed.lines == list(range(1, len(parsed.rows) + 1))
    prompts = [r for r in parsed.rows if r.uuid == turns[0].prompt]
    assert prompts and prompts[0].parent_uuid is None and not prompts[0].is_sidechain
    leaves = [r.leaf_uuid for r in parsed.rows if r.type == "last-prompt"]
    assert leaves[-1] == turns[-1].reply and all(r.uuid is None for r in parsed.rows if r.type == "last-prompt")
    # A row's other fields are read from its line when asked.
    i = next(n for n, r in enumerate(parsed.rows) if r.uuid == turns[0].prompt)
    assert parsed.get(i, "message") == {"role": "user", "content": "alpha prompt one"}


def test_a_torn_last_line_drops_that_row_only() -> None:
    s, _ = four_turns()
    data = s.to_bytes() + b'{"parentUuid":"x","type":"assistant","mess'
    parsed = parse_rows(data)
    assert parsed.torn_tail
    assert [line for line, _ in parsed.invalid] == [parsed.line_count]
    assert len(parsed.rows) == len(parse_rows(s.to_bytes()).rows)


def test_nul_bytes_inside_a_file_drop_the_lines_they_hit_and_say_so() -> None:
    s, _ = four_turns()
    lines = s.to_bytes().splitlines(keepends=True)
    lines[5] = b"\0" * 4096 + b"\n"  # a zero-filled block where a row was
    lines[9] = b"\0\0\0" + lines[9]  # zeros in front of a row: Node's JSON.parse refuses the line
    parsed = parse_rows(b"".join(lines))
    assert [line for line, _ in parsed.invalid] == [6, 10]
    assert all("NUL" in why for _, why in parsed.invalid)
    assert len(parsed.rows) == len(lines) - 2 and not parsed.torn_tail


def test_unknown_row_types_and_fields_are_kept_and_odd_field_types_read_as_javascript_does() -> None:
    rows = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": "hi"},
            "newField": [1],
        },
        {"type": "hologram", "uuid": "h1", "parentUuid": "u1", "whatever": {"deep": True}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "isSidechain": "yes", "isMeta": 0},
        {"type": "system", "uuid": 7, "parentUuid": "a1", "subtype": None},
        {"type": "mode", "mode": "plan"},
    ]
    parsed = parse_rows(b"".join(_line(r) for r in rows))
    assert not parsed.invalid
    assert [r.type for r in parsed.rows] == ["user", "hologram", "assistant", "system", "mode"]
    assert parsed.rows[2].is_sidechain and not parsed.rows[2].is_meta  # "yes" is truthy, 0 is not
    assert parsed.rows[3].uuid is None  # a uuid that is not a string names nothing


def test_lines_that_are_json_but_not_rows_blank_lines_crlf_and_bad_utf8() -> None:
    good = _line({"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "é"}})
    data = (
        b"[1,2]\n"
        + b"null\n"
        + b"\n"
        + b"   \n"
        + good.rstrip(b"\n")
        + b"\r\n"
        + b'{"type":"user","uuid":"u2","parentUuid":"u1","message":{"role":"user","content":"\xff bad"}}\n'
    )
    parsed = parse_rows(data)
    assert [line for line, _ in parsed.invalid] == [1, 2]
    assert [r.uuid for r in parsed.rows] == ["u1", "u2"]  # Node reads the bad byte as U+FFFD
    assert parsed.get(1, "message")["content"] == "\ufffd bad"


def test_a_100_mb_line_is_read_without_copying_it() -> None:
    s, _ = four_turns()
    huge = b"x" * (100 * 1024 * 1024)
    big = (
        b'{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"tool_result",'
        b'"tool_use_id":"toolu_1","content":"'
        + huge
        + b'"}]},"uuid":"big-row","timestamp":"2026-12-01T10:00:00.000Z"}\n'
    )
    data = big + s.to_bytes()
    tracemalloc.start()
    try:
        parsed = parse_rows(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert parsed.rows[0].uuid == "big-row" and not parsed.invalid
    assert peak < 10 * 1024 * 1024, f"reading the rows took {peak / 1e6:.0f} MB beside the file's bytes"
