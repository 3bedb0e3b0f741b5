"""One conformance suite for storage backends: what every :class:`~kurahi.store.base.Backend` must do.

Bind it once per backend by subclassing and saying how to make a fresh, empty backend::

    class TestMyBackend(BackendConformance):
        def make_backend(self) -> Backend:
            return MyBackend(...)

pytest collects the ``test_*`` methods of the subclass. The suite needs nothing but the
backend (no pytest fixtures), so it runs under any test runner. Kurahi binds it to the
file, memory and PostgreSQL backends; a third-party backend passes it or is not a backend.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from kurahi.context.project import build_context
from kurahi.errors import (
    AppendError,
    AuditNotFoundError,
    CanonicalJSONError,
    CatalogEntryError,
    JournalWriteError,
    KurahiError,
    LockHeldError,
    NotASessionError,
    TranscriptChangedError,
    TranscriptReadError,
    UsageError,
)
from kurahi.store.base import Backend
from kurahi.store.session import Session

__all__ = ["BackendConformance"]

_HEADER = b'{"type":"session","version":3,"id":"0b5e55ed-0000-4000-8000-000000000001","timestamp":"2026-12-01T00:00:00.000Z","cwd":"/home/r"}\n'  # noqa: E501
_ENTRY = (
    b'{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-12-01T00:00:01.000Z",'
    b'"message":{"role":"user","content":"hello \\u00e9","timestamp":1764547201000}}\n'
)
_BAD_NAMES = ["", ".", "..", "../x.jsonl", "a/b.jsonl", "x\x00.jsonl", "x\n.jsonl", "a\\b.jsonl", "x" * 300]


def _raises(kind: type[BaseException] | tuple[type[BaseException], ...], fn: Callable[[], Any]) -> BaseException:
    try:
        fn()
    except kind as exc:
        return exc
    raise AssertionError(f"expected {kind}, nothing was raised")


class BackendConformance:
    """The behaviours every backend shares (see the module docstring).

    What differs between backends, the suite learns from the backend's own capabilities
    (:attr:`~kurahi.store.base.Backend.fences_writers`, ...), and checks that they hold.
    """

    def make_backend(self) -> Backend:
        """A fresh, empty backend (each test gets its own)."""
        raise NotImplementedError

    # -- transcripts ------------------------------------------------------------------------

    def test_create_then_read_back_byte_for_byte(self) -> None:
        ts = self.make_backend().agent("main", create=True).transcripts
        h = ts.create("s1.jsonl", _HEADER, durable=True)
        h.append(_ENTRY, durable=True)
        h.close()
        assert ts.export("s1.jsonl") == _HEADER + _ENTRY
        with ts.read("s1.jsonl") as t:
            assert t.session_id == "0b5e55ed-0000-4000-8000-000000000001"
            assert [e.id for e in t.entries()] == ["a1b2c3d4"]
            assert t.entry("a1b2c3d4").data["message"]["content"] == "hello é"
        assert ts.names() == ["s1.jsonl"]
        assert ts.exists("s1.jsonl") and not ts.exists("s2.jsonl")
        info = ts.info("s1.jsonl")
        assert info is not None and info.size == len(_HEADER + _ENTRY) and info.modified_ms > 1_700_000_000_000
        assert ts.info("s2.jsonl") is None

    def test_create_never_overwrites(self) -> None:
        ts = self.make_backend().agent("main", create=True).transcripts
        ts.create("s1.jsonl", _HEADER, durable=True).close()
        _raises(UsageError, lambda: ts.create("s1.jsonl", b'{"type":"session"}\n', durable=True))
        _raises(UsageError, lambda: ts.import_bytes("s1.jsonl", b"other\n"))
        assert ts.export("s1.jsonl") == _HEADER

    def test_one_writer_at_a_time(self) -> None:
        ts = self.make_backend().agent("main", create=True).transcripts
        first = ts.create("s1.jsonl", _HEADER, durable=True)
        _raises(LockHeldError, lambda: ts.open("s1.jsonl"))
        first.close()
        first.close()  # harmless twice
        second = ts.open("s1.jsonl")
        second.append(_ENTRY, durable=False)
        second.sync()
        _raises(AppendError, lambda: first.append(_ENTRY, durable=True))
        second.close()
        assert ts.export("s1.jsonl") == _HEADER + _ENTRY

    def test_reopened_transcripts_append_after_what_is_there(self) -> None:
        ts = self.make_backend().agent("main", create=True).transcripts
        h = ts.create("s1.jsonl", _HEADER, durable=True)
        h.append(_ENTRY, durable=False)
        h.close()
        for _ in range(2):
            h = ts.open("s1.jsonl")
            h.append(_ENTRY.replace(b"a1b2c3d4", b"e5f6a7b8"), durable=True)
            h.close()
        expected = _HEADER + _ENTRY + 2 * _ENTRY.replace(b"a1b2c3d4", b"e5f6a7b8")
        assert ts.export("s1.jsonl") == expected
        info = ts.info("s1.jsonl")
        assert info is not None and info.size == len(expected)

    def test_an_append_after_a_torn_tail_starts_a_new_line(self) -> None:
        # A crash cut the last line short: the next line must not be glued onto the fragment.
        ts = self.make_backend().agent("main", create=True).transcripts
        torn = _HEADER + _ENTRY[:-5]
        ts.import_bytes("s1.jsonl", torn)
        h = ts.open("s1.jsonl")
        h.append(_ENTRY.replace(b"a1b2c3d4", b"e5f6a7b8"), durable=True)
        h.close()
        assert ts.export("s1.jsonl") == torn + b"\n" + _ENTRY.replace(b"a1b2c3d4", b"e5f6a7b8")
        with ts.read("s1.jsonl") as t:
            assert [e.id for e in t.entries()] == ["e5f6a7b8"]  # the fragment is skipped, the new line read

    def test_names_sort_by_code_point(self) -> None:
        ts = self.make_backend().agent("main", create=True).transcripts
        names = ["b.jsonl", "a.jsonl", "B.jsonl", "\u00e9.jsonl", "a-1.jsonl", "a_1.jsonl"]
        for name in names:
            ts.import_bytes(name, _HEADER)
        assert ts.names() == sorted(names)

    def test_names_are_never_paths(self) -> None:
        ts = self.make_backend().agent("main", create=True).transcripts
        for bad in _BAD_NAMES:
            _raises(UsageError, partial(ts.create, bad, _HEADER, durable=True))
            _raises(UsageError, partial(ts.open, bad))
            _raises(UsageError, partial(ts.read, bad))
            _raises(UsageError, partial(ts.export, bad))
            _raises(UsageError, partial(ts.import_bytes, bad, _HEADER))
        assert ts.names() == []

    def test_missing_transcripts_are_named(self) -> None:
        ts = self.make_backend().agent("main", create=True).transcripts
        for call in (lambda: ts.open("nope.jsonl"), lambda: ts.read("nope.jsonl"), lambda: ts.export("nope.jsonl")):
            exc = _raises(TranscriptReadError, call)
            assert "nope.jsonl" in str(exc)

    def test_import_keeps_bytes_even_damaged_ones(self) -> None:
        ts = self.make_backend().agent("main", create=True).transcripts
        data = _HEADER + b'{"type":"message","id":"x"\n' + _ENTRY[:-1]  # a corrupt line and a torn tail
        ts.import_bytes("s1.jsonl", data)
        assert ts.export("s1.jsonl") == data
        with ts.read("s1.jsonl") as t:
            # The corrupt line is skipped; the last one, whole JSON without its newline, is read (as Pi does).
            assert [e.id for e in t.entries()] == ["a1b2c3d4"]
        ts.import_bytes("junk.jsonl", b"not a session\n")
        _raises(NotASessionError, lambda: ts.read("junk.jsonl"))

    def test_session_through_the_store(self) -> None:
        ts = self.make_backend().agent("main", create=True).transcripts
        with Session.create_in(ts, "s1.jsonl", cwd="/home/r", session_id_="sid-1") as s:
            first = s.append_message({"role": "user", "content": "one", "timestamp": 1})
            s.append_message({"role": "assistant", "content": [{"type": "text", "text": "two"}], "timestamp": 2})
            s.branch(first)
            s.append_message({"role": "user", "content": "three", "timestamp": 3})
        _raises(AppendError, lambda: s.append_message({"role": "user", "content": "late", "timestamp": 4}))
        with Session.open_in(ts, "s1.jsonl") as s:
            assert s.session_id == "sid-1" and s.entry_count == 4
            with s.transcript() as t:
                ctx = build_context(t.path(), t.leaf_id)
        assert [m["content"] for m in ctx.messages] == ["one", "three"]

    def test_records_written_with_an_entry(self) -> None:
        agent = self.make_backend().agent("main", create=True)
        ledger = agent.log("ledger")
        h = agent.transcripts.create("s1.jsonl", _HEADER, durable=True)
        h.append(_ENTRY, durable=True, records=[(ledger, {"kind": "intent", "actionId": "s:a"})])
        h.close()
        assert list(agent.log("ledger").records()) == [{"kind": "intent", "actionId": "s:a"}]
        assert agent.transcripts.export("s1.jsonl") == _HEADER + _ENTRY

    # -- whole-transcript swaps (an activation) ---------------------------------------------------

    def test_claim_swaps_a_transcript_whole_by_its_hash(self) -> None:
        ts = self.make_backend().agent("main", create=True).transcripts
        one, two = _HEADER + _ENTRY, _HEADER + _ENTRY + _ENTRY.replace(b"a1b2c3d4", b"e5f6a7b8")
        assert ts.sha256("s1.jsonl") is None
        with ts.claim("s1.jsonl", tag="activation-t.tmp") as claim:
            assert claim.sha256() is None
            claim.put(one, expected=None)
            assert claim.sha256() == hashlib.sha256(one).hexdigest() == ts.sha256("s1.jsonl")
            err = _raises(TranscriptChangedError, lambda: claim.put(two, expected=None))  # never over one there
            assert isinstance(err, TranscriptChangedError) and err.actual == hashlib.sha256(one).hexdigest()
            _raises(TranscriptChangedError, lambda: claim.put(two, expected=hashlib.sha256(two).hexdigest()))
            _raises(TranscriptChangedError, lambda: claim.remove(expected="0" * 64))
            assert ts.export("s1.jsonl") == one  # refusals changed nothing
            claim.put(two, expected=hashlib.sha256(one).hexdigest())
            assert ts.export("s1.jsonl") == two
            info = ts.info("s1.jsonl")
            assert info is not None and info.size == len(two)
        h = ts.open("s1.jsonl")  # the claim is released: a writer appends after the new bytes
        h.append(_ENTRY, durable=True)
        h.close()
        assert ts.export("s1.jsonl") == two + _ENTRY
        with ts.claim("s1.jsonl") as claim:
            claim.remove(expected=hashlib.sha256(two + _ENTRY).hexdigest())
            _raises(TranscriptChangedError, lambda: claim.remove(expected=hashlib.sha256(two + _ENTRY).hexdigest()))
        assert not ts.exists("s1.jsonl") and ts.names() == [] and ts.sha256("s1.jsonl") is None

    def test_claim_waits_for_no_writer(self) -> None:
        ts = self.make_backend().agent("main", create=True).transcripts
        writer = ts.create("s1.jsonl", _HEADER, durable=True)
        _raises(LockHeldError, lambda: ts.claim("s1.jsonl"))
        writer.append(_ENTRY, durable=True)  # refused claims took nothing from the writer
        writer.close()
        with ts.claim("s1.jsonl"):
            _raises(LockHeldError, lambda: ts.open("s1.jsonl"))  # no writer while the claim is held
            _raises(LockHeldError, lambda: ts.claim("s1.jsonl"))
        ts.open("s1.jsonl").close()
        assert ts.export("s1.jsonl") == _HEADER + _ENTRY

    def test_claim_takes_over_only_a_writer_it_can_fence(self) -> None:
        backend = self.make_backend()
        ts = backend.agent("main", create=True).transcripts
        writer = ts.create("s1.jsonl", _HEADER, durable=True)
        if not backend.fences_writers:
            _raises(LockHeldError, lambda: ts.claim("s1.jsonl", take_over=True))
            writer.append(_ENTRY, durable=True)
            writer.close()
            assert ts.export("s1.jsonl") == _HEADER + _ENTRY
            return
        with ts.claim("s1.jsonl", take_over=True) as claim:
            _raises(LockHeldError, lambda: writer.append(_ENTRY, durable=True))  # fenced off: nothing written
            claim.put(_HEADER + b"\n", expected=hashlib.sha256(_HEADER).hexdigest())
        _raises(LockHeldError, lambda: writer.append(_ENTRY, durable=True))  # and stays so
        writer.close()
        assert ts.export("s1.jsonl") == _HEADER + b"\n"
        h = ts.open("s1.jsonl")  # a writer that opens it afresh appends after the swapped bytes
        h.append(_ENTRY, durable=True)
        h.close()
        assert ts.export("s1.jsonl") == _HEADER + b"\n" + _ENTRY

    def test_claim_names_are_never_paths(self) -> None:
        ts = self.make_backend().agent("main", create=True).transcripts
        for bad in _BAD_NAMES:
            _raises(UsageError, partial(ts.claim, bad))
            _raises(UsageError, partial(ts.sha256, bad))
        assert ts.names() == []

    # -- the catalog ----------------------------------------------------------------------------

    def test_catalog_upsert_get_copies(self) -> None:
        cat = self.make_backend().agent("main", create=True).catalog
        assert cat.get("agent:main:main") is None and cat.items() == []
        _raises(CatalogEntryError, lambda: cat.upsert("agent:main:main", {"updatedAt": 1}))  # new: no sessionId
        stored = cat.upsert("agent:main:main", {"sessionId": "s1", "updatedAt": 5, "custom": {"a": [1]}})
        assert stored == {"sessionId": "s1", "updatedAt": 5, "custom": {"a": [1]}}
        got = cat.get("agent:main:main")
        assert got is not None
        got["custom"]["a"].append(2)
        assert cat.get("agent:main:main") == stored  # handed out a copy
        cat.upsert("agent:main:main", {"compactionCount": 2})
        assert cat.get("agent:main:main") == {**stored, "compactionCount": 2}  # clocks untouched
        touched = cat.upsert("agent:main:main", {}, touch=True)
        assert touched["updatedAt"] != 5
        assert cat.keys() == ["agent:main:main"]

    def test_catalog_update_delete_and_compare_and_set(self) -> None:
        cat = self.make_backend().agent("main", create=True).catalog
        cat.upsert("k1", {"sessionId": "s1", "updatedAt": 1})
        cat.upsert("k2", {"sessionId": "s2", "updatedAt": 1})
        assert cat.update("k1", lambda cur: {**(cur or {}), "sessionId": "s3"}) == {"sessionId": "s3", "updatedAt": 1}
        assert cat.update("k2", lambda cur: None) is None
        assert cat.keys() == ["k1"]
        assert not cat.compare_and_set("k1", {"sessionId": "s1", "updatedAt": 1}, {"sessionId": "s9", "updatedAt": 2})
        assert cat.compare_and_set("k1", {"sessionId": "s3", "updatedAt": 1}, {"sessionId": "s9", "updatedAt": 2})
        assert cat.get("k1") == {"sessionId": "s9", "updatedAt": 2}
        assert cat.compare_and_set("k3", None, {"sessionId": "s4", "updatedAt": 3})
        assert not cat.compare_and_set("k3", None, {"sessionId": "s5", "updatedAt": 3})
        assert cat.delete("k3") and not cat.delete("k3")
        cat.upsert_many({"k1": {"lastInteractionAt": 7}, "missing": {"lastInteractionAt": 7}})
        assert cat.get("k1") == {"sessionId": "s9", "updatedAt": 2, "lastInteractionAt": 7}
        assert cat.get("missing") is None

    def test_catalog_keeps_its_order(self) -> None:
        cat = self.make_backend().agent("main", create=True).catalog
        for key in ("k3", "k1", "k2"):
            cat.upsert(key, {"sessionId": key, "updatedAt": 1, "zeta": 1, "alpha": 2})
        cat.upsert("k1", {"sessionId": "changed"})  # an update keeps the key's place
        assert cat.keys() == ["k3", "k1", "k2"]
        assert list(cat.get("k1") or {}) == ["sessionId", "updatedAt", "zeta", "alpha"]  # and the fields' order
        cat.delete("k3")
        cat.upsert("k3", {"sessionId": "again", "updatedAt": 2})  # back, at the end
        assert cat.keys() == ["k1", "k2", "k3"]
        assert [k for k, _ in cat.items()] == cat.keys()

    def test_catalog_refuses_bad_keys_and_values(self) -> None:
        cat = self.make_backend().agent("main", create=True).catalog
        for key in ["", "a\x00b", "a\nb", "x" * 5000]:
            _raises(CatalogEntryError, partial(cat.upsert, key, {"sessionId": "s1"}))
        _raises(CatalogEntryError, lambda: cat.upsert("k", {"sessionId": 7}))
        _raises(KurahiError, lambda: cat.upsert("k", {"sessionId": "s", "bad": float("nan")}))
        assert cat.items() == []

    def test_catalog_changes_are_atomic(self) -> None:
        cat = self.make_backend().agent("main", create=True).catalog
        cat.upsert("k", {"sessionId": "s", "n": 0})

        def bump() -> None:
            for _ in range(25):
                cat.update("k", lambda cur: {**(cur or {}), "n": (cur or {}).get("n", 0) + 1})

        threads = [threading.Thread(target=bump) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert (cat.get("k") or {}).get("n") == 100

    def test_catalog_set_entry_checks_inside_the_change(self) -> None:
        cat = self.make_backend().agent("main", create=True).catalog
        assert cat.snapshot() is None
        cat.upsert("k1", {"sessionId": "s1", "updatedAt": 1})
        cat.upsert("k2", {"sessionId": "s2", "updatedAt": 1})
        before = cat.snapshot()
        assert before is not None
        seen: list[Any] = []

        def refuse(current: Any) -> None:
            seen.append(current)
            raise UsageError("not the entry planned against")

        _raises(UsageError, lambda: cat.set_entry("k1", {"sessionId": "new"}, check=refuse))
        assert seen == [{"sessionId": "s1", "updatedAt": 1}] and cat.get("k1") == {"sessionId": "s1", "updatedAt": 1}
        cat.set_entry("k1", {"sessionId": "new", "updatedAt": 2}, check=lambda cur: None, tag="activation-t.tmp")
        assert cat.get("k1") == {"sessionId": "new", "updatedAt": 2} and cat.keys() == ["k1", "k2"]
        cat.set_entry("k3", {"sessionId": "s3", "updatedAt": 3}, check=lambda cur: None)
        cat.set_entry("k3", None, check=lambda cur: None, restore=before)
        cat.set_entry("k1", {"sessionId": "s1", "updatedAt": 1}, check=lambda cur: None, restore=before)
        assert cat.snapshot() == before and cat.keys() == ["k1", "k2"]  # put back as it was
        _raises(CatalogEntryError, lambda: cat.set_entry("", {"sessionId": "x"}, check=lambda cur: None))

    # -- record logs ----------------------------------------------------------------------------

    def test_logs_keep_order_and_are_separate(self) -> None:
        backend = self.make_backend()
        jobs = backend.agent("main", create=True).log("jobs")
        for i in range(5):
            jobs.append({"id": f"job_{i}", "event": "created", "ts": i})
        backend.agent("main", create=True).log("queue").append({"op": "queued", "qid": "q1"})
        backend.agent("other", create=True).log("jobs").append({"id": "elsewhere"})
        assert [r["id"] for r in backend.agent("main", create=True).log("jobs").records()] == [
            f"job_{i}" for i in range(5)
        ]
        assert list(backend.agent("main", create=True).log("queue").records()) == [{"op": "queued", "qid": "q1"}]
        assert list(backend.agent("main", create=True).log("ledger").records()) == []
        rec = next(backend.agent("main", create=True).log("jobs").records())
        rec["id"] = "changed"
        assert next(backend.agent("main", create=True).log("jobs").records())["id"] == "job_0"
        jobs.close()

    def test_log_finds_the_records_of_one_value(self) -> None:
        log = self.make_backend().agent("main", create=True).log("ledger")
        log.append({"kind": "intent", "actionId": "s:1", "ts": 1})
        log.append({"kind": "intent", "actionId": "s:10", "ts": 2})  # s:1 is a prefix of it
        log.append({"kind": "outcome", "actionId": "s:2", "result": "s:1", "ts": 3})  # in another field
        log.append({"kind": "outcome", "actionId": "s:1", "ts": 4})
        log.append({"kind": "intent", "actionId": 'q"1\\é', "ts": 5})  # escaped in JSON
        assert [r["ts"] for r in log.records_where("actionId", "s:1")] == [1, 4]
        assert [r["ts"] for r in log.records_where("actionId", 'q"1\\é')] == [5]
        assert list(log.records_where("actionId", "none")) == []

    def test_log_refuses_what_is_not_json(self) -> None:
        log = self.make_backend().agent("main", create=True).log("ledger")
        _raises(JournalWriteError, lambda: log.append({"x": object()}))
        assert list(log.records()) == []

    # -- the audit chain ------------------------------------------------------------------------

    def test_audit_chain_appends_and_verifies(self) -> None:
        audit = self.make_backend().audit()
        _raises(AuditNotFoundError, audit.verify)
        assert not audit.exists() and audit.head() is None and audit.tail() == []
        recs = [audit.append("owner", "session.reset", {"n": i, "token": "s3cret"}) for i in range(1, 4)]
        assert [r.seq for r in recs] == [1, 2, 3] and audit.exists()
        assert recs[1].prev_hash == recs[0].hash
        assert all(r.details["token"] == "[redacted]" for r in recs)
        result = audit.verify()
        assert result.ok and result.entries == 3 and result.head_hash == recs[2].hash
        head = audit.head()
        assert head is not None and head.hash == recs[2].hash
        assert [r.seq for r in audit.tail(2)] == [2, 3]
        got = audit.get(2)
        assert got is not None and got.hash == recs[1].hash
        assert audit.get(9) is None
        assert audit.is_ancestor(3) and not audit.is_ancestor(4)
        assert audit.is_ancestor(2, of_head=recs[1].hash) and not audit.is_ancestor(3, of_head=recs[1].hash)

    def test_audit_refuses_bad_records_and_writes_nothing(self) -> None:
        audit = self.make_backend().audit()
        audit.append("owner", "gateway.start", {})
        _raises(UsageError, lambda: audit.append("", "x", {}))
        _raises(UsageError, lambda: audit.append("owner", "x", {"a": "y" * (2 << 20)}))
        _raises(CanonicalJSONError, lambda: audit.append("owner", "x", {"f": float("inf")}))
        assert audit.verify().entries == 1

    # -- the backend ------------------------------------------------------------------------------

    def test_capabilities_are_set_and_consistent(self) -> None:
        backend = self.make_backend()
        name = type(backend).__name__
        for flag in ("shared", "fences_writers", "persistent"):
            assert isinstance(getattr(backend, flag, None), bool), f"{name}.{flag} must be set to True or False"
        assert hasattr(backend, "directory"), f"{name}.directory must be set (None: not a home's files)"
        assert backend.directory is None or isinstance(backend.directory, Path)
        assert isinstance(backend.kind, str) and len(backend.kind) > 0  # a label for messages, never tested
        # Shared by gateways: its writers can be fenced, it outlives each, and it knows who is alive.
        if backend.shared:
            assert backend.fences_writers and backend.persistent
        assert (backend.live_instances() is not None) == backend.shared

    def test_directory_holds_the_stores_as_files(self) -> None:
        backend = self.make_backend()
        store = backend.agent("main", create=True)
        store.transcripts.create("s1.jsonl", _HEADER, durable=True).close()
        store.catalog.upsert("agent:main:main", {"sessionId": "s1", "sessionFile": "s1.jsonl"})
        if backend.directory is None:
            assert store.sessions_dir is None  # nothing to read by path
            return
        assert backend.persistent  # files outlive the process
        sessions = store.sessions_dir
        assert sessions is not None and sessions.is_relative_to(backend.directory)
        assert (sessions / "s1.jsonl").read_bytes() == store.transcripts.export("s1.jsonl")
        assert json.loads((sessions / "sessions.json").read_bytes())["agent:main:main"]["sessionId"] == "s1"

    def test_agents(self) -> None:
        backend = self.make_backend()
        for bad in ["", "..", "a/b", "A" * 200, "x\x00"]:
            _raises(UsageError, partial(backend.agent, bad))
        backend.agent("beta", create=True).catalog.upsert("k", {"sessionId": "s"})
        backend.agent("alpha", create=True).transcripts.create("s.jsonl", _HEADER, durable=True).close()
        assert {"alpha", "beta"} <= set(backend.agent_ids())
