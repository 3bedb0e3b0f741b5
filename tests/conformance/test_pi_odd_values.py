"""Values Pi's own writer never produces but ``JSON.parse`` reads, against Pi 1.6.0.

A hand-edited or foreign file may hold ``__proto__`` keys (``JSON.parse`` makes them own
properties), repeated keys (the last value wins, at the first key's place), ``-0``, ``1e400``
(Infinity, written back as ``null``), integers past 2^53 (read as the nearest double), lone
surrogates, and dates outside ``Date``'s range. ``kurahi session context --json`` must print
exactly what Pi 1.6.0 prints for each (its ``JSON.stringify`` of the context), with the C
scanner and without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.peer import PiPeer

pytestmark = pytest.mark.pi

KURAHI = str(Path(sys.executable).with_name("kurahi"))
HEADER = '{"type":"session","version":3,"id":"s","timestamp":"2026-11-30T08:00:00.000Z","cwd":"/"}'

ODD = {
    "proto key": '{"__proto__":{"x":1},"a":1}',
    "repeated keys": '{"a":1,"b":2,"a":3}',
    "integer-like keys": '{"b":1,"10":2,"2":3,"-1":4}',
    "minus zero": "[-0,-0.0,0e5]",
    "past the doubles": "[1e400,-1e400,1e-400]",
    "seventy-bit integer": "[1180591620717411303424,-1180591620717411303425,9007199254740993]",
    "lone surrogates": r'["\ud800","a\udfffb","\udc00\ud800"]',
    "escapes": r'["\u0000\u001f\u007f\u2028\u2029","\/"]',
}
STAMPS = [
    "+275760-09-13T00:00:00.001Z",
    "-271821-04-19T23:59:59.999Z",
    "-000002-06-01T00:00:00.000Z",
    "+275760-09-13T00:00:00.000Z",
    "2026-02-31T00:00:00.000Z",
    "not a date",
]


def _file(tmp_path: Path, name: str, details: str, stamp: str) -> Path:
    lines = [
        HEADER,
        '{"type":"message","id":"a","parentId":null,"timestamp":"2026-11-30T08:00:01.000Z",'
        '"message":{"role":"user","content":"hi","timestamp":1}}',
        '{"type":"custom_message","id":"b","parentId":"a","timestamp":"' + stamp + '",'
        '"customType":"t","content":"c","display":true,"details":' + details + "}",
        '{"type":"branch_summary","id":"c","parentId":"b","timestamp":"' + stamp + '",'
        '"fromId":"a","summary":"s","details":' + details + "}",
    ]
    p = tmp_path / f"{name}.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_odd_values_print_as_pi_prints_them(tmp_path: Path) -> None:
    files = [
        _file(tmp_path, f"{i}-{j}", details, stamp)
        for i, details in enumerate(ODD.values())
        for j, stamp in enumerate(STAMPS)
    ]
    want = PiPeer("1.6.0").context_bytes(files)
    for native in ("1", "0"):
        for path, theirs in zip(files, want, strict=True):
            assert b'"error"' not in theirs[:10], (path.name, theirs)
            proc = subprocess.run(
                [KURAHI, "session", "context", str(path), "--json"],
                capture_output=True,
                env={**os.environ, "KURAHI_NATIVE": native},
                check=False,
            )
            assert proc.returncode == 0, proc.stderr.decode()
            assert proc.stdout.rstrip(b"\n") == theirs, (path.read_text(), native)
