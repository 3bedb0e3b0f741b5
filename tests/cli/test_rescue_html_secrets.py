"""``kurahi rescue --html`` quotes transcripts (each picture's hover text): secrets in them are redacted."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from kurahi.cli import app
from support.json_era import T0, JsonEraDir

KEY_BLOCK = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"
)
SAID = [
    f"the deploy key is {KEY_BLOCK}",
    "and the stripe key sk_live_51HabcdefghijklmnopqrstuVWXYZ",
    "db at postgres://app:Sup3rS3cretPW@db.example/app",
]


def test_the_html_page_holds_no_secret_said_in_a_transcript(tmp_path: Path) -> None:
    d = JsonEraDir(tmp_path / "state")
    key = "agent:main:main"
    a, last = d.transcript(T0, SAID)
    d.point(key, a, T0)
    d.reset(key, a, last + 60_000, ["after the reset"])
    page = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["rescue", "--openclaw", str(d.root), "--html", str(page)])
    assert res.exit_code == 1, res.output  # a loss was found
    text = page.read_text()
    assert "<svg" in text and "the deploy key is" in text and "db at postgres://app:" in text
    for value in ("b3BlbnNzaC1rZXktdjEAAAAA", "51HabcdefghijklmnopqrstuVWXYZ", "Sup3rS3cretPW"):
        assert value not in text
    assert "[redacted]" in text
