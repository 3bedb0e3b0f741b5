"""A refused or unreadable file of the home, as an HTTP client and as the CLI's user meet it (issue 31).

Both read the status from the error's family (``kurahi.errors``): the gateway names the
damage (never ``internal``, which reads as a bug) and the CLI's exit code says what kind it is.
"""

from __future__ import annotations

import os
from pathlib import Path

from typer.testing import CliRunner

from kurahi.cli import app
from support.gateways import make_gateway_home, serve_in_thread

SID = "0b9e3c4e-0000-4000-8000-000000000001"


def test_a_transcript_the_gateway_cannot_read_is_named_not_internal(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    sessions = home.root / "agents/alice/sessions"
    (sessions / f"{SID}.jsonl").mkdir(parents=True)
    with serve_in_thread(home) as s, s.client() as owner:
        r = owner.get("/api/agents/alice/session/transcript", params={"sessionId": SID})
    assert r.status_code == 500, r.text
    err = r.json()["error"]
    assert err["code"] == "transcript_unreadable"
    assert err["message"].endswith(f"{SID}.jsonl: is a directory, not a transcript file")


def test_the_same_file_for_the_cli_is_not_found_or_unreadable(tmp_path: Path) -> None:
    folder = tmp_path / f"{SID}.jsonl"
    folder.mkdir()
    r = CliRunner().invoke(app, ["session", "stats", str(folder)])
    assert r.exit_code == 3, r.output
    assert "is a directory, not a transcript file" in r.output


def test_a_symlinked_transcript_is_refused_alike(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    outside = tmp_path / "outside.jsonl"
    outside.write_text("not the home's\n")
    os.symlink(outside, home.root / "agents/alice/sessions" / f"{SID}.jsonl")
    with serve_in_thread(home) as s, s.client() as owner:
        r = owner.get("/api/agents/alice/session/transcript", params={"sessionId": SID})
    assert (r.status_code, r.json()["error"]["code"]) == (500, "transcript_unreadable"), r.text
    assert "not the home's" not in r.text
    assert outside.read_text() == "not the home's\n"
