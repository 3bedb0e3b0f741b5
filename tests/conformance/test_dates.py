"""``new Date(value).getTime()`` against node, over the whole range ``Date`` accepts.

Pi stamps every entry with ``new Date().toISOString()`` and reads stamps back with
``new Date(entry.timestamp).getTime()`` (a custom message's and a summary's ``timestamp``).
Its clock can say any moment ``Date`` holds: ±8.64e15 ms, years -271821 to 275760, which
``toISOString`` writes with a six-digit signed year outside 0-9999. Hypothesis draws moments
over that whole range (and their neighbours just outside it), ISO strings with fields left
out, offsets and fractions of any length, and numbers; one node process reads each batch
and :func:`kurahi.js.values.date_ms` must give the same for every value (``None`` for NaN).

Only the ECMAScript date-time format (what Pi writes, and its documented shortenings) is
held to node here, with what V8's fallback parser makes of the format's own shape when the
format refuses it (three numbers joined by ``-``: ``"0001-12-32"`` is 12 January 2032). The
fallback's other text ("Jan 1 2020", "2020/1/1") is its own heuristic, which Kurahi reads
only for RFC 2822 dates. Times without an offset are local
time: node runs in the test's own time zone, and Kurahi asks Python's ``datetime`` for the
offset, which knows years 1 to 9999 (outside them it takes none; in UTC, as this machine is,
that is exact).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from kurahi.js.values import date_ms
from support.peer import NODE
from support.tiers import no_peer_in_the_fast_tier

pytestmark = pytest.mark.pi

_NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
"""Each example is a batch of 300 values read by one node process: shrinking would rerun node
thousands of times, and the failure already lists every value that differs."""

MAX_MS = 8_640_000_000_000_000
"""``Date``'s range: ±1e8 days of milliseconds around 1970."""

_NODE_DATES = r"""
let text = "";
process.stdin.on("data", (c) => (text += c));
process.stdin.on("end", () => {
	const out = [];
	for (const v of JSON.parse(text)) {
		const t = new Date(v).getTime();
		out.push(Number.isNaN(t) ? null : t);
	}
	process.stdout.write(JSON.stringify(out));
});
"""


