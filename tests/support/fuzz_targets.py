"""Fuzz targets: Kurahi's parsers and verifiers on arbitrary bytes.

Each target takes one input (bytes) and feeds it to the library the way Kurahi itself
would get such bytes: a transcript file (read, projected, checked), a ``sessions.json``, two transcripts to stitch, a
manifest or a report, an HTTP request body. The rule is the same for all of them: the
answer is a value or one of Kurahi's own clear errors (a :class:`KurahiError`, or for a
request body the 4xx FastAPI and the gateway make of a bad body), never another
exception and never a hang. A target lets anything else propagate, so atheris reports it
as a crash and the corpus replay test fails on it.

Some targets also check an answer against a second way of getting it (the C scanner
against the Python one, the backward reader against the full scan, what a config apply
writes against what loads back). A mismatch raises :class:`Mismatch`, which is a crash
too: the rule is not only "no traceback" but "no wrong answer we can see".

The targets that need files (stitch, the backward projection, report files, a gateway's
home) work in a scratch directory set with :func:`use_scratch`; the runner puts it on
``/dev/shm`` so fsyncs cost nothing.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import pydantic
from fastapi import FastAPI
from fastapi.dependencies.utils import request_body_to_args
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from kurahi.agent.config import load_config
from kurahi.context.files import project_file
from kurahi.context.project import build_context
from kurahi.continuity.manifest import verify_manifest
from kurahi.continuity.report import SUITE, VERSION, read_report, verify_report
from kurahi.errors import CanonicalJSONError, KurahiError, ManifestError
from kurahi.gateway import models as m
from kurahi.gateway.app import create_app
from kurahi.gateway.service import Gateway
from kurahi.js.jcs import canonical_json
from kurahi.lineage.check import check
from kurahi.lineage.stitch import stitch
from kurahi.pi.read import native
from kurahi.pi.transcript import Transcript
from kurahi.resident.home import Home
from kurahi.resident.init import init_home
from kurahi.store.catalog_format import parse_catalog, serialize_catalog

__all__ = ["SPLIT", "TARGETS", "Mismatch", "Target", "use_scratch"]

T = TypeVar("T")

SPLIT = b"\n--8<--\n"
"""Separates the two transcripts of a stitch input (BEFORE, then AFTER)."""


class Mismatch(AssertionError):
    """Two ways of computing the same answer disagree (a crash for the fuzzer, like a foreign error)."""


@dataclass(frozen=True)
class Target:
    """One fuzz target: a name, what it exercises, and the function that takes an input."""

    name: str
    doc: str
    run: Callable[[bytes], None]
    max_len: int = 8192
    """Longest input libFuzzer makes (the seeds fit: a longer seed would be cut and lose its shape)."""
    corpus_budget: int = 250_000
    """Bytes of found inputs the kept corpus holds (the smallest first); seeds and crashes come on top."""


_scratch: list[Path] = []


def use_scratch(directory: Path) -> None:
    """Where targets that need files put them (created if missing; the caller removes it)."""
    directory.mkdir(parents=True, exist_ok=True)
    _scratch[:] = [directory]
    _gateway.cache_clear()


def _dir(name: str) -> Path:
    if not _scratch:
        raise RuntimeError("fuzz_targets.use_scratch() was not called")
    d = _scratch[0] / name
    d.mkdir(exist_ok=True)
    return d


def _sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never really waits, without an event loop (a loop per input costs more than the input)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("the coroutine waited on something; the harness cannot drive it")


def _json_text(value: Any) -> str:
    # NaN != NaN, so compare what JSON.stringify-like output two answers give, not the values.
    try:
        return json.dumps(value, sort_keys=False, allow_nan=True, default=repr)
    except RecursionError:
        # Every reader now reads a line at any depth (issue 30); the comparison must write one too.
        from kurahi.js import deepjson

        return deepjson.dumps(value, separators=(", ", ": "))


@contextlib.contextmanager
def _scanner(c_scanner: bool) -> Iterator[None]:
    saved = native.ENABLED
    native.ENABLED = c_scanner
    try:
        yield
    finally:
        native.ENABLED = saved


# -- 1. the transcript reader -------------------------------------------------------------


def _read_transcript(data: bytes) -> dict[str, Any] | str:
    """What one scanner makes of a file: its facts, or the error it gives (class and message)."""
    try:
        with Transcript.from_bytes(data) as t:
            n = len(t)
            path = t.path()
            return {
                "header": _json_text(t.header),
                "skeletons": [(e.type, e.id, e.parent_id) for e in map(t.entry_at, range(n))],
                "raw": [t.raw_line(i) for i in range(n)],
                "lines": [t.line_of(i) for i in range(n)],
                "warnings": [(w.line, w.message) for w in t.warnings],
                "leaf": t.leaf_id,
                "path": [e.index for e in path],
                "data": _json_text([e.data for e in path]),
                "labels": _json_text(list(t.labels().items())),
            }
    except KurahiError as exc:
        return f"{type(exc).__name__}: {exc}"


def fuzz_transcript(data: bytes) -> None:
    """``Transcript.from_bytes`` and ``path()``; the C scanner (when built) must read what the Python one reads."""
    with _scanner(False):
        slow = _read_transcript(data)
    if native.available():
        fast = _read_transcript(data)
        if fast != slow:
            raise Mismatch(f"C scanner: {fast!r:.400}\nPython scanner: {slow!r:.400}")


# -- 2. projection ------------------------------------------------------------------------


def fuzz_projection(data: bytes) -> None:
    """``build_context`` on the leaf's path; ``project_file`` (read from the end) must give the same context."""
    try:
        with Transcript.from_bytes(data) as t:
            ctx = build_context(t.path(), t.leaf_id)
            full: str | None = _json_text(ctx.to_dict())
    except KurahiError:
        full = None
    f = _dir("projection") / "t.jsonl"
    f.write_bytes(data)
    try:
        backward: str | None = _json_text(project_file(f).context.to_dict())
    except KurahiError:
        backward = None
    # Errors may differ in wording (the backward reader stops early), but both must fail or
    # both must answer, and answers must be equal.
    if full != backward:
        raise Mismatch(f"full scan: {full!r:.400}\nbackward reader: {backward!r:.400}")


