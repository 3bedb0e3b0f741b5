"""Messages copied into ``session context --json`` as they are stored, instead of decoded and encoded.

The C scanner says of each plain line whether its ``message`` value's bytes are exactly what
``JSON.stringify`` writes for the value ``JSON.parse`` reads from them, and whether Pi 1.6.0
reads that message unchanged; only then are the bytes copied. These tests hold the verdict
to that promise (against the exact encoder, and against Pi's own output byte for byte), and
show the copy really happens where it should and never where it must not.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kurahi.context.files import project_file
from kurahi.js.stringify import js_stringify
from kurahi.pi.read import native
from kurahi.testing.sessions import write_session
from support.peer import PiPeer

pytestmark = pytest.mark.skipif(not native.available(), reason="!!! C scanner not built: copying is its job !!!")

HEAD = b'{"type":"message","id":"a1","parentId":null,"message":'


def _span(message: bytes) -> bytes | None:
    line = HEAD + message + b',"timestamp":"2026-10-07T08:00:00.000Z"}'
    got = native._native.message_span(line)
    return None if got is None else line[got[0] : got[0] + got[1]]


COPIED = [
    b'{"role":"user","content":"hi"}',
    b'{"role":"assistant","content":[{"type":"text","text":"a\\nb\\t\\"q\\"\\\\"}],"usage":{"cost":0.00345}}',
    b'{"role":"user","content":[],"n":-12,"f":-0.5,"g":0.000001,"h":123456789012345}',
    b'{"role":"bashExecution","command":"ls","output":"x","exitCode":0}',  # no content, and Pi keeps it so
    b'{"role":"custom","content":null}',  # null content is rewritten only for the four roles below
    b'{"content":"no role"}',
    b'{"role":"user","content":"x","details":{"content":null,"role":"system"}}',  # nested keys do not count
    b'{"role":"user","content":"\xe2\x80\xa8 \xf0\x9f\x98\x80 \x7f"}',  # JSON.stringify leaves these raw
    b'{"role":"user","content":"x","a":{"b":1,"c":2},"d":{"b":1}}',  # the same key in two objects
]

NOT_COPIED = {
    "space after a colon": b'{"role":"user","content": "hi"}',
    "space after a comma": b'{"role":"user", "content":"hi"}',
    "space inside an array": b'{"role":"user","content":[ ]}',
    "a \\u escape": b'{"role":"user","content":"\\u00e9"}',
    "an escaped slash": b'{"role":"user","content":"a\\/b"}',
    "a lone surrogate escape": b'{"role":"user","content":"\\ud800"}',
    "a trailing zero": b'{"role":"user","content":"x","n":1.50}',
    "an integral float": b'{"role":"user","content":"x","n":2.0}',
    "an exponent": b'{"role":"user","content":"x","n":1e5}',
    "minus zero": b'{"role":"user","content":"x","n":-0}',
    "16 digits": b'{"role":"user","content":"x","n":1234567890123456}',
    "below 1e-6": b'{"role":"user","content":"x","n":0.0000001}',
    "16 significant digits": b'{"role":"user","content":"x","n":1.234567890123456}',
    "a repeated key": b'{"role":"user","content":[{"a":1,"a":2}]}',
    "a repeated content": b'{"role":"user","content":"a","content":"b"}',
    "an integer-like key": b'{"role":"user","content":"x","d":{"b":1,"1":2}}',
    "null content (user)": b'{"role":"user","content":null}',
    "no content (assistant)": b'{"role":"assistant","model":"m"}',
    "no content (system)": b'{"role":"system"}',
    "null content (toolResult)": b'{"role":"toolResult","toolCallId":"t","content":null}',
    "not an object": b'"just text"',
    "bytes that are not UTF-8": b'{"role":"user","content":"caf\xe9"}',
    "an encoded surrogate": b'{"role":"user","content":"\xed\xa0\x80"}',
    "a cut-off character": b'{"role":"user","content":"\xe2\x80"}',
}


@pytest.mark.parametrize("message", COPIED, ids=range(len(COPIED)))
def test_what_is_copied(message: bytes) -> None:
    assert _span(message) == message
    assert message == js_stringify(json.loads(message)).encode()


@pytest.mark.parametrize("name", sorted(NOT_COPIED))
def test_what_is_not_copied(name: str) -> None:
    assert _span(NOT_COPIED[name]) is None


def test_a_message_key_twice_is_not_copied() -> None:
    line = HEAD + b'{"role":"user","content":"a"},"message":{"role":"user","content":"b"}}'
    assert native._native.message_span(line) is None


# -- the verdict against the exact encoder, on values written many ways ------------------------

_KEYS = st.sampled_from(["role", "content", "text", "type", "a", "b", "0", "12", "__proto__", "é", "k\u2028"])
_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.5, 0.00345, 1e-6, 1e-7, 1e21, 123.25, -0.0, 2.0])
    | st.text(max_size=8)
)
_VALUES = st.recursive(
    _LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=12
)
_WRITERS = [
    lambda v: js_stringify(v),
    lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":")),
    lambda v: json.dumps(v, ensure_ascii=True, separators=(",", ":")),
    lambda v: json.dumps(v, ensure_ascii=False),
]


@settings(max_examples=400, deadline=None)
@given(
    role=st.sampled_from(["user", "assistant", "toolResult", "system", "custom", "bashExecution"]),
    content=_VALUES,
    extra=st.dictionaries(_KEYS, _VALUES, max_size=3),
    writer=st.sampled_from(range(len(_WRITERS))),
)
def test_copied_bytes_are_what_json_stringify_writes(
    role: str, content: Any, extra: dict[str, Any], writer: int
) -> None:
    value = {"role": role, "content": content, **{k: v for k, v in extra.items() if k not in ("role", "content")}}
    try:
        text = _WRITERS[writer](value)
        stored = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate json.dumps left raw: not a file anyone has
        return
    got = _span(stored)
    if got is not None:
        assert got == js_stringify(json.loads(stored)).encode("utf-8")


def test_the_canonical_writer_is_mostly_copied() -> None:
    """Not vacuous: the values JSON.stringify writes are copied far more often than not."""
    rng = random.Random(7)
    copied = 0
    for i in range(500):
        value = {
            "role": rng.choice(["user", "assistant", "toolResult"]),
            "content": [{"type": "text", "text": f"t{i} " + "word " * rng.randrange(5)}],
            "timestamp": 1_791_360_000_000 + i,
            "usage": {"input": rng.randrange(10_000), "cost": {"total": rng.choice([0.5, 0.00345, 0])}},
        }
        copied += _span(js_stringify(value).encode()) is not None
    assert copied == 500


# -- files: what is copied, and what Pi prints ---------------------------------------------------


def _cli_context(path: Path) -> bytes:
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("kurahi")), "session", "context", str(path), "--json"],
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.rstrip(b"\n")


def _copied(path: Path) -> int:
    ctx = project_file(path, copy_stored=True).context
    return sum(native.is_copied(m) for m in ctx.messages)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = []
    folder = tmp_path_factory.mktemp("copied")
    shapes: list[dict[str, Any]] = [
        {"entries": 3000, "seed": 1, "branch": 0, "compact_every": 0},
        {"entries": 3000, "seed": 2, "branch": 0.05, "compact_every": 300},
        {"entries": 3000, "seed": 3, "new_kinds": True},
        {"entries": 2000, "seed": 4, "new_kinds": True, "branch": 0.1, "compact_every": 0},
    ]
    for i, shape in enumerate(shapes):
        p = folder / f"g{i}.jsonl"
        write_session(p, **shape)
        out.append(p)
    return out


def test_large_live_contexts_are_copied(generated: list[Path]) -> None:
    ctx = project_file(generated[0], copy_stored=True).context
    stored = [m for m in ctx.messages if native.is_copied(m)]
    assert len(stored) > 0.8 * len(ctx.messages) > 1000
    plain = project_file(generated[0]).context
    assert [json.loads(bytes(m)) if native.is_copied(m) else m for m in ctx.messages] == plain.messages


def test_session_context_json_is_pis_bytes(pi: PiPeer, generated: list[Path], tmp_path: Path) -> None:
    """The whole output, byte for byte, is what Pi 1.6.0's JSON.stringify prints."""
    assert all(_copied(p) > 0 for p in generated)
    for path, theirs in zip(generated, pi.context_bytes(generated), strict=True):
        assert _cli_context(path) == theirs, path.name