def node_times(values: list[Any]) -> list[int | None]:
    """``new Date(v).getTime()`` for each value, in one node process (NaN as ``None``)."""
    no_peer_in_the_fast_tier("node")
    if NODE is None:
        pytest.skip("node is not installed (run `make peer`)")
    proc = subprocess.run(
        [NODE, "-e", _NODE_DATES],
        input=json.dumps(values),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def node_iso(times: list[int]) -> list[str | None]:
    """``new Date(t).toISOString()`` for each time (``None`` where it throws: out of range)."""
    no_peer_in_the_fast_tier("node")
    if NODE is None:
        pytest.skip("node is not installed (run `make peer`)")
    script = _NODE_DATES.replace(
        "const t = new Date(v).getTime();\n\t\tout.push(Number.isNaN(t) ? null : t);",
        "const d = new Date(v);\n\t\tout.push(Number.isNaN(d.getTime()) ? null : d.toISOString());",
    )
    proc = subprocess.run(
        [NODE, "-e", script], input=json.dumps(times), capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def _kurahi(values: list[Any]) -> list[int | None]:
    out: list[int | None] = []
    for v in values:
        got = date_ms(v)
        out.append(None if got is None else int(got))
    return out


def _mismatches(values: list[Any], theirs: list[int | None]) -> list[tuple[Any, int | None, int | None]]:
    ours = _kurahi(values)
    return [(v, t, o) for v, t, o in zip(values, theirs, ours, strict=True) if t != o]


# Moments over the whole range, weighted towards its ends, year 0 and the eras' edges.
_moments = st.one_of(
    st.integers(-MAX_MS, MAX_MS),
    st.integers(-MAX_MS, -MAX_MS + 10**12),
    st.integers(MAX_MS - 10**12, MAX_MS),
    st.integers(-62_198_755_200_000 - 10**11, -62_198_755_200_000 + 10**11),  # years -1 to 1
    st.integers(-(10**13), 10**13),
    st.sampled_from([-MAX_MS, MAX_MS, 0, -1, 1, -62_167_219_200_000, -62_167_219_200_001, 253_402_300_799_999]),
)


@settings(max_examples=6, deadline=None, phases=_NO_SHRINK)
@given(st.lists(_moments, min_size=300, max_size=300))
def test_what_to_iso_string_writes_reads_back_as_node_reads_it(times: list[int]) -> None:
    """Every moment ``Date`` holds, as Pi's clock writes it, is read as node reads it."""
    texts = node_iso(times)
    assert None not in texts
    assert _mismatches(texts, node_times(texts)) == []
    assert [date_ms(t) for t in texts] == times


@st.composite
def _iso_variants(draw: st.DrawFn) -> str:
    """The date-time format with its optional parts, out-of-range fields and signed years."""
    if draw(st.booleans()):
        year = draw(st.integers(-271_822, 275_761))
        text = f"{'-' if year < 0 else '+'}{abs(year):06d}"
    else:
        text = f"{draw(st.integers(0, 9999)):04d}"
    parts = draw(st.integers(0, 2))
    if parts >= 1:
        text += f"-{draw(st.integers(0, 12)):02d}"
    if parts == 2:
        text += f"-{draw(st.integers(0, 32)):02d}"
    if draw(st.booleans()):
        text += f"T{draw(st.integers(0, 25)):02d}:{draw(st.integers(0, 60)):02d}"
        if draw(st.booleans()):
            text += f":{draw(st.integers(0, 60)):02d}"
            if draw(st.booleans()):
                text += "." + draw(st.text("0123456789", min_size=1, max_size=7))
        text += draw(
            st.one_of(
                st.just(""),
                st.just("Z"),
                st.builds(
                    lambda s, h, m: f"{s}{h:02d}:{m:02d}",
                    st.sampled_from("+-"),
                    st.integers(0, 24),
                    st.integers(0, 60),
                ),
            )
        )
    return text


@settings(max_examples=6, deadline=None, phases=_NO_SHRINK)
@given(st.lists(_iso_variants(), min_size=300, max_size=300))
def test_iso_strings_read_as_node_reads_them(texts: list[str]) -> None:
    """Shortened forms, offsets, long fractions, hour 24, fields out of range, years past ±271821."""
    assert _mismatches(texts, node_times(texts)) == []


_numbers = st.one_of(
    st.integers(-MAX_MS - 5, MAX_MS + 5),
    st.integers(MAX_MS - 3, MAX_MS + 3),
    st.integers(-MAX_MS - 3, -MAX_MS + 3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(-1e16, 1e16),
)


@settings(max_examples=4, deadline=None, phases=_NO_SHRINK)
@given(st.lists(_numbers, min_size=300, max_size=300))
def test_numbers_read_as_node_reads_them(values: list[float]) -> None:
    """A number is a time value: truncated towards zero, NaN past ±8.64e15."""
    assert _mismatches(values, node_times(values)) == []


def test_odd_values_read_as_node_reads_them() -> None:
    """null, booleans, empty and spaced strings, and the edges of the range."""
    values: list[Any] = [
        None,
        True,
        False,
        "",
        " ",
        "-000000-01-01T00:00:00Z",
        " 2020-01-01T00:00:00.000Z ",
        "-271821-04-20T00:00:00.000Z",
        "-271821-04-19T23:59:59.999Z",
        "+275760-09-13T00:00:00.000Z",
        "+275760-09-13T00:00:00.001Z",
        "-271821-04-20T00:00:00.000+00:01",
        "+275760-09-13T00:00:00.000-00:01",
        "2020-01-01T24:00:00Z",
        "2020-01-01T24:00:01Z",
        "-000002-06-01T00:00:00.000Z",
    ]
    assert _mismatches(values, node_times(values)) == []


# Three numbers joined by "-" that the date-time format refuses go to V8's fallback: month-day-year
# when the first could be a day, else year-month-day, two-digit years as 19xx/20xx, local midnight.
_NUMERIC_FALLBACK = [
    "0001-12-32", "0001-12-00", "0012-31-49", "0001-01-50", "0002-31-01", "0013-01-32", "0032-01-32",
    "12-01-05", "13-01-05", "31-01-05", "32-01-05", "0-01-05", "1-1-1", "123456-01-01", "275761-01-01",
    "  0001-12-32", "0001-12-32\n", "0001-12-32T05:06", "+000001-12-32", "+000005-03-00", "+000031-12-32",
    "-000001-12-32",
]  # fmt: skip


def test_the_format_s_own_shape_refused_is_read_as_v8_s_fallback_reads_it() -> None:
    assert _mismatches(_NUMERIC_FALLBACK, node_times(_NUMERIC_FALLBACK)) == []
    assert date_ms("0001-12-32") == date_ms("2032-01-12T00:00:00")  # a local midnight


@settings(max_examples=6, deadline=None, phases=_NO_SHRINK)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", "+"]), st.lists(st.text("0123456789", min_size=1, max_size=7), min_size=3, max_size=3)
        ).map(lambda t: t[0] + "-".join(t[1])),
        min_size=300,
        max_size=300,
    )
)
def test_three_numbers_joined_by_a_dash_are_read_as_node_reads_them(texts: list[str]) -> None:
    assert _mismatches(texts, node_times(texts)) == []
