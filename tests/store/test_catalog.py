"""The session catalog (sessions.json): format, locking, corruption, concurrency."""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kurahi.errors import (
    CatalogCorruptError,
    CatalogEntryError,
    CatalogError,
    LockHeldError,
    UsageError,
)
from kurahi.fs import durable as fsio
from kurahi.locations.listing import list_sessions, locate_transcript
from kurahi.store import catalog as catalog_module
from kurahi.store import catalog_format
from kurahi.store.catalog import Catalog, find_catalogs, parse_catalog, serialize_catalog
from support.testdata import JSON_ERA, openclaw_state

OPENCLAW_STATE = openclaw_state(JSON_ERA)
OPENCLAW_CATALOG = OPENCLAW_STATE / "agents/main/sessions/sessions.json"
KEY = "agent:main:main"


class _AnyInt:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, int)


ANY_INT: Any = _AnyInt()


def fixed_clock(value: int = 1_800_000_000_000) -> Any:
    return lambda: value


@pytest.fixture
def sessions_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "agents" / "main" / "sessions"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def catalog_path(sessions_dir: Path) -> Path:
    return sessions_dir / "sessions.json"


@pytest.fixture
def openclaw_copy(catalog_path: Path) -> Path:
    shutil.copyfile(OPENCLAW_CATALOG, catalog_path)
    catalog_path.chmod(0o600)
    return catalog_path


def identity(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


def js_layout(value: Any) -> bytes:
    """What JSON.stringify(value, null, 2) writes, for values without floats."""
    return json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8", "backslashreplace")


# --- format ------------------------------------------------------------------------------


def test_openclaw_catalog_round_trips_byte_identical() -> None:
    raw = OPENCLAW_CATALOG.read_bytes()
    assert not raw.endswith(b"\n"), "OpenClaw writes no trailing newline"
    assert serialize_catalog(parse_catalog(raw)) == raw


def test_layout_matches_json_stringify_on_tricky_strings() -> None:
    store = {
        "k": {
            "sessionId": "s",
            "text": 'é ☃ \u2028 \x01 \x7f " \\ \n 😀',
            "lone": "\ud800",
            "empty": {},
            "list": [],
            "nested": [{}, [1, [2]]],
            "big": 123456789012345678901234567890,
        }
    }
    data = serialize_catalog(store)
    assert data == js_layout(store)
    assert b'"lone": "\\ud800"' in data
    assert parse_catalog(data) == store


def test_an_unpaired_surrogate_and_an_out_of_range_number_still_serialize() -> None:
    # Found by fuzzing: both are legal in what the loader accepts (JSON.parse reads 1e400 as
    # Infinity); together they sent the writer down its slow path, which refused Infinity
    # with a ValueError, so every later upsert of that catalog failed. JSON.stringify (and
    # the fast path) write a number out of range as null.
    store = parse_catalog(b'{"k\\ud800": {"x": 1e400, "y": [-1e400, 2]}}')
    data = serialize_catalog(store)
    assert parse_catalog(data) == {"k\ud800": {"x": None, "y": [None, 2]}}
    assert serialize_catalog({"k": {"x": math.inf}}) == b'{\n  "k": {\n    "x": null\n  }\n}'
    # As deep as the loader goes: the slow path must not run out of recursion either.
    deep = parse_catalog(b'{"k": {"s": "\\ud800", "x": ' + b"[" * 800 + b"1e400" + b"]" * 800 + b"}}")
    assert b"null" + b"\n" in serialize_catalog(deep)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=10,
)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(), st.dictionaries(st.text(), json_values, max_size=5), max_size=5))
def test_fast_layout_equals_standard_layout(store: dict[str, dict[str, Any]]) -> None:
    data = serialize_catalog(store)
    assert data == js_layout(store)
    assert parse_catalog(data) == store


def test_unknown_fields_and_order_kept(catalog_path: Path) -> None:
    original = {
        KEY: {"sessionId": "a", "zeta": {"deep": [1, {"x": None}]}, "updatedAt": 5, "alpha": "keep"},
        "agent:main:other": {"sessionId": "b", "updatedAt": 6, "__openclaw": {"v": 1}},
    }
    catalog_path.write_bytes(js_layout(original))
    catalog = Catalog(catalog_path, clock=fixed_clock())
    catalog.upsert(KEY, {"compactionCount": 2, "alpha": "changed"})
    expected = json.loads(json.dumps(original))
    expected[KEY]["alpha"] = "changed"
    expected[KEY]["compactionCount"] = 2
    assert catalog_path.read_bytes() == js_layout(expected)
    assert list(json.loads(catalog_path.read_bytes())[KEY]) == [
        "sessionId",
        "zeta",
        "updatedAt",
        "alpha",
        "compactionCount",
    ]