def test_migrated_and_damaged_messages_are_never_copied(pi: PiPeer, tmp_path: Path) -> None:
    v2 = tmp_path / "v2.jsonl"
    write_session(v2, entries=400, seed=5, version=2, branch=0, compact_every=0)
    assert _copied(v2) == 0  # Pi renames hookMessage in a version-2 file: its bytes are not what it sends
    bad_utf8 = tmp_path / "bytes.jsonl"
    write_session(tmp_path / "src.jsonl", entries=300, seed=6, branch=0, compact_every=0)
    lines = (tmp_path / "src.jsonl").read_bytes().split(b"\n")
    k = next(i for i, line in enumerate(lines) if b'"role":"user"' in line)
    lines[k] = lines[k].replace(b'"role":"user"', b'"role":"user","note":"\xff\xfe"')
    bad_utf8.write_bytes(b"\n".join(lines))
    ctx = project_file(bad_utf8, copy_stored=True).context
    assert _copied(bad_utf8) > 0
    assert not any(native.is_copied(m) and b"\xff" in bytes(m) for m in ctx.messages)
    for path, theirs in zip([v2, bad_utf8], pi.context_bytes([v2, bad_utf8]), strict=True):
        assert _cli_context(path) == theirs, path.name


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_transcript_raw_messages_agree_with_the_line_verdict(tmp_path: Path, sparse: bool) -> None:
    """Bulk (cut in C from one read, or read one by one when far apart) and per-line answers agree."""
    p = tmp_path / "t.jsonl"
    write_session(p, entries=6000 if sparse else 800, seed=9, branch=0, compact_every=0)
    lines = p.read_bytes().split(b"\n")
    k = next(i for i, line in enumerate(lines) if b'"role":"user"' in line)
    lines[k] = lines[k].replace(b'"role":"user"', b'"role":"user","note":"\xed\xa0\x80"')  # an encoded surrogate
    p.write_bytes(b"\n".join(lines))
    from kurahi.pi import Transcript

    with Transcript.open(p) as t:
        indices = [0, 1, k - 1, len(t) - 1] if sparse else list(range(len(t)))
        got = t.raw_messages(indices)
        want = [native.copyable_message(t.raw_line(i)) for i in indices]
    assert [None if g is None else bytes(g) for g in got] == [None if w is None else bytes(w) for w in want]
    assert got[indices.index(k - 1)] is None  # the line with the bad bytes (entries count from 0)
    assert sum(g is not None for g in got) >= len(indices) // 2


