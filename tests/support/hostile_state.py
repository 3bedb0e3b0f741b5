"""Hostile transcripts and state: every string ``JSON.parse`` accepts that Python finds awkward.

Lone surrogates (high and low, as ``\\uXXXX`` escapes), NUL, U+2028, a BOM at the start of
the file and inside strings, integers past 64 bits, ``1e400``, ``-0``, keys such as
``__proto__`` and ``"1"``, rich markup (``[/]``), invalid UTF-8 bytes, and file names that
are not UTF-8. The lines are written as JSON text by hand, so the escapes reach the file
exactly as a JavaScript writer could leave them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["BAD_NAME", "HOSTILE_TEXT", "hostile_lines", "write_hostile_transcript"]

HOSTILE_TEXT = r"lone \ud800 high \udc00 low, pair \ud83d\ude00, NUL \u0000, LS \u2028, BOM \ufeff, [bold]x[/] [/]"
"""A JSON string body (escapes as written in the file)."""

BAD_NAME = os.fsdecode(b"hostile-[red]-\xff.jsonl")
"""A file name that is not UTF-8 (Python holds the byte as a lone surrogate) and holds markup."""

_TS = '"2025-01-01T00:00:0{n}.000Z"'


def _e(kind: str, eid: str, parent: str | None, body: str, n: int = 1) -> str:
    parent_json = "null" if parent is None else f'"{parent}"'
    return f'{{"type":"{kind}","id":"{eid}","parentId":{parent_json},"timestamp":{_TS.format(n=n)},{body}}}'


def hostile_lines(*, bom: bool = False) -> list[bytes]:
    """The transcript's lines (without newlines); ``bom`` starts the file with a byte-order mark.

    Pi 0.73.1 trims the BOM away with the rest of the file's leading white space; Pi 1.6.0
    reads the line as it is, which is then not JSON, so it finds no header.
    """
    user = (
        f'"message":{{"role":"user","content":"{HOSTILE_TEXT}","timestamp":1180591620717411303424,'
        '"__proto__":{"polluted":true},"constructor":1e400,"neg":-0,"huge":1.7976931348623157e308,'
        '"1":"one","":"empty","0":[-0,1e400,-1e400,123456789012345678901,5e-324,1.0,1e21,0.000001]}'
    )
    assistant = (
        '"message":{"role":"assistant","content":[{"type":"text","text":"reply \\udbff\\udfff pair, \\udfff lone"},'
        '{"type":"thinking","thinking":"think \\ud800"},'
        '{"type":"toolCall","id":"c1","name":"wr\\ud800te","arguments":{"path":"\\ud800.md","n":123456789012345678901,'
        '"__proto__":1}}],"api":"x","provider":"p[/]","model":"m\\ud800",'
        '"usage":{"input":1e400,"output":-0,"cacheRead":0,"cacheWrite":0,"totalTokens":1180591620717411303424,'
        '"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1.5}'
    )
    tool = (
        '"message":{"role":"toolResult","toolCallId":"c1","toolName":"wr\\ud800te",'
        '"content":[{"type":"text","text":"ok \\u0000 \\udc80"}],"isError":false,"timestamp":2}'
    )
    lines = [
        (b"\xef\xbb\xbf" if bom else b"") + b'{"type":"session","version":3,"id":"hostile-\\ud800",'
        b'"timestamp":"2025-01-01T00:00:00.000Z",'
        b'"cwd":"/w\\u0000rk [/] \\udfff"}',
        _e("message", "u1", None, user).encode(),
        _e("message", "a1", "u1", assistant, 2).encode(),
        _e("message", "t1", "a1", tool, 3).encode(),
        # Invalid UTF-8 inside a string: Node reads each bad byte as U+FFFD.
        _e("message", "u2", "t1", '"message":{"role":"user","content":"bytes BADBYTES here","timestamp":3}', 4)
        .encode()
        .replace(b"BADBYTES", b"\xff\xfe\xc0"),
        b'{"type":"message","id":"junk\x00","raw NUL makes this line not JSON"}',
        _e("label", "l1", "u2", '"targetId":"u1","label":"tag \\ud800 [/]"', 5).encode(),
        _e("session_info", "i1", "l1", '"name":"name \\udc00 [red]"', 5).encode(),
        _e("model_change", "m1", "i1", '"provider":"prov \\ud800","modelId":"[/]"', 6).encode(),
        _e("thinking_level_change", "k1", "m1", '"thinkingLevel":"hi\\ud800gh"', 6).encode(),
        _e("custom", "z1", "k1", '"customType":"\\ud800","data":{"__proto__":{"a":1e400}}', 6).encode(),
        _e(
            "custom_message",
            "cm1",
            "z1",
            '"customType":"note\\udc00","content":"custom \\ud800 [/]","display":true,'
            '"details":{"n":1180591620717411303424}',
            7,
        ).encode(),
        _e(
            "compaction", "c9", "cm1", '"summary":"sum \\ud800 [/]","firstKeptEntryId":"u2","tokensBefore":1e400', 7
        ).encode(),
        _e(
            "message",
            "x-[/]-\\udc00",
            "c9",
            f'"message":{{"role":"user","content":"after {HOSTILE_TEXT}",' + '"timestamp":8}',
            8,
        ).encode(),
        _e("message", "side", "u1", '"message":{"role":"user","content":"side \\ud800","timestamp":9}', 9).encode(),
        _e("branch_summary", "bs1", "side", '"fromId":"side","summary":"branch \\ud800 [/]"', 9).encode(),
        _e("weird_kind\\ud800", "w1", "x-[/]-\\udc00", '"payload":{"__proto__":null,"v":-0}', 9).encode(),
        _e(
            "message",
            "leaf",
            "w1",
            '"message":{"role":"assistant","content":[{"type":"text","text":"the end \\ud800 [/] \\u2028"}],'
            '"api":"x","provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,'
            '"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},'
            '"stopReason":"stop","timestamp":10}',
            9,
        ).encode(),
    ]
    for line in lines[1:]:
        if b"junk" not in line:
            json.loads(line.decode("utf-8", "replace"))  # every other line is JSON
    return lines


def write_hostile_transcript(path: Path, *, bom: bool = False) -> Path:
    """Write the hostile transcript at ``path`` (newline-terminated) and return the path."""
    path.write_bytes(b"\n".join(hostile_lines(bom=bom)) + b"\n")
    return path
