"""JSON nested deeper than Python's decoders go, in every file Kurahi reads back.

Node's JSON.parse reads 100,000 levels; msgspec and the standard library raise
RecursionError long before. Each reader must treat such a document as the unparseable
input it is for Kurahi (a clear error or a skipped line), never crash.
The transcript readers, the catalog and the continuity report are covered where they are
fuzzed, and the audit chain in its tampering table; this file covers the rest. (The
signing key and the hash cache cannot get there: their schemas refuse any nesting first.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kurahi.agent.config import load_config
from kurahi.errors import ConfigError
from kurahi.lineage.provenance import _scan_lines
from kurahi.store.record_log import FileRecordLog
from support.gateways import make_gateway_home, serve_in_thread

DEEP = b"[" * 100_000 + b"]" * 100_000


def _deep_object(key: str = "a") -> bytes:
    return b'{"' + key.encode() + b'":' + DEEP + b"}"


def test_a_deep_config_is_a_config_error(tmp_path: Path) -> None:
    # Deep where the schema lets any value through (an agent's fields are checked after).
    (tmp_path / "config.json").write_bytes(b'{"agents":{"alice":{"zzz":' + DEEP + b"}}}")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(tmp_path)


def test_a_deep_journal_line_is_skipped_like_any_unparseable_line(tmp_path: Path) -> None:
    p = tmp_path / "queue.jsonl"
    p.write_bytes(b'{"n":1}\n' + _deep_object() + b'\n{"n":2}\n')
    assert [r["n"] for r in FileRecordLog(p).records()] == [1, 2]


def test_provenance_skips_a_deep_line_that_holds_the_phrase(tmp_path: Path) -> None:
    deep = b'{"type":"message","phrase":"blue heron",' + b'"x":' + DEEP + b"}"
    good = b'{"type":"message","message":{"role":"user","content":"a blue heron"}}'
    found = list(_scan_lines(deep + b"\n" + good + b"\n", ["blue heron"]))
    assert [(k, line) for k, line, _ in found] == [(0, 2)]


@pytest.fixture
def served(tmp_path: Path) -> Any:
    with serve_in_thread(make_gateway_home(tmp_path)) as s:
        yield s


def test_config_apply_on_a_deep_stored_config_is_refused_and_changes_nothing(served: Any) -> None:
    deep = b'{"agents":{"alice":{"zzz":' + DEEP + b"}}}"
    served.home.config.write_bytes(deep)  # edited by hand while the gateway runs
    with served.client() as c:
        r = c.post("/api/config/apply", json={"patch": {"defaults": {"queue": {"cap": 10}}}})
    assert r.status_code == 422, r.text
    assert "does not parse" in r.json()["error"]["message"]
    assert served.home.config.read_bytes() == deep


def test_a_deep_request_body_is_a_clear_client_error(served: Any) -> None:
    with served.client() as c:
        r = c.post("/api/config/apply", content=_deep_object("patch"), headers={"content-type": "application/json"})
    assert 400 <= r.status_code < 500, r.text
    assert r.json()["error"]["code"]