def fuzz_check(data: bytes) -> None:
    """``lineage check``: the fast projection and the reference walk, written apart, must agree."""
    f = _dir("check") / "t.jsonl"
    f.write_bytes(data)
    try:
        report = check(f)
    except KurahiError:
        return
    if not report.projections_agree:
        raise Mismatch(
            f"fast: {report.messages} messages, {report.fast_sha256}; "
            f"reference: {report.reference_messages} messages, {report.reference_sha256}"
        )


# -- 3. the catalog loader ----------------------------------------------------------------


def fuzz_catalog(data: bytes) -> None:
    """``parse_catalog``; whatever it accepts serializes again (a catalog is rewritten on every upsert)."""
    try:
        store = parse_catalog(data)
    except KurahiError:
        return
    if type(store) is not dict or not all(type(k) is str and type(v) is dict for k, v in store.items()):
        raise Mismatch(f"parse_catalog gave something that is not a catalog: {store!r:.200}")
    again = parse_catalog(serialize_catalog(store))
    if list(again) != list(store):
        raise Mismatch(f"keys changed on a rewrite: {list(store)!r:.200} -> {list(again)!r:.200}")


# -- 4. stitch ----------------------------------------------------------------------------


def fuzz_stitch(data: bytes) -> None:
    """``stitch`` of BEFORE and AFTER (split at :data:`SPLIT`); a stitched file opens as a session.

    Without the separator, the input is stitched with itself (ids collide). Inputs of even
    length stitch with ``rename_colliding`` and ``force``, odd ones without, so both the
    refusals and the renaming path are reached.
    """
    before, sep, after = data.partition(SPLIT)
    if not sep:
        after = data
    d = _dir("stitch")
    a, b, out = d / "a.jsonl", d / "b.jsonl", d / "c.jsonl"
    a.write_bytes(before)
    b.write_bytes(after)
    out.unlink(missing_ok=True)
    lenient = len(data) % 2 == 0
    try:
        report = stitch([a, b], out, rename_colliding=lenient, force=lenient)
    except KurahiError:
        return
    try:
        with Transcript.open(out) as c:
            copied = sum(s.copied for s in report.sources)
            if len(c) != copied:
                raise Mismatch(f"stitched file has {len(c)} entries; the report says {copied} were copied")
    except KurahiError as exc:
        raise Mismatch(f"stitch wrote a file that does not open: {exc}") from exc


# -- 5. manifest and report verifiers -----------------------------------------------------


def _loads(data: bytes) -> Any:
    """JSON as Python's parser reads it (NaN, Infinity, huge numbers, lone surrogates: all let through)."""
    return json.loads(data)


def fuzz_manifest(data: bytes) -> None:
    """``verify_manifest`` on any JSON value: a check result or a ``ManifestError``."""
    try:
        value = _loads(data)
    except (ValueError, RecursionError):
        return  # not JSON: nothing reaches the verifier
    try:
        verify_manifest(value)
    except KurahiError:
        return


def _check_manifest(manifest: dict[str, Any]) -> tuple[bool, str]:
    # As the CLI's checker, but only a ManifestError means "does not verify": anything else
    # would be hidden by the CLI's catch-all, and is exactly what this target looks for.
    try:
        result = verify_manifest(manifest)
    except ManifestError as exc:
        return False, str(exc)
    return bool(result.ok), str(result.reason or "verifies")


