"""Every error family carries its exit code and HTTP status, and the CLI and the gateway read them (issue 31)."""

from __future__ import annotations

import pytest

import kurahi.errors as errors
import kurahi.testing.postgres  # noqa: F401  (defines an error of the tree outside kurahi.errors)
from kurahi.cli.common import EXIT, translate_errors
from kurahi.errors import (
    DatabaseUnavailableError,
    JournalWriteError,
    KurahiError,
    ProvenanceError,
    TranscriptReadError,
    TurnInterruptedError,
    UnsafeFileError,
)
from kurahi.gateway.http import from_kurahi

CODES = {EXIT.FAILED, EXIT.USAGE, EXIT.NOT_FOUND, EXIT.INVALID, EXIT.BUSY}


def _tree(cls: type[KurahiError] = KurahiError) -> list[type[KurahiError]]:
    out = [cls]
    for sub in cls.__subclasses__():
        out.extend(c for c in _tree(sub) if c not in out)
    return out


def _concrete() -> list[type[KurahiError]]:
    """Every error class a caller can meet (the private ``_AtFileLine`` mix-in left out)."""
    return [c for c in _tree() if not c.__name__.startswith("_")]


def _instance(cls: type[KurahiError]) -> KurahiError:
    """An instance without calling the class's own ``__init__`` (whose fields differ): the message only."""
    exc = cls.__new__(cls)
    Exception.__init__(exc, f"a {cls.__name__}")
    return exc


def test_the_tree_is_what_is_exported() -> None:
    names = {c.__name__ for c in _concrete() if c.__module__ == "kurahi.errors"}
    assert names == {n for n in errors.__all__ if n[0].isupper() and n != "EXIT"}
    assert "PostgresUnavailableError" not in errors.__all__  # a test helper's, in kurahi.testing.postgres


@pytest.mark.parametrize("cls", _concrete(), ids=lambda c: c.__name__)
def test_every_error_has_an_exit_code_and_an_http_status(cls: type[KurahiError]) -> None:
    assert cls.exit_code in CODES
    assert 400 <= cls.http_status <= 599
    assert cls.http_code and cls.http_code == cls.http_code.lower()
    assert cls.http_retry_after is None or cls.http_retry_after > 0


@pytest.mark.parametrize("cls", _concrete(), ids=lambda c: c.__name__)
def test_the_cli_and_the_gateway_give_the_familys_answer(
    cls: type[KurahiError], capsys: pytest.CaptureFixture[str]
) -> None:
    exc = _instance(cls)
    with pytest.raises(SystemExit) as out, translate_errors():
        raise exc
    assert out.value.code == cls.exit_code
    assert f"a {cls.__name__}" in capsys.readouterr().err
    if cls is TurnInterruptedError:
        exc = TurnInterruptedError("held elsewhere", stored=False, idempotency_key="k", unavailable=False)
    err = from_kurahi(exc)
    assert (err.status, err.code) == (cls.http_status, cls.http_code)
    want = {"Retry-After": str(cls.http_retry_after)} if cls.http_retry_after else {}
    if cls is TurnInterruptedError:
        want["Idempotency-Key"] = "k"  # a stopped turn's key is in the header too (docs/backends.md)
    assert err.headers == want


def test_the_two_decisions_of_issue_31() -> None:
    # A file of the home refused as unsafe: the CLI's user can put it right (invalid input);
    # an HTTP client cannot (the server's file), told so by name rather than as a bug.
    assert (UnsafeFileError.exit_code, UnsafeFileError.http_status, UnsafeFileError.http_code) == (
        EXIT.INVALID,
        500,
        "unsafe_file",
    )
    # A transcript that cannot be read: not found for the CLI, the home's damage for the gateway.
    err = from_kurahi(TranscriptReadError("read failed: Input/output error", path="/h/s.jsonl"))
    assert (err.status, err.code, err.message) == (
        500,
        "transcript_unreadable",
        "/h/s.jsonl: read failed: Input/output error",
    )


def test_special_cases_keep_their_fields() -> None:
    turn = from_kurahi(
        TurnInterruptedError("db away", stored=True, idempotency_key="k1", unavailable=True, retry_after=2)
    )
    assert (turn.status, turn.code, turn.headers["Retry-After"]) == (503, "store_unavailable", "2")
    assert turn.extra == {"stored": True, "idempotencyKey": "k1"}
    held = from_kurahi(TurnInterruptedError("held", stored=None, idempotency_key=None, unavailable=False))
    assert (held.status, held.code, held.extra) == (409, "busy", {"stored": None, "idempotencyKey": None})
    try:
        try:
            raise DatabaseUnavailableError("connection refused", where="postgresql://k@h/db")
        except DatabaseUnavailableError as cause:
            raise JournalWriteError("not appended", path="ledger.jsonl") from cause
    except JournalWriteError as exc:
        away = from_kurahi(exc)
    assert (away.status, away.code, away.headers) == (503, "store_unavailable", {"Retry-After": "1"})


def test_what_no_family_claims_is_internal_and_named() -> None:
    err = from_kurahi(JournalWriteError("not appended", path="ledger.jsonl"))
    assert (err.status, err.code, err.message) == (500, "internal", "JournalWriteError: ledger.jsonl: not appended")


@pytest.mark.parametrize(("kind", "code"), [("usage", 2), ("not-found", 3), ("invalid", 4)])
def test_a_provenance_errors_kind_picks_its_exit_code(kind: str, code: int) -> None:
    with pytest.raises(SystemExit) as out, translate_errors():
        raise ProvenanceError("no session key 'k'", kind=kind)
    assert out.value.code == code
