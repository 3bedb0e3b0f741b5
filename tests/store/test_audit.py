"""The hash-chained audit log: append, verify, every kind of tampering, torn tails, redaction, modes."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import rfc8785

import kurahi.gateway as gateway_pkg
from kurahi.errors import (
    AuditChainError,
    AuditNotFoundError,
    AuditWriteError,
    CanonicalJSONError,
    LockError,
    LockHeldError,
    UsageError,
)
from kurahi.fs import durable as fsio
from kurahi.fs.locks import FileLock
from kurahi.js.jcs import ZERO_HASH, chain_hash
from kurahi.store.audit import log_file as audit_mod
from kurahi.store.audit.log_file import AuditChain, chain_path
from kurahi.store.audit.quick_verify import scan_file
from kurahi.store.audit.record import MAX_LINE_BYTES, ChainVerification, LineChecker, build_record
from kurahi.store.redact import REDACTED, looks_secret, redact

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def ticking_clock(start: datetime = datetime(2026, 11, 30, 10, 47, 14, 270000, tzinfo=UTC)) -> Callable[[], datetime]:
    state = {"now": start}

    def clock() -> datetime:
        state["now"] += timedelta(milliseconds=1)
        return state["now"]

    return clock


@pytest.fixture
def chain(tmp_path: Path) -> AuditChain:
    return AuditChain(chain_path(tmp_path / "home"), clock=ticking_clock())


def fill(chain: AuditChain, n: int) -> None:
    events = [
        ("gateway", "gateway.start", {"pid": 4242, "port": 8787}),
        ("owner", "config.apply", {"hash": "ab" * 32, "changed": ["model"]}),
        ("owner", "device.pair", {"device": "phone", "scopes": ["chat"]}),
        ("device:phone", "session.reset", {"sessionKey": "agent:main:main"}),
        ("cli", "job.running", {"jobId": "j1", "note": "résumé 😀", "ratio": 0.25}),  # a float: the general path
        ("owner", "device.revoke", {"device": "phone"}),
    ]
    for i in range(n):
        actor, action, details = events[i % len(events)]
        chain.append(actor, action, {**details, "i": i})


def lines_of(chain: AuditChain) -> list[bytes]:
    return chain.path.read_bytes().splitlines(keepends=True)


def write_lines(chain: AuditChain, lines: list[bytes]) -> None:
    chain.path.write_bytes(b"".join(lines))


def recompute(rec: dict[str, Any]) -> str:
    """What anyone can do with the standard library and an RFC 8785 package."""
    body = {k: v for k, v in rec.items() if k != "hash"}
    return hashlib.sha256(rec["prevHash"].encode("ascii") + rfc8785.dumps(body)).hexdigest()


# -- appending -------------------------------------------------------------------------------


def test_append_chains_records_that_anyone_can_recompute(chain: AuditChain) -> None:
    fill(chain, 12)
    prev = ZERO_HASH
    for seq, raw in enumerate(lines_of(chain), 1):
        assert raw.endswith(b"\n")
        rec = json.loads(raw)
        assert set(rec) == {"seq", "ts", "actor", "action", "details", "prevHash", "hash"}
        assert rec["seq"] == seq and rec["prevHash"] == prev
        assert TS.match(rec["ts"]), rec["ts"]
        assert rec["hash"] == recompute(rec)
        assert raw == rfc8785.dumps(rec) + b"\n"  # every line is itself canonical
        prev = rec["hash"]
    result = chain.verify()
    assert result == ChainVerification(ok=True, path=str(chain.path), entries=12, head_seq=12, head_hash=prev)


def test_append_returns_the_record_written(chain: AuditChain) -> None:
    first = chain.append("gateway", "gateway.start", {"port": 8787})
    second = chain.append("owner", "session.reset")
    assert (first.seq, first.prev_hash, first.ts) == (1, ZERO_HASH, "2026-11-30T10:47:14.271Z")
    assert second.prev_hash == first.hash and second.details == {}
    assert second.hash == chain_hash(first.hash, second.body())
    assert chain.head() == second
    assert chain.get(1) == first and chain.get(2) == second and chain.get(3) is None and chain.get(0) is None
    assert lines_of(chain) == [first.to_line(), second.to_line()]


def test_build_record_is_pure_and_known(tmp_path: Path) -> None:
    rec = build_record(None, "gateway", "gateway.start", {"port": 8787}, ts="2026-11-30T10:47:14.270Z")
    body = (
        b'{"action":"gateway.start","actor":"gateway","details":{"port":8787},'
        b'"prevHash":"' + ZERO_HASH.encode() + b'","seq":1,"ts":"2026-11-30T10:47:14.270Z"}'
    )
    assert rec.hash == hashlib.sha256(ZERO_HASH.encode() + body).hexdigest()
    assert rec.to_line() == body.replace(b',"prevHash"', b',"hash":"' + rec.hash.encode() + b'","prevHash"') + b"\n"


def test_empty_and_missing_chains(chain: AuditChain) -> None:
    assert chain.head() is None and chain.tail(5) == [] and chain.get(1) is None
    assert not chain.is_ancestor(1)
    with pytest.raises(AuditNotFoundError, match="no audit chain"):
        chain.verify()
    chain.path.parent.mkdir(parents=True)
    chain.path.touch()
    assert chain.verify() == ChainVerification(ok=True, path=str(chain.path), entries=0)
    assert chain.head() is None


def test_tail_reads_from_the_end(chain: AuditChain) -> None:
    fill(chain, 30)
    assert [r.seq for r in chain.tail(3)] == [28, 29, 30]
    assert [r.seq for r in chain.tail(100)] == list(range(1, 31))
    assert chain.tail(0) == []


def test_tail_and_head_pass_over_a_long_last_line(chain: AuditChain) -> None:
    fill(chain, 3)
    chain.append("owner", "config.apply", {"blob": "x" * 300_000})  # longer than the backward read's first chunk
    assert chain.head() is not None and chain.head().seq == 4  # type: ignore[union-attr]
    assert [r.seq for r in chain.tail(2)] == [3, 4]
    assert chain.append("owner", "session.reset").seq == 5


@pytest.mark.parametrize(
    "actor,action,details,error",
    [
        ("", "gateway.start", None, UsageError),
        ("owner", "  ", None, UsageError),
        ("owner", "x", ["not", "an", "object"], UsageError),
        ("owner", "x", {1: "int key"}, UsageError),
        ("owner", "x", {"ratio": float("nan")}, CanonicalJSONError),
        ("owner", "x", {"big": 2**60}, CanonicalJSONError),
        ("owner", "x", {"blob": "x" * MAX_LINE_BYTES}, UsageError),
    ],
)
def test_bad_input_is_refused_before_the_file_is_touched(
    chain: AuditChain, actor: str, action: str, details: Any, error: type[Exception]
) -> None:
    with pytest.raises(error):
        chain.append(actor, action, details)
    assert not chain.path.exists()


def test_a_nan_error_names_the_field(chain: AuditChain) -> None:
    with pytest.raises(CanonicalJSONError) as info:
        chain.append("owner", "x", {"stats": {"ratio": float("inf")}})
    assert info.value.field == "$.details.stats.ratio"


# -- verification: every kind of tampering is named at the right record ----------------------


def edit_details(lines: list[bytes]) -> list[bytes]:
    rec = json.loads(lines[4])
    rec["details"]["i"] = 999
    lines[4] = rfc8785.dumps(rec) + b"\n"
    return lines


def edit_and_rehash(lines: list[bytes]) -> list[bytes]:
    rec = json.loads(lines[4])
    rec["actor"] = "mallory"
    rec["hash"] = recompute(rec)
    lines[4] = rfc8785.dumps(rec) + b"\n"
    return lines


def forge_insert(lines: list[bytes]) -> list[bytes]:
    prev = json.loads(lines[3])
    forged = {
        "seq": 5,
        "ts": prev["ts"],
        "actor": "mallory",
        "action": "device.pair",
        "details": {},
        "prevHash": prev["hash"],
    }
    forged["hash"] = recompute(forged)
    return [*lines[:4], rfc8785.dumps(forged) + b"\n", *lines[4:]]


def replay_insert(lines: list[bytes]) -> list[bytes]:
    return [*lines[:4], lines[2], *lines[4:]]


def delete(lines: list[bytes]) -> list[bytes]:
    return lines[:4] + lines[5:]


def delete_and_renumber(lines: list[bytes]) -> list[bytes]:
    out = lines[:4]
    for raw in lines[5:]:
        rec = json.loads(raw)
        rec["seq"] -= 1
        out.append(rfc8785.dumps(rec) + b"\n")
    return out


def swap(lines: list[bytes]) -> list[bytes]:
    lines[4], lines[5] = lines[5], lines[4]
    return lines


def cut_middle_line(lines: list[bytes]) -> list[bytes]:
    lines[4] = lines[4][: len(lines[4]) // 2] + b"\n"
    return lines


def cut_bytes_across_lines(lines: list[bytes]) -> list[bytes]:
    # Bytes removed from the end of line 5 up into line 6: the two fragments become one line.
    joined = lines[4][:-40] + lines[5][60:]
    return [*lines[:4], joined, *lines[6:]]


def torn_last(lines: list[bytes]) -> list[bytes]:
    lines[-1] = lines[-1][:-10]
    return lines


def not_json(lines: list[bytes]) -> list[bytes]:
    lines[4] = b"this is not json\n"
    return lines


def nested_too_deeply(lines: list[bytes]) -> list[bytes]:
    lines[4] = b'{"seq":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"  # deeper than Python's decoders go
    return lines


def blank(lines: list[bytes]) -> list[bytes]:
    return [*lines[:4], b"\n", *lines[4:]]


def reserialised(lines: list[bytes]) -> list[bytes]:
    lines[4] = json.dumps(json.loads(lines[4]), indent=None).encode() + b"\n"  # spaces after ':' and ','
    return lines


def duplicate_key(lines: list[bytes]) -> list[bytes]:
    lines[4] = lines[4].replace(b'{"action":', b'{"action":"x","action":', 1)
    return lines


def extra_field(lines: list[bytes]) -> list[bytes]:
    rec = json.loads(lines[4])
    rec["note"] = "hi"
    rec["hash"] = recompute(rec)
    lines[4] = rfc8785.dumps(rec) + b"\n"
    return lines


def wrong_type(lines: list[bytes]) -> list[bytes]:
    rec = json.loads(lines[4])
    rec["seq"] = "5"
    lines[4] = rfc8785.dumps(rec) + b"\n"
    return lines


def first_prev_not_zero(lines: list[bytes]) -> list[bytes]:
    rec = json.loads(lines[0])
    rec["prevHash"] = "1" * 64
    rec["hash"] = recompute(rec)
    lines[0] = rfc8785.dumps(rec) + b"\n"
    return lines


def edit_float_record(lines: list[bytes]) -> list[bytes]:
    rec = json.loads(lines[4])  # seq 5 carries "ratio": 0.25 (general path)
    rec["details"]["ratio"] = 0.5
    lines[4] = rfc8785.dumps(rec) + b"\n"
    return lines


def unsafe_integer(lines: list[bytes]) -> list[bytes]:
    lines[4] = lines[4].replace(b'"i":4', b'"i":9007199254740993', 1)
    return lines


TAMPERING = [
    # (how, first bad seq, first bad line, words in the reason)
    (edit_details, 5, 5, "hash does not match"),
    (edit_and_rehash, 6, 6, "prevHash does not match the hash of seq 5"),
    (forge_insert, 6, 6, "seq 5 where 6 was expected"),
    (replay_insert, 5, 5, "seq 3 where 5 was expected"),
    (delete, 5, 5, "seq 6 where 5 was expected: record(s) missing"),
    (delete_and_renumber, 5, 5, "prevHash does not match the hash of seq 4"),
    (swap, 5, 5, "seq 6 where 5 was expected"),
    (cut_middle_line, 5, 5, "not JSON"),
    (cut_bytes_across_lines, 5, 5, "not JSON"),
    (torn_last, 10, 10, "torn last line"),
    (not_json, 5, 5, "not JSON"),
    (nested_too_deeply, 5, 5, "not JSON"),
    (blank, 5, 5, "blank line"),
    (reserialised, 5, 5, "canonical form"),
    (duplicate_key, 5, 5, "canonical form"),
    (extra_field, 5, 5, "unknown field(s) ['note']"),
    (wrong_type, 5, 5, "seq must be an integer"),
    (first_prev_not_zero, 1, 1, "not 64 zeros"),
    (edit_float_record, 5, 5, "hash does not match"),
    (unsafe_integer, 5, 5, "no canonical form"),
]


@pytest.mark.parametrize("tamper,bad_seq,bad_line,words", TAMPERING, ids=[t[0].__name__ for t in TAMPERING])
def test_tampering_is_named_at_the_first_bad_record(
    chain: AuditChain,
    tamper: Callable[[list[bytes]], list[bytes]],
    bad_seq: int,
    bad_line: int,
    words: str,
) -> None:
    fill(chain, 10)
    good = chain.verify()
    assert good.ok and good.entries == 10
    write_lines(chain, tamper(lines_of(chain)))
    result = chain.verify()
    assert not result.ok
    assert (result.first_bad_seq, result.first_bad_line) == (bad_seq, bad_line), result.reason
    assert words in (result.reason or ""), result.reason
    assert result.entries == bad_seq - 1 and result.head_seq == (bad_seq - 1 or None)
    assert result.to_dict()["firstBadSeq"] == bad_seq
    assert not chain.is_ancestor(1)  # the file's head is not reached by a verified chain


@pytest.mark.parametrize(
    "tamper", [None, *(t[0] for t in TAMPERING)], ids=["sound", *(t[0].__name__ for t in TAMPERING)]
)
def test_the_quick_path_and_the_rules_give_the_same_verdict(
    chain: AuditChain, tamper: Callable[[list[bytes]], list[bytes]] | None
) -> None:
    """The quick path (kept for its speed, BENCHMARKS.md) answers exactly as LineChecker on every line does."""
    fill(chain, 10)
    if tamper is not None:
        write_lines(chain, tamper(lines_of(chain)))
    data = chain.path.read_bytes()
    checker = LineChecker()
    *complete, fragment = data.split(b"\n")
    number = 0
    for number, line in enumerate(complete, 1):  # after the loop, number + 1 is a torn line's
        if not checker.feed(line, number):
            break
    else:
        if fragment:
            checker.torn(fragment, number + 1)
    fd = os.open(chain.path, os.O_RDONLY)
    try:
        quick = scan_file(fd, len(data))
    finally:
        os.close(fd)
    assert (quick.entries, quick.prev_hash, quick.bad_line, quick.reason) == (
        checker.entries,
        checker.prev_hash,
        checker.bad_line,
        checker.reason,
    )


@pytest.mark.parametrize("at", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
def test_edit_anywhere_is_found_on_both_paths(chain: AuditChain, at: int) -> None:
    fill(chain, 10)
    lines = lines_of(chain)
    rec = json.loads(lines[at - 1])
    rec["action"] += "!"
    lines[at - 1] = rfc8785.dumps(rec) + b"\n"
    write_lines(chain, lines)
    result = chain.verify()
    assert (result.ok, result.first_bad_seq, result.first_bad_line) == (False, at, at)


def test_to_dict_has_camel_case_keys(chain: AuditChain) -> None:
    fill(chain, 2)
    assert chain.verify().to_dict() == {
        "ok": True,
        "path": str(chain.path),
        "entries": 2,
        "headSeq": 2,
        "headHash": chain.head().hash,  # type: ignore[union-attr]
        "firstBadSeq": None,
        "firstBadLine": None,
        "reason": None,
    }


def test_cutting_the_end_needs_an_anchor(chain: AuditChain) -> None:
    fill(chain, 10)
    anchor = chain.head()
    assert anchor is not None
    write_lines(chain, lines_of(chain)[:7])
    assert chain.verify().ok  # a shorter chain is still a chain...
    assert not chain.is_ancestor(3, of_head=anchor.hash)  # ...but not the one whose head was seen


def test_is_ancestor(chain: AuditChain) -> None:
    fill(chain, 10)
    r4 = chain.get(4)
    assert r4 is not None
    assert chain.is_ancestor(1) and chain.is_ancestor(10) and not chain.is_ancestor(11) and not chain.is_ancestor(0)
    assert chain.is_ancestor(4, of_head=r4.hash) and chain.is_ancestor(1, of_head=r4.hash)
    assert not chain.is_ancestor(5, of_head=r4.hash)
    assert not chain.is_ancestor(1, of_head="f" * 64)
    write_lines(chain, edit_details(lines_of(chain)))  # seq 5 broken
    assert chain.is_ancestor(4, of_head=r4.hash)  # the chain up to 4 still holds
    assert not chain.is_ancestor(4)  # but the file's head is not on a verified chain


def test_get_finds_records_when_lines_shifted(chain: AuditChain) -> None:
    fill(chain, 6)
    write_lines(chain, [b"garbage\n", *lines_of(chain)])
    found = chain.get(3)
    assert found is not None and found.seq == 3
    assert chain.get(7) is None


def test_a_long_chain_verifies_and_names_a_late_bad_record(chain: AuditChain) -> None:
    fill(chain, 400)
    single = chain.verify()
    assert single.ok and single.entries == 400
    lines = lines_of(chain)
    rec = json.loads(lines[300])
    rec["details"]["i"] = -1
    lines[300] = rfc8785.dumps(rec) + b"\n"
    write_lines(chain, lines)
    result = chain.verify()
    assert (result.first_bad_seq, result.first_bad_line, result.head_seq) == (301, 301, 300)


# -- torn tails and damaged tails --------------------------------------------------------------


def test_append_moves_a_torn_tail_aside_and_records_it(chain: AuditChain) -> None:
    fill(chain, 4)
    with open(chain.path, "ab") as fh:
        fh.write(b'{"action":"gateway.st')  # a crash cut the write short
    broken = chain.verify()
    assert (broken.ok, broken.first_bad_seq, broken.first_bad_line) == (False, 5, 5)
    assert chain.head() is not None and chain.head().seq == 4  # type: ignore[union-attr]

    record = chain.append("gateway", "gateway.start", {"port": 1})
    assert record.seq == 6
    sidecars = sorted(chain.path.parent.glob("chain.jsonl.torn-*"))
    assert len(sidecars) == 1 and sidecars[0].read_bytes() == b'{"action":"gateway.st'
    assert stat.S_IMODE(sidecars[0].stat().st_mode) == 0o600
    repair = chain.get(5)
    assert repair is not None and (repair.actor, repair.action) == ("audit", "audit.repair")
    assert repair.details == {
        "reason": "torn last line moved aside",
        "afterSeq": 4,
        "bytes": 21,
        "sha256": hashlib.sha256(b'{"action":"gateway.st').hexdigest(),
        "sidecar": sidecars[0].name,
    }
    assert chain.verify().ok and chain.verify().entries == 6


def test_a_torn_first_line_is_moved_aside_too(chain: AuditChain) -> None:
    chain.path.parent.mkdir(parents=True)
    chain.path.write_bytes(b'{"seq":1,"ts":"2026')
    record = chain.append("cli", "session.reset")
    assert record.seq == 2 and chain.get(1).action == "audit.repair"  # type: ignore[union-attr]
    assert chain.verify().ok


@pytest.mark.parametrize(
    "damage",
    [
        lambda lines: [*lines[:-1], b"not json at all\n"],
        lambda lines: [*lines, b"\n"],
        lambda lines: edit_details(lines)[:5],  # the last complete line fails its own hash
        lambda lines: [*lines[:-1], lines[-1].replace(b'"seq":', b'"seq": ', 1)],  # not canonical
    ],
    ids=["not-json", "blank", "edited", "not-canonical"],
)
def test_append_refuses_to_chain_onto_a_damaged_last_record(
    chain: AuditChain, damage: Callable[[list[bytes]], list[bytes]]
) -> None:
    fill(chain, 6)
    write_lines(chain, damage(lines_of(chain)))
    before = chain.path.read_bytes()
    with pytest.raises(AuditChainError) as info:
        chain.append("owner", "session.reset")
    number = len(before.splitlines())
    assert info.value.line == number
    assert f"{chain.path}:{number}:" in str(info.value) and "refusing to chain onto it" in str(info.value)
    assert chain.path.read_bytes() == before
    assert not list(chain.path.parent.glob("*.torn-*"))


def test_tail_names_a_line_that_is_not_a_record(chain: AuditChain) -> None:
    fill(chain, 3)
    write_lines(chain, [*lines_of(chain)[:2], b"[1,2]\n"])
    with pytest.raises(AuditChainError) as info:
        chain.tail(5)
    assert info.value.line == 3


# -- failures while writing -------------------------------------------------------------------


def test_a_short_write_is_continued(chain: AuditChain, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every append-only writer shares fsio.append_durably: a short write carries on to the end.
    fill(chain, 3)
    before = chain.path.read_bytes()
    real_write = fsio.ops.write
    monkeypatch.setattr(fsio.ops, "write", lambda fd, data: real_write(fd, bytes(data)[:17]))
    assert chain.append("owner", "session.reset").seq == 4
    monkeypatch.setattr(fsio.ops, "write", real_write)
    assert chain.path.read_bytes().startswith(before) and chain.verify().ok and chain.verify().entries == 4


def test_a_short_write_then_an_error_is_cut_back(chain: AuditChain, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(chain, 3)
    before = chain.path.read_bytes()
    real_write = fsio.ops.write
    calls = []

    def short_then_enospc(fd: int, data: bytes) -> int:
        calls.append(1)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, bytes(data)[:17])

    monkeypatch.setattr(fsio.ops, "write", short_then_enospc)
    with pytest.raises(AuditWriteError, match="No space left"):
        chain.append("owner", "session.reset")
    assert chain.path.read_bytes() == before
    monkeypatch.setattr(fsio.ops, "write", real_write)
    assert chain.append("owner", "session.reset").seq == 4 and chain.verify().ok


def test_a_failed_fdatasync_is_cut_back(chain: AuditChain, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(chain, 3)
    before = chain.path.read_bytes()

    def eio(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(fsio.ops, "fdatasync", eio)
    with pytest.raises(AuditWriteError, match="Input/output error"):
        chain.append("owner", "session.reset")
    assert chain.path.read_bytes() == before


def test_a_held_lock_is_reported(chain: AuditChain) -> None:
    fill(chain, 1)
    quick = AuditChain(chain.path, lock_timeout=0)
    with FileLock(chain.lock_path).acquire():
        with pytest.raises(LockHeldError):
            quick.append("owner", "session.reset")
        assert quick.verify().ok  # readers do not wait for the lock forever: they read what is whole


# -- many processes ------------------------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import sys
    from kurahi.store.audit.log_file import AuditChain
    chain = AuditChain(sys.argv[1], lock_timeout=None)
    for i in range(int(sys.argv[3])):
        chain.append("device:" + sys.argv[2], "job.running", {"worker": sys.argv[2], "i": i})
    """
)


