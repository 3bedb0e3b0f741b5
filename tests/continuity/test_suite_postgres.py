"""The continuity suite, all four disruptions, against a gateway whose store is PostgreSQL.

The throwaway gateway takes ``KOLO_STORE`` from its environment (``gateway run --store``),
so the suite drives a gateway whose sessions, logs and audit chain live in the database;
the report must verify and say PASS, and the home must hold no transcript of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

pytestmark = pytest.mark.postgres


def test_all_four_disruptions_pass_on_postgres(tmp_path: Path, pg_url: str) -> None:
    home = tmp_path / "suite.kolo-test"
    out = tmp_path / "out"
    env = {**os.environ, "KOLO_STORE": pg_url, "KOLO_SMOKE_HOME": str(home)}
    env.pop("KOLO_HOME", None)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "kurahi.cli",
            "continuity",
            "run",
            "--throwaway",
            "--disruption",
            "all",
            "--out",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = out / "continuity-report.json"
    verify = subprocess.run(
        [sys.executable, "-m", "kurahi.cli", "continuity", "verify", str(report)],
        env={k: v for k, v in os.environ.items() if k != "KOLO_STORE"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    body = json.loads(report.read_text())["body"]
    assert body["summary"] == {"pass": 40, "fail": 0, "skip": 0, "verdict": "PASS"}
    # The sessions were the database's: rows there, no transcript or catalog in the home.
    with psycopg.connect(pg_url) as conn:
        entries = conn.execute("SELECT count(*) FROM kurahi.entries").fetchone()
        chain = conn.execute("SELECT count(*) FROM kurahi.audit_chain").fetchone()
    assert entries is not None and entries[0] > 20
    assert chain is not None and chain[0] > 5
    moved = [p for p in tmp_path.rglob("*") if p.suffix == ".jsonl" and "sessions" in p.parts]
    assert moved == [], moved
    assert not list(tmp_path.rglob("sessions.json"))
    # The password never reached the report.
    assert psycopg.conninfo.conninfo_to_dict(pg_url)["password"] not in report.read_text()
