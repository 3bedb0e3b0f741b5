"""The quick way of ``project_file`` (kurahi.pi.read.quick): exact, or not taken.

The quick way skims a large file (each line's top level only), checks the lines of the path
as ``JSON.parse`` would, and reads the file again, checking every line, when one fails; a
file that is not plainly what Pi reads goes to the full reader. These tests force the skim
on small files (``SKIM_MIN_BYTES``) and small tails (``QUICK_TAILS``) and compare with the
full reader, with the reference walk and, where the peers are installed, with Pi.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from kurahi.context import build_context, files
from kurahi.context.files import project_file
from kurahi.context.reference import reference_projection
from kurahi.errors import ParentCycleError
from kurahi.lineage.check import messages_sha256
from kurahi.pi import Transcript
from kurahi.pi.read import native, quick
from kurahi.pi.read.scan import decode_line
from kurahi.testing.sessions import write_session
from support.damage import KINDS, base_session, damage
from support.peer import PiPeer

pytestmark = pytest.mark.skipif(not native.available(), reason="the quick way needs the C scanner")

HEADER = '{"type":"session","version":3,"id":"s-1","timestamp":"2026-11-30T08:00:00.000Z","cwd":"/w"}'


def entry(i: str, parent: str | None, text: str = "hi", role: str = "user", **extra: Any) -> str:
    msg = {"role": role, "content": text, "timestamp": 1}
    return json.dumps(
        {"type": "message", "id": i, "parentId": parent, "timestamp": "2026-11-30T08:00:01.000Z", "message": msg}
        | extra,
        ensure_ascii=False,
        separators=(",", ":"),
    )


def write(tmp_path: Path, name: str, rows: list[str]) -> Path:
    p = tmp_path / name
    p.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return p


@pytest.fixture
def skim(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skim every file and start from a tiny tail, so that small files take every route."""
    monkeypatch.setattr(files, "SKIM_MIN_BYTES", 0)
    monkeypatch.setattr(files, "QUICK_TAILS", (200, 2000))


def full(p: Path) -> tuple[Any, ...]:
    """The projection by the full reader (every line checked), as a comparable tuple."""
    with Transcript.open(p) as t:
        if not len(t):
            return (None, [], "off", None)
        ctx = build_context(t.path_entries(t.path_indices(len(t) - 1)), t.leaf_id)
    return (ctx.leaf_id, ctx.messages, ctx.thinking_level, ctx.model)


def quick_way(p: Path) -> tuple[Any, ...]:
    fc = project_file(p)
    ctx = fc.context
    return (ctx.leaf_id, ctx.messages, ctx.thinking_level, ctx.model)