def test_concurrent_appends_from_several_processes(chain: AuditChain) -> None:
    workers, each = 4, 50
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(chain.path), f"w{n}", str(each)]) for n in range(workers)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * workers
    result = chain.verify()
    assert result.ok and result.entries == workers * each, result.reason
    records = [json.loads(raw) for raw in lines_of(chain)]
    assert [r["seq"] for r in records] == list(range(1, workers * each + 1))
    for n in range(workers):
        mine = [r["details"]["i"] for r in records if r["details"]["worker"] == f"w{n}"]
        assert mine == list(range(each))  # each process's records in its own order
    assert not chain.lock_path.exists()


# -- secrets -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        *("token", "secret", "password", "apiKey", "api_key", "API-KEY", "authorization", "Authorization"),
        *("ownerToken", "pairingToken", "access_token", "clientSecret", "dbPassword", "cookie", "privateKey"),
    ],
)
def test_secret_looking_keys(key: str) -> None:
    assert looks_secret(key)


@pytest.mark.parametrize("key", ["inputTokens", "maxTokens", "tokenCount", "sessionKey", "device", "keyId", "author"])
def test_keys_that_are_not_secrets(key: str) -> None:
    assert not looks_secret(key)


def test_secrets_never_enter_the_chain(chain: AuditChain) -> None:
    details = {
        "token": "tok-111",
        "apiKey": "key-222",
        "api_key": "key-333",
        "Authorization": "Basic czM=",
        "nested": {"ownerToken": "tok-444", "list": [{"password": "pw-555"}, "Bearer tok-666"]},
        "password": {"even": "structured-777"},
        "inputTokens": 1234,
        "device": "phone",
    }
    record = chain.append("owner", "device.pair", details)
    raw = chain.path.read_bytes()
    for secret in ("tok-111", "key-222", "key-333", "czM=", "tok-444", "pw-555", "tok-666", "structured-777"):
        assert secret.encode() not in raw
    assert record.details == {
        "token": REDACTED,
        "apiKey": REDACTED,
        "api_key": REDACTED,
        "Authorization": REDACTED,
        "nested": {"ownerToken": REDACTED, "list": [{"password": REDACTED}, REDACTED]},
        "password": REDACTED,
        "inputTokens": 1234,
        "device": "phone",
    }
    assert details["token"] == "tok-111"  # the caller's object is not changed
    assert record.hash == recompute(json.loads(raw))  # redacted before hashing
    assert chain.verify().ok