# --- clocks and rewrites -----------------------------------------------------------------


def test_bookkeeping_upsert_leaves_activity_clocks_alone(openclaw_copy: Path) -> None:
    before = json.loads(openclaw_copy.read_bytes())[KEY]
    catalog = Catalog(openclaw_copy, clock=fixed_clock(1_900_000_000_000))
    entry = catalog.upsert(KEY, {"compactionCount": 7, "status": "running"})
    assert entry["updatedAt"] == before["updatedAt"]
    assert entry["lastInteractionAt"] == before["lastInteractionAt"]
    stored = json.loads(openclaw_copy.read_bytes())[KEY]
    assert stored["updatedAt"] == before["updatedAt"]
    assert stored["lastInteractionAt"] == before["lastInteractionAt"]
    assert stored["compactionCount"] == 7
    expected = dict(before, compactionCount=7, status="running")
    assert stored == expected
    assert openclaw_copy.read_bytes() == js_layout({KEY: expected})


def test_touch_refreshes_updated_at_only(openclaw_copy: Path) -> None:
    before = json.loads(openclaw_copy.read_bytes())[KEY]
    catalog = Catalog(openclaw_copy, clock=fixed_clock(1_900_000_000_000))
    entry = catalog.upsert(KEY, {}, touch=True)
    assert entry["updatedAt"] == 1_900_000_000_000
    assert entry["lastInteractionAt"] == before["lastInteractionAt"]
    assert catalog.get(KEY) == entry


def test_new_entry_gets_updated_at_and_needs_session_id(catalog_path: Path) -> None:
    catalog = Catalog(catalog_path, clock=fixed_clock(42))
    assert not catalog_path.exists()
    entry = catalog.upsert(KEY, {"sessionId": "s1", "sessionFile": "s1.jsonl"})
    assert entry == {"sessionId": "s1", "sessionFile": "s1.jsonl", "updatedAt": 42}
    with pytest.raises(CatalogEntryError, match="needs a sessionId"):
        catalog.upsert("agent:main:new", {"status": "done"})
    assert catalog.keys() == [KEY]


def test_identical_content_is_not_rewritten(openclaw_copy: Path) -> None:
    catalog = Catalog(openclaw_copy, clock=fixed_clock())
    entry = catalog.get(KEY)
    assert entry is not None
    before = identity(openclaw_copy)
    time.sleep(0.01)
    catalog.upsert(KEY, {"status": entry["status"], "model": entry["model"]})
    catalog.update(KEY, lambda current: current)
    assert catalog.delete("agent:main:absent") is False
    assert identity(openclaw_copy) == before
    assert sorted(p.name for p in openclaw_copy.parent.iterdir()) == ["sessions.json"]


def test_noop_does_not_normalise_a_hand_edited_layout(catalog_path: Path) -> None:
    raw = b'{"agent:main:main": {"sessionId": "a", "updatedAt": 1}}\n'
    catalog_path.write_bytes(raw)
    Catalog(catalog_path).upsert(KEY, {"sessionId": "a"})
    assert catalog_path.read_bytes() == raw


def test_two_writers_on_one_file_see_each_other(catalog_path: Path) -> None:
    first, second = Catalog(catalog_path), Catalog(catalog_path)
    first.upsert("agent:main:a", {"sessionId": "a"})
    second.upsert("agent:main:b", {"sessionId": "b"})
    first.upsert("agent:main:c", {"sessionId": "c"})
    second.delete("agent:main:a")
    first.upsert("agent:main:b", {"status": "done"})
    assert json.loads(catalog_path.read_bytes()) == {
        "agent:main:b": {"sessionId": "b", "updatedAt": ANY_INT, "status": "done"},
        "agent:main:c": {"sessionId": "c", "updatedAt": ANY_INT},
    }


def test_written_with_mode_0600(catalog_path: Path) -> None:
    Catalog(catalog_path).upsert(KEY, {"sessionId": "s"})
    assert catalog_path.stat().st_mode & 0o777 == 0o600
    catalog_path.chmod(0o644)
    Catalog(catalog_path).upsert(KEY, {"status": "done"})
    assert catalog_path.stat().st_mode & 0o777 == 0o600