def fuzz_report(data: bytes) -> None:
    """``read_report`` then ``verify_report``, on the bytes as given and in canonical form.

    ``read_report`` refuses any file that is not canonical JSON of this suite and version,
    so most mutations would stop there: the target also writes the parsed value back in
    canonical form (with the right suite and version) and verifies that, so mutations
    reach the verifier.
    """
    d = _dir("report")
    files = [d / "raw.json"]
    files[0].write_bytes(data)
    try:
        value = _loads(data)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict) and isinstance(value.get("body"), dict):
        value["body"].update(suite=SUITE, version=VERSION)
        with contextlib.suppress(CanonicalJSONError):
            (d / "canonical.json").write_bytes(canonical_json(value) + b"\n")
            files.append(d / "canonical.json")
    for f in files:
        try:
            report = read_report(f)
        except KurahiError:
            continue
        verify_report(report, check_manifest=_check_manifest)


# -- 6. HTTP request bodies ---------------------------------------------------------------

_REQUEST_MODELS = (m.ChatIn, m.ResetIn, m.JobIn, m.ModelIn, m.ConfigApplyIn, m.PairIn)


@cache
def _gateway() -> tuple[Gateway, FastAPI, dict[type[pydantic.BaseModel], APIRoute], bytes]:
    """A gateway over a throwaway home with one agent, its app, and the route that takes each request model."""
    root = _dir("home")
    shutil.rmtree(root)
    init_home(root, "alice")
    gateway = Gateway(Home(root))
    app = create_app(gateway, manage_lifespan=False)
    routes: dict[type[pydantic.BaseModel], APIRoute] = {}
    for route in app.routes:
        if isinstance(route, APIRoute) and route.body_field is not None:
            routes[route.body_field.field_info.annotation] = route  # type: ignore[index]
    missing = [model.__name__ for model in _REQUEST_MODELS if model not in routes]
    if missing:
        raise RuntimeError(f"no route takes {missing}: update the fuzz target's model list")
    return gateway, app, routes, gateway.home.config.read_bytes()


def _decode_body(data: bytes) -> tuple[Any, int | None]:
    """The body as FastAPI reads an ``application/json`` request: a value, or the status it answers."""
    try:
        return json.loads(data), None  # Starlette's Request.json()
    except json.JSONDecodeError:
        return None, 422  # FastAPI: RequestValidationError "json_invalid"
    except Exception:
        return None, 400  # FastAPI: "There was an error parsing the body" (bad UTF-8, too deep)


def fuzz_http(data: bytes) -> None:
    """Each request model, decoded and validated as FastAPI does it for the gateway's routes.

    A body that does not validate must turn into the gateway's 422 JSON; a config patch that
    does must either be refused with a ``KurahiError`` or be applied so that the written
    config loads again (a gateway that cannot load its config cannot start).
    """
    gateway, app, routes, original_config = _gateway()
    if not data:
        return  # FastAPI sees no body: "field required", the same for every input
    body, status = _decode_body(data)
    if status is not None:
        return
    handler = app.exception_handlers[RequestValidationError]
    for model in _REQUEST_MODELS:
        route = routes[model]
        values, errors = _sync(request_body_to_args(route.dependant.body_params, body, route._embed_body_fields))
        if errors:
            response = _sync(handler(None, RequestValidationError(errors)))  # type: ignore[arg-type]
            if response.status_code != 422:
                raise Mismatch(f"{model.__name__}: a bad body answered {response.status_code}")
            continue
        value = next(iter(values.values()))
        if type(value) is not model:
            raise Mismatch(f"{model.__name__}: validated into a {type(value).__name__}")
        if model is m.ConfigApplyIn:
            _apply_config(gateway, value.patch, original_config)


def _apply_config(gateway: Gateway, patch: dict[str, Any], original: bytes) -> None:
    try:
        _sync(gateway.apply_config(patch, "owner"))
    except KurahiError:
        return
    try:
        load_config(gateway.home.root)
    except KurahiError as exc:
        raise Mismatch(f"config apply accepted a patch whose written config does not load: {exc}") from exc
    finally:
        # Every input starts from the same config.
        gateway.home.config.write_bytes(original)
        gateway.config = load_config(gateway.home.root)


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("transcript", "Transcript.from_bytes + path(), C scanner against Python scanner", fuzz_transcript),
        Target("projection", "build_context on the path, against project_file's backward read", fuzz_projection),
        Target("check", "lineage check: the fast projection against the reference walk", fuzz_check),
        Target("catalog", "parse_catalog, and a rewrite of what it accepts", fuzz_catalog, 20000, 50_000),
        Target("stitch", "lineage stitch of two fuzzed transcripts; the output opens", fuzz_stitch, 16384, 300_000),
        Target("manifest", "verify_manifest on any JSON value", fuzz_manifest, 8192, 100_000),
        Target("report", "read_report + verify_report (as given and canonicalized)", fuzz_report, 32768, 300_000),
        Target("http", "every request model decoded as FastAPI does; config patches applied", fuzz_http, 8192, 50_000),
    )
}
