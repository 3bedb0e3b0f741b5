"""Bad input: each case gives a clear error or a warning naming file and line; nothing on disk changes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.cli.common import EXIT
from kurahi.context.files import project_file
from kurahi.errors import NotASessionError, ParentCycleError, TranscriptReadError
from kurahi.pi import Transcript
from kurahi.pi.read import native
from kurahi.store.session import Session
from support.peer import PiPeer

HEADER = '{"type":"session","version":3,"id":"s-1","timestamp":"2026-11-30T08:00:00.000Z","cwd":"/w"}'


def entry(i: str, parent: str | None, text: str = "hi", role: str = "user") -> str:
    msg = {"role": role, "content": text, "timestamp": 1}
    return json.dumps(
        {"type": "message", "id": i, "parentId": parent, "timestamp": "2026-11-30T08:00:01.000Z", "message": msg},
        ensure_ascii=False,
    )


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def fingerprint(p: Path) -> tuple[str, int]:
    st = p.stat()
    return hashlib.sha256(p.read_bytes()).hexdigest(), st.st_mtime_ns


def lines(*rows: str) -> bytes:
    return ("\n".join(rows) + "\n").encode()


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    return res.exit_code, res.output


def test_non_json_line_is_skipped_with_a_warning_naming_the_line(tmp_path: Path) -> None:
    p = write(tmp_path, "a.jsonl", lines(HEADER, entry("a", None), "not json {", entry("b", "a")))
    before = fingerprint(p)
    with Transcript.open(p) as t:
        assert [e.id for e in t.path()] == ["a", "b"]
        assert [w.line for w in t.warnings] == [3]
        assert "not JSON" in t.warnings[0].message
    fc = project_file(p)
    assert [w.line for w in fc.warnings] == [3]
    assert len(fc.context.messages) == 2
    code, out = run("session", "stats", str(p))
    assert code == 0
    assert "a.jsonl:3" in out and "not JSON" in out
    assert fingerprint(p) == before


@pytest.mark.parametrize("c_scanner", [True, False], ids=["C scanner", "Python scanner"])
@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_a_line_nested_deeper_than_python_decodes_is_read_as_json_parse_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, c_scanner: bool, depth: int
) -> None:
    # Node's JSON.parse has no depth limit (it reads a million levels); CPython's decoders stop
    # near a thousand. Such a line once was skipped, which cut the parent chain above it.
    monkeypatch.setattr(native, "ENABLED", c_scanner)
    deep = entry("b", "a").replace('"hi"', "[" * depth + '"x"' + "]" * depth)
    p = write(tmp_path, "a.jsonl", lines(HEADER, entry("a", None), deep, entry("c", "b")))
    before = fingerprint(p)
    with Transcript.open(p) as t:
        assert [e.id for e in t.path()] == ["a", "b", "c"]
        assert t.warnings == []
    for leaf in (None, "b"):
        fc = project_file(p, leaf, copy_stored=True)
        assert fc.warnings == []
        content = fc.context.messages[1]["content"]
        for _ in range(depth):
            (content,) = content
        assert content == "x"
        assert fc.context.to_json().count(b"[") == depth + 1  # and the messages array
    code, out = run("session", "context", str(p), "--json")
    assert code == 0 and out.count("[") == depth + 1
    # A header nested as deep is a header (of a version-1 file: it has no version).
    with Transcript.from_bytes(lines(deep.replace('"message"', '"session"', 1), entry("a", None))) as t:
        assert t.header["id"] == "b" and len(t) == 1
    assert fingerprint(p) == before


# Pi 1.6.0 splits the file on "\n" and hands every line that is not blank in JavaScript's
# sense (String.prototype.trim, Unicode spaces included) to JSON.parse as it is. Pi 0.73.1
# trimmed the whole file first, which rescued a BOM before the header and Unicode spaces
# after the last line; 1.6.0 drops such a line (and refuses the file when it was the
# header). Kurahi reads as 1.6.0. The number is the entry count, None: not a session.
EDGES: dict[str, tuple[bytes, int | None]] = {
    "form feed after a line before the header": (b"3\x0c\n" + HEADER.encode() + b"\n" + entry("a", None).encode(), 1),
    "no-break space after a line before the header": (
        b"3\xc2\xa0\n" + HEADER.encode() + b"\n" + entry("a", None).encode() + b"\n",
        1,
    ),
    "header only, then a no-break space": (HEADER.encode() + b"\xc2\xa0", None),
    "header only, then a no-break space and a newline": (HEADER.encode() + b"\xc2\xa0\n", None),
    "header only, then a form feed": (HEADER.encode() + b"\x0c", None),
    "a BOM before the header": (b"\xef\xbb\xbf" + lines(HEADER, entry("a", None)), None),
    "a no-break space before the header": (b"\xc2\xa0" + lines(HEADER, entry("a", None)), None),
    "a no-break space line before the header": (b"\xc2\xa0\n" + lines(HEADER, entry("a", None)), 1),
    "a no-break space after the last line": (lines(HEADER, entry("a", None), entry("b", "a"))[:-1] + b"\xc2\xa0", 1),
    "a line separator after the last line": (lines(HEADER, entry("a", None))[:-1] + "\u2028".encode(), 0),
    "a blank line of Unicode spaces at the end": (lines(HEADER, entry("a", None)) + "\u3000\u00a0\n".encode(), 1),
    "carriage returns": (lines(HEADER, entry("a", None)).replace(b"\n", b"\r\n"), 1),
    # Not about spaces: the backward reader's header search stopped after its first 64 KB.
    "100 KB of garbage before the header": (
        b"garbage\n" * 12_500 + HEADER.encode() + b"\n" + entry("a", None).encode(),
        1,
    ),
}


@pytest.mark.parametrize("name", list(EDGES))
@pytest.mark.parametrize("c_scanner", [True, False], ids=["C scanner", "Python scanner"])
def test_lines_are_not_trimmed_before_json_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, c_scanner: bool
) -> None:
    monkeypatch.setattr(native, "ENABLED", c_scanner)
    data, entries = EDGES[name]
    p = write(tmp_path, "t.jsonl", data)
    before = fingerprint(p)
    if entries is None:
        with pytest.raises(NotASessionError, match="not a session"):
            Transcript.open(p)
        with pytest.raises(NotASessionError, match="not a session"):
            project_file(p)
    else:
        with Transcript.open(p) as t:
            assert (t.session_id, len(t)) == ("s-1", entries)
        fc = project_file(p)
        assert (fc.session_id, len(fc.context.messages)) == ("s-1", entries)
    assert fingerprint(p) == before  # Pi 1.6.0 appends a newline to a file that lacks one; Kurahi never writes


@pytest.mark.pi
def test_untrimmed_lines_are_read_as_pi_reads_them(tmp_path: Path, pi: PiPeer) -> None:
    files = [write(tmp_path, f"t{i}.jsonl", data) for i, (data, _) in enumerate(EDGES.values())]
    for (name, (_, entries)), p, live in zip(EDGES.items(), files, pi.contexts(files), strict=True):
        if entries is None:
            assert "not a valid pi session" in live.get("error", ""), (name, live)
            continue
        assert "error" not in live, (name, live)
        assert project_file(p).context.to_dict()["messages"] == live["messages"], name


def test_invalid_utf8_is_read_as_node_reads_it(tmp_path: Path) -> None:
    bad = entry("b", "a", text="caf\u00e9").encode().replace("caf\u00e9".encode(), b"caf\xff")
    p = write(tmp_path, "u.jsonl", lines(HEADER, entry("a", None)) + bad + b"\n")
    before = fingerprint(p)
    fc = project_file(p)
    assert fc.context.messages[-1]["content"] == "caf\ufffd"
    assert any("invalid UTF-8" in w.message and w.line == 3 for w in fc.warnings)
    with Transcript.open(p) as t:
        assert t.entry("b").data["message"]["content"] == "caf\ufffd"
        assert t.entry("b").raw == bad  # the stored bytes are kept as they are
    assert fingerprint(p) == before


@pytest.mark.parametrize(
    "data",
    [b"", b"\n\n  \n", b"garbage\nmore garbage\n", lines('{"type":"message","id":"x"}', HEADER), b"[1,2]\n"],
    ids=["empty", "blank", "garbage", "header-not-first", "not-an-object"],
)
def test_not_a_session_is_refused_and_never_overwritten(tmp_path: Path, data: bytes) -> None:
    p = write(tmp_path, "n.jsonl", data)
    before = fingerprint(p)
    with pytest.raises(NotASessionError) as err:
        Transcript.open(p)
    assert str(p) in str(err.value) and "not a session" in str(err.value)
    with pytest.raises(NotASessionError):
        project_file(p)
    with pytest.raises(NotASessionError):
        Session.open(p)
    code, out = run("session", "stats", str(p))
    assert code == EXIT.INVALID and "not a session" in out
    code, _ = run("session", "context", str(p), "--json")
    assert code == EXIT.INVALID
    assert fingerprint(p) == before


def test_second_header_is_ignored_with_a_warning(tmp_path: Path) -> None:
    other = HEADER.replace("s-1", "s-2")
    p = write(tmp_path, "h.jsonl", lines(HEADER, entry("a", None), other, entry("b", "a")))
    with Transcript.open(p) as t:
        assert t.session_id == "s-1"
        assert len(t) == 2
        assert [w.line for w in t.warnings] == [3]
    assert [w.line for w in project_file(p).warnings] == [3]


def test_duplicate_ids_later_line_wins(tmp_path: Path) -> None:
    p = write(tmp_path, "d.jsonl", lines(HEADER, entry("a", None, "first"), entry("a", None, "second")))
    assert project_file(p).context.messages == [{"role": "user", "content": "second", "timestamp": 1}]
    code, out = run("session", "stats", str(p), "--json")
    assert code == 0 and json.loads(out)["duplicateIds"] == 1


@pytest.mark.parametrize("c_scanner", [True, False], ids=["C scanner", "Python scanner"])
def test_duplicate_ids_around_a_loop_are_walked_as_pi_walks_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, c_scanner: bool
) -> None:
    # Found by fuzzing (the C scanner against the Python one): the Python scanner's walk looks
    # an id up nearest the entry asking, and met a loop through an earlier copy of a repeated
    # id before confirming the id was unique. Pi follows the last copy: no loop here.
    monkeypatch.setattr(native, "ENABLED", c_scanner)
    rows = [entry("p", "q"), entry("q", "p"), entry("r", "q"), entry("p", None), entry("s", "r")]
    with Transcript.from_bytes(lines(HEADER, *rows)) as t:
        assert [e.line for e in t.path()] == [5, 3, 4, 6]
    # A real loop through repeated ids is named by the copies Pi follows (the last ones).
    rows = [entry("a", None), entry("b", "d"), entry("c", "b"), entry("d", "c"), entry("c", "b"), entry("d", "c")]
    with Transcript.from_bytes(lines(HEADER, *rows)) as t, pytest.raises(ParentCycleError) as info:
        t.path()
    assert "(lines [7, 6, 3])" in str(info.value)


def test_missing_parent_cuts_the_path(tmp_path: Path) -> None:
    p = write(tmp_path, "o.jsonl", lines(HEADER, entry("a", None), entry("b", "nowhere")))
    assert [m["content"] for m in project_file(p).context.messages] == ["hi"]
    code, out = run("session", "stats", str(p), "--json")
    assert code == 0 and json.loads(out)["orphans"] == 1


@pytest.mark.parametrize(
    "rows",
    [
        [entry("a", "a")],
        [entry("a", "c"), entry("b", "a"), entry("c", "b")],
        [entry("x", None), entry("a", "b"), entry("b", "a"), entry("leaf", "a")],
    ],
    ids=["self", "three", "below-leaf"],
)
def test_parent_cycle_is_reported_never_loops(tmp_path: Path, rows: list[str]) -> None:
    p = write(tmp_path, "c.jsonl", lines(HEADER, *rows))
    before = fingerprint(p)
    with pytest.raises(ParentCycleError) as err:
        project_file(p)
    assert str(p) in str(err.value) and "cycle" in str(err.value)
    with Transcript.open(p) as t, pytest.raises(ParentCycleError):
        t.path()
    code, out = run("session", "context", str(p))
    assert code == EXIT.FAILED and "cycle" in out
    code, out = run("session", "stats", str(p), "--json")
    assert code == 0 and json.loads(out)["cycles"]
    assert fingerprint(p) == before


def test_fifty_megabyte_line_is_read_without_hanging(tmp_path: Path) -> None:
    big = "x" * (50 * 1024 * 1024)
    p = write(tmp_path, "big.jsonl", lines(HEADER, entry("a", None), entry("b", "a", big), entry("c", "b", "after")))
    fc = project_file(p)
    assert [len(m["content"]) for m in fc.context.messages] == [2, len(big), 5]
    with Transcript.open(p) as t:
        assert len(t) == 3 and t.entry("b").raw.endswith(b"}")


def test_torn_fifty_megabyte_tail_is_skipped(tmp_path: Path) -> None:
    torn = entry("b", "a", "y" * (50 * 1024 * 1024))[:-10].encode()
    p = write(tmp_path, "tb.jsonl", lines(HEADER, entry("a", None)) + torn)
    with Transcript.open(p) as t:
        assert len(t) == 1 and t.torn_tail is not None and t.torn_tail[0] == 3
    assert [m["content"] for m in project_file(p).context.messages] == ["hi"]


def test_directory_and_missing_file_are_clear_errors(tmp_path: Path) -> None:
    d = tmp_path / "dir.jsonl"
    d.mkdir()
    for target, words in ((d, "directory"), (tmp_path / "absent.jsonl", "no such file")):
        with pytest.raises(TranscriptReadError) as err:
            Transcript.open(target)
        assert words in str(err.value) and str(target) in str(err.value)
        with pytest.raises(TranscriptReadError):
            project_file(target)
        code, out = run("session", "stats", str(target))
        assert code == EXIT.NOT_FOUND and words in out


def test_unknown_leaf_is_an_error_not_a_silent_fallback(tmp_path: Path) -> None:
    p = write(tmp_path, "l.jsonl", lines(HEADER, entry("a", None)))
    code, out = run("session", "context", str(p), "--leaf", "zzzzzzzz", "--json")
    assert code == EXIT.NOT_FOUND and "zzzzzzzz" in out


def test_unknown_types_and_fields_are_kept_byte_for_byte(tmp_path: Path) -> None:
    odd = '{"type":"reset","id":"r","parentId":"a","timestamp":"t","reason":"new","x":{"y":[1,2.50,"\\u00e9"]}}'
    p = write(tmp_path, "k.jsonl", lines(HEADER, entry("a", None), odd))
    with Transcript.open(p) as t:
        e = t.entry("r")
        assert e.raw == odd.encode()
        assert e.data["x"] == {"y": [1, 2.5, "\u00e9"]}
    assert project_file(p).context.messages[0]["content"] == "hi"


def test_a_bom_before_the_header_makes_the_file_no_session(tmp_path: Path) -> None:
    # Pi 0.73.1 trimmed the BOM away with the whole file; 1.6.0 hands "\ufeff{...}" to
    # JSON.parse, which refuses it, and the first line that parses is no header.
    data = b"\xef\xbb\xbf" + lines(HEADER, entry("a", None)).replace(b"\n", b"\r\n")
    p = write(tmp_path, "w.jsonl", data)
    with pytest.raises(NotASessionError, match="first JSON line is not a session header"):
        project_file(p)
    with pytest.raises(NotASessionError):
        Transcript.open(p)
    p.write_bytes(data[3:])  # without it: CRLF lines are fine (the \r is JSON whitespace)
    assert [m["content"] for m in project_file(p).context.messages] == ["hi"]
    with Transcript.open(p) as t:
        assert t.session_id == "s-1" and len(t) == 1


def test_unreadable_file_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = write(tmp_path, "r.jsonl", lines(HEADER))
    real_open = os.open

    def deny(path: object, *args: object, **kwargs: object) -> int:
        if Path(str(path)) == p:
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    # Tests run as root here, where a chmod 000 file is still readable: deny at the system call.
    monkeypatch.setattr(os, "open", deny)
    with pytest.raises(TranscriptReadError, match="permission denied"):
        Transcript.open(p)
    with pytest.raises(TranscriptReadError, match="permission denied"):
        project_file(p)


@pytest.mark.pi
def test_what_each_pi_writes_on_open_and_kurahi_never_does(tmp_path: Path, any_pi: PiPeer) -> None:
    # docs/store.md's table: an empty file gets a header from both Pis; a non-session file is
    # overwritten by 0.73.1 and refused by 1.6.0; 1.6.0 appends a missing final newline.
    files = {
        "empty": b"",
        "garbage": b"hello\n",
        "no final newline": lines(HEADER, entry("a", None))[:-1],
    }
    paths = [write(tmp_path, f"{i}.jsonl", data) for i, data in enumerate(files.values())]
    reports = dict(zip(files, any_pi.reports(paths), strict=True))
    new = any_pi.version == "1.6.0"
    assert reports["empty"]["rewritten"] is True
    assert reports["garbage"]["rewritten"] is not new
    assert ("not a valid pi session" in reports["garbage"].get("error", "")) is new
    assert reports["no final newline"]["rewritten"] is new
    for p in paths:
        before = fingerprint(p)
        with contextlib.suppress(NotASessionError):
            project_file(p)
        assert fingerprint(p) == before
