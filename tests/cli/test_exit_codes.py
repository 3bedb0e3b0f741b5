"""Every command's error paths exit with the README's codes, and every command is in the walk.

README: 0 ok · 1 the operation ran and failed (or its answer is no) · 2 usage · 3 not found or
unreadable · 4 invalid input · 5 locked. The table below names, for every command, what a
user gets wrong most: a missing file, a missing home, an unknown leaf or entry, a bad
argument. A test fails when a command has no row (so a new command needs one), and every
command is also run with an unknown option (usage, 2) and with ``-h`` (0).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kurahi.cli import build_app
from kurahi.cli.common import EXIT

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pi" / "branch_summary.jsonl"
OTHER = FIXTURE.with_name("branch_summary_root.jsonl")
KURAHI = [sys.executable, "-m", "kurahi.cli"]
runner = CliRunner()

NOT_FOUND, USAGE, FAILED = EXIT.NOT_FOUND, EXIT.USAGE, EXIT.FAILED

# {M}: a file that does not exist; {D}: a directory that does not exist; {H}: a home that does
# not exist; {F}, {G}: real transcripts; {K}: an existing, initialised home; {T}: the test's folder.
CASES: list[tuple[str, int]] = [
    ("init --home {H} --agent ../x", USAGE),
    ("chat --home {H} hi", NOT_FOUND),
    ("demo --out {M}/x/y --nope", USAGE),
    ("doctor --home {H}", FAILED),
    ("completion tcsh", USAGE),
    ("session context {M}", NOT_FOUND),
    ("session context {F} --leaf nope", NOT_FOUND),
    ("session stats {M}", NOT_FOUND),
    ("session repair {M}", NOT_FOUND),
    ("session elide {M} --entry x", NOT_FOUND),
    ("session elide {F} --entry nope", NOT_FOUND),
    ("session tree {M}", NOT_FOUND),
    ("session doctor {M}", NOT_FOUND),
    ("session doctor {F} --fix --runtime nope", USAGE),
    ("sessions ls --home {H}", NOT_FOUND),
    ("sessions ls --pi", NOT_FOUND),
    ("sessions ls --openclaw", NOT_FOUND),
    ("sessions ls --pi --openclaw", USAGE),
    ("sessions repair {T}/sessions.json", NOT_FOUND),
    ("lineage find --state-dir {D}", NOT_FOUND),
    ("lineage draw {M} --out {T}/l.svg", NOT_FOUND),
    ("lineage draw {F} --out {T}/l.svg --leaf nope", NOT_FOUND),
    ("lineage path {M}", NOT_FOUND),
    ("lineage path {F} --leaf nope", NOT_FOUND),
    ("lineage stitch {M} {F} --out {T}/c.jsonl", NOT_FOUND),
    ("lineage stitch {F} {G} --out {T}/c.jsonl --leaf nope", NOT_FOUND),
    ("lineage check {M}", NOT_FOUND),
    ("lifecycle matrix --nope", USAGE),
    ("agent send --home {H} hi", NOT_FOUND),
    ("agent send --home {K} --agent nobody hi", NOT_FOUND),
    ("agent jobs --home {H}", NOT_FOUND),
    ("actions ls --home {H}", NOT_FOUND),
    ("actions show --home {H} s:t", NOT_FOUND),
    ("actions show --home {K} s:t", NOT_FOUND),
    ("gateway run --home {H}", NOT_FOUND),
    ("gateway status --home {H}", NOT_FOUND),
    ("gateway status --home {K}", FAILED),
    ("gateway stop --home {H}", NOT_FOUND),
    ("devices pair --home {H} --name x", NOT_FOUND),
    ("devices ls --home {H}", NOT_FOUND),
    ("devices revoke --home {H} dev_x", NOT_FOUND),
    ("devices revoke --home {K} dev_x", NOT_FOUND),
    ("audit verify --home {H}", NOT_FOUND),
    ("audit tail --home {H}", NOT_FOUND),
    ("continuity run --out {T}/out --disruption nope --throwaway", USAGE),
    ("continuity verify {M}", NOT_FOUND),
    ("continuity badge {M}", NOT_FOUND),
    ("activate plan --home {H} --agent main --candidate {F} --out {T}/pkg", NOT_FOUND),
    ("activate plan --home {K} --agent main --candidate {M} --out {T}/pkg", NOT_FOUND),
    ("activate apply {D} --home {K}", NOT_FOUND),
    ("activate verify {D} --home {K}", NOT_FOUND),
    ("activate rollback {D} --home {K}", NOT_FOUND),
    ("evidence provenance --home {H} --agent main --key agent:main:main", NOT_FOUND),
    ("evidence provenance --transcript {M} --auto", NOT_FOUND),
    ("evidence packet --out {T}/packet --source {M}", NOT_FOUND),
    ("evidence verify {D}", NOT_FOUND),
    ("rescue --openclaw {D}", NOT_FOUND),
    ("rescue --openclaw {T} --home {K}", USAGE),
    ("rescue plan nope --home {K} --out {T}/rescue-pkg", NOT_FOUND),
    ("rescue apply nope --home {K} --yes", NOT_FOUND),
    ("rescue watch --openclaw {D}", NOT_FOUND),
    ("mcp --openclaw {D}", NOT_FOUND),
    ("mcp --home {K} --http --host 0.0.0.0", USAGE),
    ("store migrate --store file:{H}", USAGE),  # a file store has no schema
    ("store copy --from file:{H} --to file:{T}/copy", NOT_FOUND),
    ("nope", USAGE),
    ("session nope", USAGE),
]


def _leaves(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if hasattr(cmd, "commands"):
        for name, sub in cmd.commands.items():
            yield from _leaves(sub, (*path, name))
    else:
        yield path


def _groups(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if hasattr(cmd, "commands"):
        yield path
        for name, sub in cmd.commands.items():
            yield from _groups(sub, (*path, name))


ROOT = typer.main.get_command(build_app())
LEAVES = list(_leaves(ROOT))


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    t = tmp_path_factory.mktemp("codes")
    kept = t / "kept"
    out = subprocess.run([*KURAHI, "init", "--home", str(kept), "--agent", "main"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return {
        "M": str(t / "missing.jsonl"),
        "D": str(t / "missing-dir"),
        "H": str(t / "no-home"),
        "F": str(FIXTURE),
        "G": str(OTHER),
        "K": str(kept),
        "T": str(t),
    }


def _env(places: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KOLO_", "KURAHI_", "PI_CODING", "OPENCLAW_")) and k not in ("NO_COLOR", "FORCE_COLOR")
    }
    env["HOME"] = places["T"]  # nothing of Pi's or OpenClaw's there
    return env


@pytest.mark.parametrize(("line", "code"), CASES, ids=[c[0].split(" {")[0] for c in CASES])
def test_error_paths_exit_as_the_readme_says(line: str, code: int, places: dict[str, str]) -> None:
    args = line.format(**places).split()
    # A fresh process each: the console script as a user runs it (its fast path included).
    out = subprocess.run([*KURAHI, *args], capture_output=True, text=True, env=_env(places), timeout=120)
    assert out.returncode == code, f"{line}: exit {out.returncode}, expected {code}\n{out.stdout}{out.stderr}"
    assert "Traceback" not in out.stderr
    if code in (NOT_FOUND, USAGE):
        assert out.stderr.strip(), f"{line}: no message on stderr"
    if "--home {H}" in line and code == NOT_FOUND:
        assert "kurahi init --home" in " ".join(out.stderr.split()), out.stderr


def test_every_command_has_an_error_path_row() -> None:
    words = [line.split(" -")[0].split(" {")[0].split() for line, _ in CASES]
    covered = {tuple(w[:n]) for w in words for n in (1, 2)}
    missing = [" ".join(leaf) for leaf in LEAVES if leaf not in covered and leaf[:1] not in covered]
    assert not missing, f"commands without a row in CASES: {missing}"


@pytest.mark.parametrize("leaf", LEAVES, ids=[" ".join(x) for x in LEAVES])
def test_an_unknown_option_is_a_usage_error_and_h_is_help(leaf: tuple[str, ...]) -> None:
    bad = runner.invoke(build_app(), [*leaf, "--no-such-option"])
    assert bad.exit_code == USAGE, bad.output
    helped = runner.invoke(build_app(), [*leaf, "-h"])
    assert helped.exit_code == 0 and "Usage:" in helped.output, helped.output


@pytest.mark.parametrize("group", list(_groups(ROOT)), ids=lambda g: " ".join(g) or "kurahi")
def test_h_on_every_group(group: tuple[str, ...]) -> None:
    helped = runner.invoke(build_app(), [*group, "-h"])
    assert helped.exit_code == 0 and "Usage:" in helped.output
