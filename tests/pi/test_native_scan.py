"""The C scanner: the same reading as the Python scanner, and "plain" only where JSON.parse agrees.

Three kinds of check:

* equivalence: every file of a corpus (Pi's fixtures, hand-made awkward files, generated
  trees damaged the ways real files get damaged) opens to the same transcript with the C
  scanner as with the Python one: skeletons, warnings, raw lines, line numbers, id
  lookups, the projected context, and the same error for files that are no session;
* JSON.parse itself (node): on thousands of mutated lines, every line the C scanner
  calls plain is one JSON.parse accepts, with the same type, id and parentId;
* completeness: ordinary entry lines (any content, any spacing) are plain, so the C
  path is really the one taken.
"""

from __future__ import annotations

import json
import random
import string
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kurahi.context import build_context
from kurahi.errors import KurahiError
from kurahi.pi import Transcript
from kurahi.pi.read import native
from kurahi.pi.read.scan import decode_line
from kurahi.testing import build_session
from support.damage import KINDS, base_session, damage
from support.peer import NODE, fixture_files

pytestmark = pytest.mark.skipif(
    not native.available(), reason="!!! the C scanner (kurahi.pi.read._native) is not built: its tests are SKIPPED !!!"
)

HEADER = b'{"type":"session","version":3,"id":"s","timestamp":"2026-11-30T08:00:00.000Z","cwd":"/"}'


def _entry(i: int, parent: str | None, **extra: Any) -> bytes:
    row = {"type": "message", "id": f"e{i}", "parentId": parent, "timestamp": "2026-11-30T08:00:00.000Z"}
    row["message"] = {"role": "user", "content": f"m{i}", "timestamp": 1}
    row.update(extra)
    return json.dumps(row).encode()


def _chain(n: int) -> list[bytes]:
    return [_entry(i, f"e{i - 1}" if i else None) for i in range(n)]


# Files no generator makes: each names the rule it exercises.
AWKWARD: dict[str, bytes] = {
    "blank_lines_first": b"\n  \n\t\n" + HEADER + b"\n" + b"\n".join(_chain(3)) + b"\n",
    "bom_on_header": b"\xef\xbb\xbf" + HEADER + b"\n" + b"\n".join(_chain(3)) + b"\n",
    "garbage_before_header": b"garbage\n" + HEADER + b"\n" + b"\n".join(_chain(3)) + b"\n",
    "entry_before_header": b"\n".join([_entry(9, None), HEADER, *_chain(2)]) + b"\n",
    "crlf_everywhere": b"\r\n".join([HEADER, *_chain(4)]) + b"\r\n",
    "no_final_newline": b"\n".join([HEADER, *_chain(4)]),
    "torn_tail": b"\n".join([HEADER, *_chain(4)]) + b'\n{"type":"message","id":"t',
    "trailing_unicode_space": b"\n".join([HEADER, *_chain(4)]) + b"\xc2\xa0\xe2\x80\xa8\n",
    "trailing_space_then_entry": b"\n".join([HEADER, *_chain(2)]) + b"\xc2\xa0\n" + _entry(7, "e1") + b"\n",
    "form_feed_tail": b"\n".join([HEADER, *_chain(3)]) + b"\x0c",
    "second_header": b"\n".join([HEADER, *_chain(2), HEADER, _entry(5, "e1")]) + b"\n",
    "duplicate_ids": b"\n".join([HEADER, *_chain(3), _entry(1, None, message={"role": "user", "content": "late"})])
    + b"\n"
    + _entry(8, "e1")
    + b"\n",
    "escaped_id": b"\n".join(
        [HEADER, *_chain(2), b'{"type":"message","id":"e\\u0039","parentId":"e1"}', _entry(10, "e9")]
    )
    + b"\n",
    "escaped_key": b"\n".join([HEADER, *_chain(2), b'{"type":"message","i\\u0064":"e9","parentId":"e1"}']) + b"\n",
    "duplicate_key": b"\n".join([HEADER, *_chain(2), b'{"type":"message","id":"e9","parentId":"e1","id":"e8"}'])
    + b"\n",
    "number_id": b"\n".join([HEADER, *_chain(2), b'{"type":"message","id":5,"parentId":"e1"}', _entry(6, "5")]) + b"\n",
    "missing_fields": b"\n".join([HEADER, *_chain(2), b'{"type":"message","id":"e9"}', b'{"id":"e10","parentId":"e9"}'])
    + b"\n",
    "null_and_array_lines": b"\n".join([HEADER, *_chain(2), b"null", b"[1,2]", b'"text"', b"42"]) + b"\n",
    "invalid_utf8": b"\n".join([HEADER, *_chain(2), _entry(5, "e1").replace(b'"m5"', b'"m\xff\xc3"')]) + b"\n",
    "invalid_utf8_in_id": b"\n".join([HEADER, *_chain(2), b'{"type":"message","id":"e\xff","parentId":"e1"}']) + b"\n",
    "lone_surrogate": b"\n".join([HEADER, *_chain(2), _entry(5, "e1").replace(b'"m5"', b'"\\ud800"')]) + b"\n",
    "deep_nesting": b"\n".join([HEADER, *_chain(2), _entry(5, "e1").replace(b'"m5"', b"[" * 600 + b"]" * 600)]) + b"\n",
    "control_character": b"\n".join([HEADER, *_chain(2), _entry(5, "e1").replace(b'"m5"', b'"m\x01"')]) + b"\n",
    "two_megabyte_line": b"\n".join([HEADER, *_chain(2), _entry(5, "e1", pad="x" * (2 << 20)), _entry(6, "e5")])
    + b"\n",
    "twenty_megabyte_line": b"\n".join([HEADER, *_chain(2), _entry(5, "e1", pad="y" * (20 << 20)), _entry(6, "e5")])
    + b"\n",
    "parent_cycle": b"\n".join([HEADER, _entry(0, None), _entry(1, "e3"), _entry(2, "e1"), _entry(3, "e2")]) + b"\n",
    "self_parent": b"\n".join([HEADER, _entry(0, None), _entry(1, "e1")]) + b"\n",
    "cycle_off_the_path": b"\n".join([HEADER, _entry(1, "e2"), _entry(2, "e1"), _entry(3, None)]) + b"\n",
    "empty_parent": b"\n".join([HEADER, _entry(0, None), _entry(1, "e0"), _entry(2, "")]) + b"\n",
    "header_only": HEADER + b"\n",
    "header_no_newline": HEADER,
    "empty": b"",
    "not_json_at_all": b"hello\nworld\n",
    "session_type_entry": b"\n".join([HEADER, *_chain(2), b'{"type":"session","id":"e9","parentId":"e1"}']) + b"\n",
}