def test_redact_copies() -> None:
    assert redact({"a": ("x", {"secret": 1})}) == {"a": ["x", {"secret": REDACTED}]}
    assert redact("bearer abc") == REDACTED and redact("a bearer") == "a bearer" and redact(3) == 3


# -- file modes ----------------------------------------------------------------------------------


def test_modes_directory_0700_file_0600(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        chain = AuditChain(chain_path(tmp_path / "home"))
        chain.append("gateway", "gateway.start")
    finally:
        os.umask(old)
    assert stat.S_IMODE(chain.path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(chain.path.stat().st_mode) == 0o600


def test_a_loose_existing_file_is_tightened(chain: AuditChain) -> None:
    fill(chain, 1)
    chain.path.chmod(0o644)
    chain.append("owner", "session.reset")
    assert stat.S_IMODE(chain.path.stat().st_mode) == 0o600


def test_verify_works_where_no_lock_file_can_be_made(chain: AuditChain, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(chain, 5)

    class NoLock(FileLock):
        def acquire(self, *, timeout: float | None = 0.0, poll: float = 0.005) -> FileLock:
            raise LockError("cannot open lock file: Read-only file system", path=self.path)

    monkeypatch.setattr(audit_mod, "FileLock", NoLock)  # a read-only copy of someone's home, say
    assert chain.verify().ok


# -- the room's public surface -----------------------------------------------------------------


def test_gateway_public_surface() -> None:
    exported = set(gateway_pkg.__all__)
    assert all(hasattr(gateway_pkg, n) for n in exported), sorted(n for n in exported if not hasattr(gateway_pkg, n))
    assert {"AuditChain", "AuditRecord", "ChainVerification", "chain_path", "redact"} <= exported
    assert gateway_pkg.AuditChain is AuditChain