# -- stored references, the JSON join, and the entries the C table makes ------------------------


def test_stored_references_are_the_message_bytes_and_outlive_the_transcript(tmp_path: Path) -> None:
    from kurahi.pi import Transcript

    p = tmp_path / "t.jsonl"
    write_session(p, entries=500, seed=11, branch=0, compact_every=0)
    with Transcript.open(p) as t:
        indices = list(range(len(t)))
        refs = t.raw_messages(indices)
        lines = [t.raw_line(i) for i in indices]
    # The transcript is closed: the references still read their bytes (their own descriptor).
    for ref, line in zip(refs, lines, strict=True):
        want = native.copyable_message(line)
        assert (ref is None) == (want is None)
        if ref is not None:
            assert native.is_copied(ref) and bytes(ref) == bytes(want) and len(ref) == len(bytes(want))
    assert sum(r is not None for r in refs) > 400


def test_join_json_mixes_references_bytes_and_raw_and_writes_what_it_returns(tmp_path: Path) -> None:
    from kurahi.pi import Transcript

    p = tmp_path / "t.jsonl"
    write_session(p, entries=300, seed=12, branch=0, compact_every=0)
    with Transcript.open(p) as t:
        refs = [r for r in t.raw_messages(list(range(len(t)))) if r is not None]
    items: list[Any] = [refs[5], b'{"role":"x"}', msgspec.Raw(b"[1,2]"), *refs[:3], refs[200], refs[1]]
    want = b"<" + b",".join(bytes(i) for i in items) + b">"
    assert native.join_json(items, b"<", b">") == want
    assert native.join_json([], b"[", b"]") == b"[]"
    out = tmp_path / "out.json"
    fd = os.open(out, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        assert native.join_json(items, b"<", b">", fd) is None
    finally:
        os.close(fd)
    assert out.read_bytes() == want


def test_a_transcript_that_shrinks_before_it_is_printed_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    write_session(p, entries=3000, seed=13, branch=0, compact_every=0)
    ctx = project_file(p, copy_stored=True).context
    assert sum(native.is_copied(m) for m in ctx.messages) > 1000
    size = p.stat().st_size
    with p.open("r+b") as fh:
        fh.truncate(size // 2)
    with pytest.raises(OSError):
        ctx.to_json()


def test_the_entries_the_c_table_makes_are_the_entries_python_makes(tmp_path: Path) -> None:
    from kurahi.pi import Transcript
    from kurahi.pi.entry import Entry

    p = tmp_path / "t.jsonl"
    write_session(p, entries=2000, seed=14, new_kinds=True)
    with Transcript.open(p) as t:
        indices = t.path_indices(len(t) - 1)
        made = t.path_entries(indices, raw_messages=True)
        by_python = [Entry(t, i) for i in indices]
        assert [(e.index, e.type, e.id, e.parent_id) for e in made] == [
            (e.index, e.type, e.id, e.parent_id) for e in by_python
        ]
        assert [e.data for e in made] == [e.data for e in by_python]
        assert [e.line for e in made] == [e.line for e in by_python]
        refs = t.raw_messages(indices)
        assert [None if e.raw_message is None else bytes(e.raw_message) for e in made] == [
            None if r is None else bytes(r) for r in refs
        ]
        plain = t.path_entries(indices)
        assert all(e.raw_message is None for e in plain)
        (one,) = t._stored.entries(Entry, [True], t, -1)  # an integer-like row: the index is an int
        assert type(one.index) is int and one.index == 1

        class NotAnEntry:
            __slots__ = ("_t", "id", "index", "parent_id", "type")  # no raw_message

        with pytest.raises(TypeError, match="raw_message"):
            t._stored.entries(NotAnEntry, indices[:3], t, -1)


def test_a_closed_pipe_ends_session_context_quietly(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    write_session(p, entries=20000, seed=15, branch=0, compact_every=0)
    kurahi = str(Path(sys.executable).with_name("kurahi"))
    with subprocess.Popen(
        [kurahi, "session", "context", str(p), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.read(10) == b'{"leafId":'
        proc.stdout.close()
        err = proc.stderr.read()
        code = proc.wait(timeout=120)
    assert b"Traceback" not in err, err.decode()
    assert code == 1  # cut short, quietly