def test_update_and_delete(catalog_path: Path) -> None:
    catalog = Catalog(catalog_path, clock=fixed_clock(7))
    catalog.upsert(KEY, {"sessionId": "s", "compactionCount": 1})
    result = catalog.update(KEY, lambda e: dict(e or {}, compactionCount=(e or {})["compactionCount"] + 1))
    assert result == {"sessionId": "s", "compactionCount": 2, "updatedAt": 7}
    with pytest.raises(RuntimeError):
        catalog.update(KEY, lambda e: (_ for _ in ()).throw(RuntimeError("boom")))
    assert catalog.get(KEY) == result
    with pytest.raises(CatalogEntryError, match="JSON object"):
        catalog.update(KEY, lambda e: ["not", "an", "entry"])  # type: ignore[arg-type,return-value]
    assert catalog.update(KEY, lambda e: None) is None
    assert catalog.get(KEY) is None
    assert catalog.delete(KEY) is False
    assert json.loads(catalog_path.read_bytes()) == {}


def test_bad_field_values_rejected(catalog_path: Path) -> None:
    catalog = Catalog(catalog_path)
    for fields, match in [
        ({"sessionId": 5}, "sessionId: expected a string"),
        ({"sessionId": "s", "updatedAt": "now"}, "updatedAt: expected a non-negative integer"),
        ({"sessionId": "s", "updatedAt": True}, "updatedAt"),
        ({"sessionId": "s", "abortedLastRun": 0}, "abortedLastRun: expected a boolean"),
        ({"sessionId": "s", "x": float("nan")}, "not representable"),
        ({"sessionId": "s", "x": {1: 2}}, "not a string"),
        ({"sessionId": "s", "x": object()}, "not a JSON value"),
    ]:
        with pytest.raises(CatalogEntryError, match=match):
            catalog.upsert(KEY, fields)
    assert not catalog_path.exists()


def test_write_failure_leaves_old_catalog_and_no_temp(catalog_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = Catalog(catalog_path)
    catalog.upsert(KEY, {"sessionId": "s"})
    raw = catalog_path.read_bytes()

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsio.ops, "fsync", no_space)
    with pytest.raises(CatalogError, match="No space left"):
        catalog.upsert(KEY, {"status": "done"})
    assert catalog_path.read_bytes() == raw
    assert sorted(p.name for p in catalog_path.parent.iterdir()) == ["sessions.json"]


def test_missing_sessions_directory_is_a_clear_error(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "nope" / "sessions.json")
    assert catalog.items() == []
    with pytest.raises(CatalogError, match=r"sessions directory .*nope does not exist"):
        catalog.upsert(KEY, {"sessionId": "s"})
    assert not (tmp_path / "nope").exists()


# --- corrupt catalogs ----------------------------------------------------------------------

CORRUPT = {
    "truncated": (b'{\n  "agent:main:main": {\n    "sessionId": "a",\n', "line 4, column 1"),
    "trailing comma": (b'{\n  "a": {},\n}', "line 3, column 1"),
    "not an object": (b"[]", "JSON array, expected an object"),
    "entry not an object": (b'{"agent:main:main": 5}', "'agent:main:main': entry is a JSON number"),
    "invalid utf-8": (b'{"agent:main:main": {"sessionId": "\xff"}}', "invalid UTF-8 at line 1"),
    "empty": (b"", "is empty"),
    "whitespace": (b"  \n\n", "is empty"),
    "NaN": (b'{"a": {"x": NaN}}', "NaN is not JSON"),
    "garbage": (b"\x00\x01\x02binary", "not valid JSON at line 1, column 1"),
}


@pytest.mark.parametrize("name", list(CORRUPT))
def test_corrupt_catalog_is_never_overwritten(catalog_path: Path, name: str) -> None:
    raw, message = CORRUPT[name]
    catalog_path.write_bytes(raw)
    catalog = Catalog(catalog_path)
    operations = [
        lambda: catalog.upsert(KEY, {"sessionId": "new"}, touch=True),
        lambda: catalog.update(KEY, lambda e: {"sessionId": "new"}),
        lambda: catalog.delete(KEY),
        lambda: catalog.get(KEY),
        catalog.items,
        catalog.keys,
    ]
    for operation in operations:
        with pytest.raises(CatalogCorruptError) as info:
            operation()
        assert str(catalog_path) in str(info.value)
        assert message in str(info.value)
        assert catalog_path.read_bytes() == raw
    assert sorted(p.name for p in catalog_path.parent.iterdir()) == ["sessions.json"]

    moved = catalog.repair()
    assert moved is not None
    assert moved.parent == catalog_path.parent
    assert moved.name.startswith("sessions.json.corrupt.")
    assert moved.read_bytes() == raw
    assert not catalog_path.exists()
    catalog.upsert(KEY, {"sessionId": "fresh"})
    assert catalog.keys() == [KEY]
    assert moved.read_bytes() == raw