def _describe(t: Transcript) -> dict[str, Any]:
    n = len(t)
    ids = set(t.columns()[1])
    ctx = build_context(t.path_entries(t.path_indices(n - 1)), t.leaf_id).to_dict() if n else None
    raws = [t.raw_line(i) for i in range(n)]
    lines = [t.line_of(i) for i in range(n)]
    # The batch readers the stitch uses agree with the one-entry ones, in any order.
    for idx in (list(range(n)), list(range(n))[::-3], list(range(0, n, max(1, n // 5)))):
        assert t.raw_lines(idx) == [(lines[i], raws[i]) for i in idx]
        assert t.raw_joined(idx) == ([lines[i] for i in idx], b"\n".join(raws[i] for i in idx))
        assert t.ids_of(idx) == [t.entry_at(i).id for i in idx]
    return {
        "header": t.header,
        "rows": list(zip(*t.columns(), strict=True)),
        "raws": raws,
        "lines": lines,
        "warnings": [(w.line, w.message) for w in t.warnings],
        "lookups": {repr(i): t.index_of(i) for i in [*ids, "absent", "", 5, None]},
        "torn_tail": t.torn_tail,
        "ends_with_newline": t.ends_with_newline,
        "extra_headers": t._scan.extra_header_lines,
        "line_count": t._scan.line_count,
        "size": t.size,
        "context": ctx,
    }


def _open(path: Path, *, c_scanner: bool, monkeypatch: pytest.MonkeyPatch, from_bytes: bool = False) -> Any:
    monkeypatch.setattr(native, "ENABLED", c_scanner)
    try:
        if from_bytes:
            return _describe(Transcript.from_bytes(path.read_bytes(), name=str(path)))
        with Transcript.open(path) as t:
            return _describe(t)
    except KurahiError as exc:
        return (type(exc).__name__, str(exc))


class _Spy:
    """Counts the C scanner's answers, to show the C path really ran."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.answers: list[bool] = []

    def scan(self, *args: Any) -> Any:
        out = self.real.scan(*args)
        self.answers.append(out is not None)
        return out


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> _Spy:
    s = _Spy(native._native)
    monkeypatch.setattr(native, "_native", s)
    return s


def _assert_same(path: Path, monkeypatch: pytest.MonkeyPatch, spy: _Spy) -> None:
    want = _open(path, c_scanner=False, monkeypatch=monkeypatch)
    assert not spy.answers
    for from_bytes in (False, True):
        got = _open(path, c_scanner=True, monkeypatch=monkeypatch, from_bytes=from_bytes)
        if got != want and isinstance(got, dict) and isinstance(want, dict):
            diff = {k: (want[k], got[k]) for k in want if want[k] != got[k]}
            raise AssertionError(f"{path.name} (from_bytes={from_bytes}): C and Python scanners differ: {diff}")
        assert got == want, f"{path.name}: C scanner {got!r}, Python scanner {want!r}"
    assert len(spy.answers) == 2


@pytest.fixture(params=["one thread", "two threads"])
def threads(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    # Two threads split even a small file in the middle, so the join is exercised everywhere.
    monkeypatch.setattr(native, "THREADS_MIN_BYTES", 1 if request.param == "two threads" else 1 << 62)
    return str(request.param)


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_pi_fixtures_read_the_same(path: Path, threads: str, monkeypatch: pytest.MonkeyPatch, spy: _Spy) -> None:
    _assert_same(path, monkeypatch, spy)


@pytest.mark.parametrize("name", sorted(AWKWARD))
def test_awkward_files_read_the_same(
    name: str, threads: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: _Spy
) -> None:
    p = tmp_path / f"{name}.jsonl"
    p.write_bytes(AWKWARD[name])
    _assert_same(p, monkeypatch, spy)


def test_entries_before_a_header_leave_the_file_to_python(tmp_path: Path, spy: _Spy) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes(AWKWARD["entry_before_header"])
    with pytest.raises(KurahiError, match="not a session"):
        Transcript.open(p)
    assert spy.answers == [True]  # the C scan ran, and its answer was set aside


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 5), kinds=st.lists(st.sampled_from(KINDS), max_size=6), salt=st.integers(0, 2**32))
def test_damaged_files_read_the_same(
    tmp_path_factory: pytest.TempPathFactory, seed: int, kinds: list[str], salt: int
) -> None:
    tmp = tmp_path_factory.mktemp("damaged")
    p = tmp / "d.jsonl"
    p.write_bytes(damage(base_session(tmp, seed), random.Random(salt), kinds))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(native, "THREADS_MIN_BYTES", 1 if salt % 2 else 1 << 62)
        spy = _Spy(native._native)
        mp.setattr(native, "_native", spy)
        _assert_same(p, mp, spy)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_trees_read_the_same(
    seed: int, threads: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: _Spy
) -> None:
    p = tmp_path / "tree.jsonl"
    build_session(p, entries=3000, seed=seed, branch_chance=0.1, compact_every=200)
    spy.answers.clear()  # the generator reads back what it wrote; only the reads below count
    _assert_same(p, monkeypatch, spy)
    monkeypatch.setattr(native, "ENABLED", True)
    with Transcript.open(p) as t:
        assert t._stored is not None, "a clean file should be read by the C scanner alone"


# -- JSON.parse itself --------------------------------------------------------------------------

_TOKENS = [
    b'"', b"\\", b",", b"]", b"}", b"{", b"[", b":", b" ", b"\t", b"\r", b"\x0c", b"\x0b", b"\x00", b"\x1f",
    b"\x7f", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\\u", b"\\ud800", b"\\u12", b"\\x", b"01", b"-", b"1e",
    b"1.", b".5", b"+1", b"Infinity", b"NaN", b"true", b"nul", b"\xef\xbb\xbf", b"\xc2\xa0", b"\xe2\x80\xa8",
    b'"id":"x",', b'"type":"session",', b'"parentId":7,', b'"i\\u0064":"y",', b"1e999", b"-0", b"[[[[", b"]]]]",
]  # fmt: skip


def _mutants(base: list[bytes], n: int, seed: int) -> Iterator[bytes]:
    rnd = random.Random(seed)
    for _ in range(n):
        line = bytearray(rnd.choice(base))
        for _ in range(rnd.randrange(1, 4)):
            at = rnd.randrange(len(line) + 1)
            how = rnd.randrange(5)
            if how == 0:
                line[at:at] = rnd.choice(_TOKENS)
            elif how == 1 and line:
                del line[min(at, len(line) - 1)]
            elif how == 2 and line:
                line[min(at, len(line) - 1)] = rnd.randrange(256)
            elif how == 3:
                del line[at:]
            else:  # somewhere near the fields the scanner reads
                key = rnd.choice([b'"id":"', b'"parentId":"', b'"type":"', b'"parentId":'])
                k = line.find(key)
                if k >= 0:
                    line[k + len(key) : k + len(key)] = rnd.choice(_TOKENS)
        yield bytes(line).replace(b"\n", b" ")


@pytest.mark.skipif(NODE is None, reason="!!! node is not installed: the JSON.parse check is SKIPPED !!!")
def test_plain_lines_are_lines_json_parse_accepts(tmp_path: Path) -> None:
    base = [ln for ln in base_session(tmp_path, 3).split(b"\n")[1:] if ln]
    extra = [ln for data in AWKWARD.values() if len(data) < 100_000 for ln in data.split(b"\n")]
    lines = [*base[:300], *extra, *_mutants(base, 4000, seed=7)]
    p = tmp_path / "lines.txt"
    p.write_bytes(b"\n".join(ln.replace(b"\n", b" ") for ln in lines))
    proc = subprocess.run(
        [str(NODE), str(Path(__file__).with_name("json_parse_lines.mjs")), str(p)],
        capture_output=True,
        check=True,
        timeout=120,
    )
    verdicts = [json.loads(v) for v in proc.stdout.decode().split("\n") if v]
    assert len(verdicts) == len(lines)
    plain = 0
    for line, js in zip(lines, verdicts, strict=True):
        got = native._native.classify(line)
        if got is None:
            continue
        plain += 1
        assert js["ok"] and js["object"], f"C scanner calls {line[:200]!r} plain, JSON.parse says {js}"
        assert js["kinds"][:2] == ["string", "string"] and js["kinds"][2] in ("string", "null"), (line[:200], js)
        assert (js["type"], js["id"], js["parentId"]) == got, (line[:200], js, got)
        assert got[0] != "session"
    assert plain > 1000, f"only {plain} plain lines: the check says little"


# -- against the Python decoder, and completeness ---------------------------------------------------

_SAFE = "".join(c for c in string.printable if c not in '"\\\n\r\t\x0b\x0c')
_KEY = st.text(st.characters(blacklist_characters='"\\', blacklist_categories=("Cc", "Cs")), max_size=8)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    type_=st.text(_SAFE, max_size=12).filter(lambda s: s != "session"),
    id_=st.text(_SAFE, max_size=12),
    parent=st.none() | st.text(_SAFE, max_size=12),
    rest=st.dictionaries(_KEY.filter(lambda k: k not in ("type", "id", "parentId")), _json, max_size=5),
    order=st.randoms(use_true_random=False),
    ascii_only=st.booleans(),
    spaced=st.booleans(),
)
def test_ordinary_entry_lines_are_plain(
    type_: str, id_: str, parent: str | None, rest: dict[str, Any], order: random.Random, ascii_only: bool, spaced: bool
) -> None:
    # A top-level key spelled with an escape could be "id" in disguise: such lines go to Python.
    assume(not (ascii_only and any(not k.isascii() for k in rest)))
    items = [("type", type_), ("id", id_), ("parentId", parent), *rest.items()]
    order.shuffle(items)
    seps = (", ", ": ") if spaced else (",", ":")
    line = json.dumps(dict(items), ensure_ascii=ascii_only, separators=seps).encode("utf-8", "surrogatepass")
    assert native._native.classify(line) == (type_, id_, parent)


@settings(max_examples=500, deadline=None)
@given(data=st.data())
def test_plain_lines_decode_the_same_in_python(data: st.DataObject) -> None:
    base = data.draw(st.sampled_from([_entry(1, "e0"), _entry(2, None), _entry(3, "e2", extra=[1, {"a": None}])]))
    line = bytearray(base)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(line)))
        line[at:at] = data.draw(st.sampled_from(_TOKENS) | st.binary(max_size=3))
    got = native._native.classify(bytes(line))
    try:
        value, _ = decode_line(bytes(line))
    except ValueError:
        assert got is None, f"Python refuses {bytes(line)!r}; the C scanner calls it plain"
        return
    if got is not None:
        assert isinstance(value, dict)
        assert (value["type"], value["id"], value["parentId"]) == got
