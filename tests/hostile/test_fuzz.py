"""Fuzzing with hypothesis: parsers and verifiers give a value or one of our own clear errors, never a crash."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kurahi.context.project import build_context
from kurahi.continuity.manifest import verify_manifest
from kurahi.continuity.report import verify_report
from kurahi.errors import KurahiError
from kurahi.pi.transcript import Transcript
from kurahi.store.catalog_format import parse_catalog

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@FUZZ
@given(st.binary(max_size=400))
def test_catalog_loader_on_any_bytes(data: bytes) -> None:
    try:
        out = parse_catalog(data)
    except KurahiError:
        return
    assert isinstance(out, dict) and all(isinstance(v, dict) for v in out.values())


@FUZZ
@given(st.lists(st.one_of(st.binary(max_size=80), json_values.map(lambda v: json.dumps(v).encode())), max_size=8))
def test_transcript_reader_and_projection_on_any_lines(lines: list[bytes]) -> None:
    header = b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}'
    data = b"\n".join([header, *lines])
    try:
        with Transcript.from_bytes(data) as t:
            path = t.path()
            build_context(path)
    except KurahiError:
        return


@FUZZ
@given(json_values)
def test_manifest_verifier_on_any_value(value: Any) -> None:
    try:
        result = verify_manifest(value)
    except KurahiError:
        return
    assert result.ok is False or isinstance(value, dict)


@FUZZ
@given(st.dictionaries(st.sampled_from(["disruption", "before", "after", "outcome", "invariants", "x"]), json_values))
def test_report_verifier_on_malformed_runs(run: dict[str, Any]) -> None:
    report = {"body": {"runs": [run], "threshold": 0.8}, "digest": "0" * 64, "signature": "", "publicKey": ""}
    result = verify_report(report, check_manifest=lambda m: (False, "fuzz"))
    assert not result.ok  # never a pass for garbage, and never a crash