def test_repair_refuses_a_healthy_catalog(openclaw_copy: Path) -> None:
    before = identity(openclaw_copy)
    with pytest.raises(CatalogError, match="nothing to repair"):
        Catalog(openclaw_copy).repair()
    assert identity(openclaw_copy) == before


def test_repair_of_missing_catalog_returns_none(catalog_path: Path) -> None:
    assert Catalog(catalog_path).repair() is None


def test_repair_twice_does_not_clobber(catalog_path: Path) -> None:
    catalog_path.write_bytes(b"first")
    first = Catalog(catalog_path).repair()
    catalog_path.write_bytes(b"second")
    second = Catalog(catalog_path).repair()
    assert first is not None and second is not None and first != second
    assert first.read_bytes() == b"first" and second.read_bytes() == b"second"


def test_directory_or_fifo_at_catalog_path(catalog_path: Path) -> None:
    catalog_path.mkdir()
    with pytest.raises(CatalogError, match="is a directory"):
        Catalog(catalog_path).items()
    with pytest.raises(CatalogError, match="is a directory"):
        Catalog(catalog_path).upsert(KEY, {"sessionId": "s"})
    catalog_path.rmdir()
    os.mkfifo(catalog_path)
    with pytest.raises(CatalogError, match="not a regular file"):
        Catalog(catalog_path).items()


def test_bom_and_unpaired_surrogate_escapes_read(catalog_path: Path) -> None:
    catalog_path.write_bytes(b'\xef\xbb\xbf{"k": {"sessionId": "\\ud800x"}}')
    assert Catalog(catalog_path).get("k") == {"sessionId": "\ud800x"}


# --- keys and agent ids --------------------------------------------------------------------

HOSTILE_KEYS: list[Any] = [
    "",
    "a\x00b",
    "a\nb",
    "tab\there",
    "\x7f",
    "x" * 1025,
    "\ud800",
    "__proto__",
    5,
    None,
]


@pytest.mark.parametrize("key", HOSTILE_KEYS, ids=repr)
def test_hostile_keys_rejected(catalog_path: Path, key: Any) -> None:
    catalog = Catalog(catalog_path)
    with pytest.raises(CatalogEntryError):
        catalog.upsert(key, {"sessionId": "s"})
    with pytest.raises(CatalogEntryError):
        catalog.get(key)
    with pytest.raises(CatalogEntryError):
        catalog.delete(key)
    assert not catalog_path.exists()


def test_unusual_but_fine_keys_accepted(catalog_path: Path) -> None:
    catalog = Catalog(catalog_path)
    for key in ["agent:main:telegram:group:-100123:topic:5", "agent:main:ünïcödé:☃", "k" * 1024, "[x]"]:
        catalog.upsert(key, {"sessionId": "s"})
    assert len(catalog.keys()) == 4


@pytest.mark.parametrize("agent", ["", ".", "..", "../main", "a/b", "a\\b", ".hidden", "a\x00", "x" * 129])
def test_hostile_agent_ids_rejected(tmp_path: Path, agent: str) -> None:
    with pytest.raises(UsageError):
        find_catalogs(tmp_path, agent)
    with pytest.raises(UsageError):
        catalog_format.validate_agent_id(agent)


def test_find_catalogs(tmp_path: Path) -> None:
    for agent in ["main", "ops"]:
        (tmp_path / "agents" / agent / "sessions").mkdir(parents=True)
    (tmp_path / "agents" / "nosessions").mkdir()
    (tmp_path / "agents" / ".trash" / "sessions").mkdir(parents=True)
    assert find_catalogs(tmp_path, None) == [
        ("main", tmp_path / "agents/main/sessions/sessions.json"),
        ("ops", tmp_path / "agents/ops/sessions/sessions.json"),
    ]
    assert find_catalogs(tmp_path, "ops") == [("ops", tmp_path / "agents/ops/sessions/sessions.json")]
    with pytest.raises(CatalogError, match="'ghost' has no sessions directory"):
        find_catalogs(tmp_path, "ghost")
    with pytest.raises(CatalogError, match="not a directory"):
        find_catalogs(tmp_path / "missing", None)
    assert find_catalogs(tmp_path / "agents" / "main", None) == []


# --- transcripts and listing ---------------------------------------------------------------