def routes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record which way project_file went: 'quick', 'recheck' (skim failed), 'full'."""
    seen: list[str] = []
    real_ends, real_read = files._project_ends, files._project_read

    def ends(f: Any, leaf_id: Any, copy_stored: bool, *, skim: bool) -> Any:
        seen.append("quick" if skim else "checked")
        return real_ends(f, leaf_id, copy_stored, skim=skim)

    def read(*args: Any) -> Any:
        seen.append("full")
        return real_read(*args)

    monkeypatch.setattr(files, "_project_ends", ends)
    monkeypatch.setattr(files, "_project_read", read)
    return seen


def chain(n: int, *, start: int = 0) -> list[str]:
    """A linear path e0 .. e(n-1): every line on it."""
    return [entry(f"e{i}", f"e{i - 1}" if i else None, text=f"turn {i} " + "x" * 40) for i in range(start, n)]


def sparse(n: int) -> list[str]:
    """A path e0 .. en (ei at row 4 i), each of e0 .. e(n-1) followed by three side entries off the path."""
    rows = []
    for i in range(n):
        rows.append(entry(f"e{i}", f"e{i - 1}" if i else None, text=f"turn {i} " + "x" * 40))
        rows.extend(entry(f"s{i}.{j}", f"e{i}", text="side") for j in range(3))
    rows.append(entry(f"e{n}", f"e{n - 1}", text="leaf"))
    return rows


def test_a_plain_file_is_read_the_quick_way_and_agrees(
    tmp_path: Path, skim: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = write(tmp_path, "a.jsonl", [HEADER, *sparse(60)])
    seen = routes(monkeypatch)
    assert quick_way(p) == full(p)
    assert seen == ["quick"]
    assert project_file(p).warnings == []


def test_a_path_through_most_lines_is_checked_by_the_scan_not_line_by_line(
    tmp_path: Path, skim: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = write(tmp_path, "a.jsonl", [HEADER, *chain(60)])
    verified: list[int] = []
    real = quick.QuickFile.verify
    monkeypatch.setattr(
        quick.QuickFile,
        "verify",
        lambda self, lines, rows: (lines.checked or verified.append(len(rows)), real(self, lines, rows))[1],
    )
    seen = routes(monkeypatch)
    assert quick_way(p) == full(p)
    assert seen == ["quick"]
    # The whole path was not checked line by line: the tails' skimmed paths (no compaction on
    # them, so nothing they hold can settle the projection) are not even checked.
    assert all(n < 60 for n in verified)


def test_a_long_skimmed_path_is_checked_by_the_scan(
    tmp_path: Path, skim: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "VERIFY_MAX_LINES", 10)
    p = write(tmp_path, "a.jsonl", [HEADER, *sparse(60)])
    seen = routes(monkeypatch)
    assert quick_way(p) == full(p)
    assert seen == ["quick", "checked"]


def test_an_invalid_line_on_the_path_sends_the_file_to_the_checking_scan(
    tmp_path: Path, skim: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = sparse(60)
    # Its top level is plain (skim takes it) but JSON.parse refuses it (`tru`): Pi drops it, so
    # e31's parent is not found and the path starts at e31.
    rows[4 * 30] = rows[4 * 30][:-1] + ',"x":tru}'
    p = write(tmp_path, "a.jsonl", [HEADER, *rows])
    assert native._native.skim(rows[4 * 30].encode()) is not None
    assert native._native.classify(rows[4 * 30].encode()) is None
    seen = routes(monkeypatch)
    got = quick_way(p)
    assert got == full(p)
    assert len(got[1]) == 30  # e31 .. e60
    assert seen == ["quick", "checked", "full"]  # the checking scan flags the line: the full reader warns
    assert [w.line for w in project_file(p).warnings] == [4 * 30 + 2]


def test_an_invalid_line_that_shadows_an_id_on_the_path_is_not_believed(
    tmp_path: Path, skim: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = sparse(60)
    # A later line with e20's id that JSON.parse refuses: Pi keeps the earlier, valid e20.
    rows.append(entry("e20", "e19", text="impostor")[:-1] + ",}")
    rows.append(entry("e61", "e60"))
    p = write(tmp_path, "a.jsonl", [HEADER, *rows])
    seen = routes(monkeypatch)
    got = quick_way(p)
    assert got == full(p)
    assert "impostor" not in json.dumps(got[1])
    assert seen[:2] == ["quick", "checked"]


def test_an_invalid_line_off_the_path_changes_nothing(
    tmp_path: Path, skim: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = sparse(60)
    rows.insert(10, entry("side", "e3", text="side")[:-1] + ',"n":01}')  # a leading zero: not JSON
    p = write(tmp_path, "a.jsonl", [HEADER, *rows])
    seen = routes(monkeypatch)
    assert quick_way(p) == full(p)
    assert seen == ["quick"]  # never read in full: the line is on no path (and not reported)


@pytest.mark.parametrize(
    "odd",
    [
        '{"type":"message","id":"e60","parentId":"e59","id":"e61","message":{"role":"user","content":"twice"}}',
        '{"type":"message","i\\u0064":"e60","parentId":"e59","message":{"role":"user","content":"escaped key"}}',
        '{"type":"message","id":"e\\u0036\\u0030","parentId":"e59","message":{"role":"user","content":"escaped id"}}',
        '{"type":"message","id":60,"parentId":"e59","message":{"role":"user","content":"a number id"}}',
        '{"type":"message","id":"e60","parentId":"e59","message":{"role":"user","content":"torn"',
        '{"type":"message","id":"e60","parentId":"e59","message":{"role":"user","content":[}]}}',
        "",
    ],
    ids=["repeated id key", "escaped key", "escaped id", "number id", "torn last line", "corrupt last line", "blank"],
)
def test_an_odd_last_line_is_read_as_the_full_reader_reads_it(
    tmp_path: Path, skim: None, monkeypatch: pytest.MonkeyPatch, odd: str
) -> None:
    p = write(tmp_path, "a.jsonl", [HEADER, *chain(60), odd])
    seen = routes(monkeypatch)
    assert quick_way(p) == full(p)
    assert seen[-1] == "full"
    with Transcript.open(p) as t:
        assert [(w.line, w.message) for w in project_file(p).warnings] == [(w.line, w.message) for w in t.warnings]


def test_the_tail_grows_until_the_path_is_settled(tmp_path: Path, skim: None) -> None:
    rows = chain(400)
    p = write(tmp_path, "a.jsonl", [HEADER, *rows])
    fc = project_file(p)
    assert (fc.context.leaf_id, fc.context.messages) == full(p)[:2]
    assert fc.entries_read == 400  # no compaction: the path reaches the root, the whole file is read
    ts = '"timestamp":"2026-11-30T08:00:02.000Z"'
    settled = [
        f'{{"type":"thinking_level_change","id":"t1","parentId":"e399",{ts},"thinkingLevel":"low"}}',
        f'{{"type":"model_change","id":"m1","parentId":"t1",{ts},"provider":"p","modelId":"m"}}',
        f'{{"type":"compaction","id":"c1","parentId":"m1",{ts},"summary":"s","firstKeptEntryId":"m1","tokensBefore":5}}',
        entry("e400", "c1"),
    ]
    q = write(tmp_path, "compacted.jsonl", [HEADER, *rows, *settled])
    fc = project_file(q)
    assert full(q) == (fc.context.leaf_id, fc.context.messages, "low", {"provider": "p", "modelId": "m"})
    assert fc.entries_read < 40  # the first tail holds the settings and the compaction window


def test_copy_stored_gives_the_checked_scans_references(tmp_path: Path, skim: None) -> None:
    p = tmp_path / "gen.jsonl"
    write_session(p, entries=2000, seed=11, branch=0, compact_every=0)
    quick_ctx = project_file(p, copy_stored=True).context
    stored = [m for m in quick_ctx.messages if native.is_copied(m)]
    assert len(stored) > 0.8 * len(quick_ctx.messages)
    with Transcript.open(p) as t:
        refs = t.raw_messages(t.path_indices(len(t) - 1))
        expected = [bytes(r) for r in refs if r is not None]
    assert [bytes(m) for m in stored] == expected
    assert quick_ctx.to_json() == project_file(p).context.to_json()


def test_a_leaf_id_is_looked_up_as_pi_would(tmp_path: Path, skim: None) -> None:
    rows = chain(60)
    rows.append(entry("e30", "e29", text="a later e30"))  # the later line with the id wins
    rows.append(entry("e61", "e30"))
    p = write(tmp_path, "a.jsonl", [HEADER, *rows])
    got = project_file(p, "e30").context
    with Transcript.open(p) as t:
        idx = t.index_of("e30")
        assert idx is not None
        want = build_context(t.path_entries(t.path_indices(idx)), "e30")
    assert got.messages == want.messages
    assert got.messages[-1]["content"] == "a later e30"
    from kurahi.errors import EntryNotFoundError

    with pytest.raises(EntryNotFoundError):
        project_file(p, "nope")


def test_a_parent_loop_is_named_by_the_full_reader(tmp_path: Path, skim: None) -> None:
    p = write(tmp_path, "a.jsonl", [HEADER, entry("a", "c"), entry("b", "a"), entry("c", "b")])
    with pytest.raises(ParentCycleError):
        project_file(p)


@pytest.mark.parametrize("salt", range(30))
def test_damaged_files_agree_with_the_reference(tmp_path: Path, skim: None, salt: int) -> None:
    rnd = random.Random(salt)
    kinds = [rnd.choice(KINDS) for _ in range(rnd.randrange(1, 6))]
    p = tmp_path / f"d{salt}.jsonl"
    p.write_bytes(damage(base_session(tmp_path, salt % 6), rnd, kinds))
    try:
        got = project_file(p).context.messages
    except ParentCycleError:
        with pytest.raises(ParentCycleError):
            reference_projection(p)
        return
    assert messages_sha256(got) == messages_sha256(reference_projection(p).messages), (kinds, salt)


@pytest.mark.pi
def test_skimmed_files_read_as_pi_reads_them(tmp_path: Path, skim: None, pi: PiPeer) -> None:
    paths = []
    rows = sparse(60)
    rows[4 * 30] = rows[4 * 30][:-1] + ',"x":tru}'
    paths.append(write(tmp_path, "invalid-on-path.jsonl", [HEADER, *rows]))
    rows = [*sparse(60), entry("e20", "e19", text="impostor")[:-1] + ",}", entry("e61", "e60")]
    paths.append(write(tmp_path, "shadow.jsonl", [HEADER, *rows]))
    rows = sparse(60)
    rows.insert(10, entry("side", "e3")[:-1] + ',"n":01}')
    paths.append(write(tmp_path, "off-path.jsonl", [HEADER, *rows]))
    paths.append(write(tmp_path, "repeated.jsonl", [HEADER, *chain(60), entry("e60", "e59")[:-1] + ',"id":"e61"}']))
    gen = tmp_path / "gen.jsonl"
    write_session(gen, entries=3000, seed=4, compact_every=300)
    paths.append(gen)
    for p, live in zip(paths, pi.contexts(paths), strict=True):
        assert "error" not in live, (p, live)
        got = project_file(p).context.to_dict()
        assert messages_sha256(got["messages"]) == messages_sha256(live["messages"]), p.name
        assert (got["leafId"], got.get("thinkingLevel"), got["model"]) == (
            live["leafId"],
            live.get("thinkingLevel"),
            live["model"],
        ), p.name


def _random_value(rnd: random.Random, depth: int = 0) -> Any:
    pieces = ["a", "{", "}", "[", "]", '"', "\\", " ", "x" * 30, "\u00e9", "\U0001f600", "\n", "\u2028", "\ud800"]
    r = rnd.random()
    if depth > 5 or r < 0.3:
        return "".join(rnd.choice(pieces) for _ in range(rnd.randrange(40)))
    if r < 0.4:
        return rnd.choice([0, -1, 2**70, 1.5, 1e300, True, False, None])
    if r < 0.7:
        return [_random_value(rnd, depth + 1) for _ in range(rnd.randrange(5))]
    return {
        "".join(rnd.choice(pieces) for _ in range(rnd.randrange(8))): _random_value(rnd, depth + 1) for _ in range(5)
    }


def test_skim_reads_every_valid_line_as_the_full_check_does() -> None:
    """For every line JSON.parse accepts, skim gives what classify gives (every skipper)."""
    rnd = random.Random(7)
    n_plain = 0
    for i in range(3000):
        top: dict[str, Any] = {"type": "message", "id": f"i{i}", "parentId": None if i % 7 == 0 else f"i{i - 1}"}
        for _ in range(rnd.randrange(3)):
            top[rnd.choice(["message", "details", "type", "note"])] = _random_value(rnd)
        keys = list(top)
        rnd.shuffle(keys)
        line = json.dumps({k: top[k] for k in keys}, ensure_ascii=rnd.random() < 0.5, separators=(",", ":"))
        data = line.encode("utf-8", "surrogatepass")
        want = native._native.classify(data)
        n_plain += want is not None
        got = [native._native.skim(data, impl=impl) for impl in (0, 1, 2, 3)]  # best, bytewise, SSE2, AVX2
        if want is not None:
            assert got == [want] * 4, line
        assert got[1:] == got[:1] * 3, line
    assert n_plain > 1000


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"a","id":"b","parentId":null}',
        b'{"type":"a","id":"b","parentId":null,"id":"c"}',
        b'{"type":"a","id":"b","parentId":"x\\u0041"}',
        b'{"type":"","id":"","parentId":""}',
        b'{"type":"a","id":"b","parentId":nul}',
        b'{"type":"a","id":"b","parentId":"c"} ',
        b'{"type":"a","id":"b","parentId":"c",}',
        b'{"type":"session","id":"b","parentId":"c"}',
        b'{"type":"a","id":"b\x7f","parentId":"c"}',
        b'{"type":"a","id":"b","parentId":"c","type":"d"}',
        b'{"type":"a","id":"b","parentId":"c","m":{"x":"}]\\\\\\"{"}}',
        b'{ "type":"a","id":"b","parentId":"c"}',
        b'{"type":"a","id":"\xc3\xa9","parentId":"c"}',
    ],
)
def test_skim_on_pis_prefix_and_near_misses(line: bytes) -> None:
    """Pi's own prefix (type, id, parentId first) is read directly: the same verdict as classify."""
    want = native._native.classify(line)
    got = [native._native.skim(line, impl=impl) for impl in (0, 1, 2, 3)]
    if want is not None:
        assert got == [want] * 4
    else:
        assert got[1:] == got[:1] * 3


def test_the_quick_decoder_reads_what_decode_line_reads() -> None:
    rnd = random.Random(3)
    for _ in range(500):
        value = {"k": _random_value(rnd), "n": [1, -0, 1.0, 2**64, 1e-7, -1.5e300], "s": '\u00e9\\"x'}
        raw = json.dumps(value, ensure_ascii=rnd.random() < 0.5).encode("utf-8", "surrogatepass")
        try:
            want, note = decode_line(raw)
        except ValueError:
            continue
        if note:
            continue  # invalid UTF-8: the full reader's business
        try:
            got = quick.loads(raw)
        except ValueError:
            assert b"\xed" in raw  # an encoded surrogate is not UTF-8: the full reader reads it
            continue
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    for bad in [b"", b" ", b"{", b"[1,]", b"NaN", b'{"a":Infinity}', b"1 2", b'"\x01"', b"\xff"]:
        with pytest.raises(ValueError):
            quick.loads(bad)