def test_locate_transcript(tmp_path: Path) -> None:
    (tmp_path / "s1.jsonl").write_text("{}\n")
    (tmp_path / "moved.jsonl").write_text("{}\n")
    assert locate_transcript(tmp_path, {"sessionId": "s1"}) == (tmp_path / "s1.jsonl", True)
    moved = {"sessionId": "zz", "sessionFile": "/gone/state/agents/main/sessions/moved.jsonl"}
    assert locate_transcript(tmp_path, moved) == (tmp_path / "moved.jsonl", True)
    missing = {"sessionId": "zz", "sessionFile": "/gone/zz.jsonl"}
    assert locate_transcript(tmp_path, missing) == (Path("/gone/zz.jsonl"), False)
    assert locate_transcript(tmp_path, {"sessionId": "../s1"}) == (None, False)
    assert locate_transcript(tmp_path, {"sessionFile": "../../etc/passwd"}) == (None, False)
    assert locate_transcript(tmp_path, {"sessionId": 5}) == (None, False)


def test_list_sessions_on_openclaw_state(tmp_path: Path) -> None:
    home = tmp_path / "state"
    shutil.copytree(OPENCLAW_STATE, home)
    listings = list_sessions(home)
    assert [(item.agent, item.key) for item in listings] == [("main", KEY)]
    item = listings[0]
    assert item.session_id == "ed83c604-551f-41af-9a44-65881d6be000"
    assert item.transcript_exists
    assert item.transcript == str(home / "agents/main/sessions/ed83c604-551f-41af-9a44-65881d6be000.jsonl")
    assert item.to_dict()["sessionId"] == item.session_id


# --- locks and processes -------------------------------------------------------------------

HOLDER = """
import sys, time
from kurahi.fs.locks import FileLock
lock = FileLock(sys.argv[1], purpose="test holder").acquire(timeout=5)
print("ready", flush=True)
time.sleep(120)
"""


def start_holder(lock_path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    return proc


def test_lock_held_by_live_process_times_out(catalog_path: Path) -> None:
    catalog = Catalog(catalog_path, lock_timeout=0.3)
    catalog.upsert(KEY, {"sessionId": "s"})
    raw = catalog_path.read_bytes()
    with start_holder(catalog.lock_path) as proc:
        try:
            started = time.monotonic()
            with pytest.raises(LockHeldError) as info:
                catalog.upsert(KEY, {"status": "done"})
            assert 0.25 <= time.monotonic() - started < 5
            assert info.value.holder_pid == proc.pid
            with pytest.raises(LockHeldError):
                catalog.repair()
            assert catalog.get(KEY) == json.loads(raw)[KEY]  # reads need no lock
        finally:
            proc.kill()
    assert catalog_path.read_bytes() == raw


def test_lock_left_by_killed_process_is_reclaimed(catalog_path: Path) -> None:
    catalog = Catalog(catalog_path, lock_timeout=2)
    with start_holder(catalog.lock_path) as proc:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert catalog.lock_path.exists(), "the dead holder left its lock file behind"
    catalog.upsert(KEY, {"sessionId": "s"})
    assert catalog.keys() == [KEY]
    assert not catalog.lock_path.exists()


WORKER = """
import pathlib, sys, time
from kurahi.store.catalog import Catalog
path, worker, count, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), pathlib.Path(sys.argv[4])
catalog = Catalog(path, lock_timeout=120)
while not go.exists():
    time.sleep(0.001)
for i in range(count):
    catalog.upsert(f"agent:w{worker}:k{i}", {"sessionId": f"s-{worker}-{i}", "worker": worker, "n": i})
"""


def test_eight_processes_times_500_upserts_all_present(catalog_path: Path, tmp_path: Path) -> None:
    workers, count = 8, 500
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(catalog_path), str(w), str(count), str(go)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    started = time.monotonic()
    go.touch()
    errors = []
    for proc in procs:
        with proc:
            _, err = proc.communicate(timeout=300)
            if proc.returncode != 0:
                errors.append(err)
    elapsed = time.monotonic() - started
    assert not errors, errors[0]
    store = parse_catalog(catalog_path.read_bytes())
    assert len(store) == workers * count
    for w in range(workers):
        for i in range(count):
            assert store[f"agent:w{w}:k{i}"]["sessionId"] == f"s-{w}-{i}"
    assert sorted(p.name for p in catalog_path.parent.iterdir()) == ["sessions.json"]  # no temp, no lock
    switches = sum(1 for a, b in zip(store, list(store)[1:], strict=False) if a.split(":")[1] != b.split(":")[1])
    print(f"8 x 500 upserts: {elapsed:.1f} s, {switches} switches between writers in file order")


def test_exported_names() -> None:
    for name in catalog_module.__all__:
        assert hasattr(catalog_module, name)
