"""``kurahi demo``: the most complete real job there is so far, on a throwaway session.

Until the continuity suite exists, the demo writes a realistic transcript through the
store (every entry durable when its append returns), crashes a writer mid-line, shows
that nothing acknowledged is lost, repairs the torn line, moves the leaf durably and
projects the context exactly as Pi would.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from kurahi.cli.common import console, translate_errors

if TYPE_CHECKING:  # imported where used, so `kurahi --help` stays quick
    pass

__all__ = ["demo"]


def demo(
    entries: int = typer.Option(3000, "--entries", help="How many entries the demo session gets.", min=20),
    keep: Path | None = typer.Option(None, "--keep", help="Write the session here and keep it (a new directory)."),
    seed: int = typer.Option(7, "--seed", help="Random seed for the generated conversation."),
) -> None:
    """Generate a realistic session, crash a writer mid-line, repair, project, show tree and stats."""
    from rich.panel import Panel
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kurahi.cli.session import stats as stats_cmd
    from kurahi.cli.session import tree as tree_cmd
    from kurahi.context.files import project_file
    from kurahi.pi.stats import transcript_stats
    from kurahi.pi.transcript import Transcript
    from kurahi.store.repair import repair_torn_tail
    from kurahi.store.session import Session
    from kurahi.testing import build_session, user_message

    with translate_errors():
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=False)
            workdir = keep
            cleanup = None
        else:
            cleanup = tempfile.TemporaryDirectory(prefix="kurahi-demo-")
            workdir = Path(cleanup.name)
        try:
            path = workdir / "demo-session.jsonl"
            console.rule("[bold]1. Write a session through the store")
            started = time.perf_counter()
            with Progress(
                TextColumn("writing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console.get()
            ) as bar:
                task = bar.add_task("write", total=entries)
                report = build_session(
                    path,
                    entries=entries,
                    seed=seed,
                    markers=["HARBOUR-LANTERN-42"],
                    progress=lambda n: bar.update(task, completed=min(n, entries)),
                )
            console.print(
                f"{report.entries} entries in {report.turns} turns, {report.branches} branches, "
                f"{report.compactions} compactions, {path.stat().st_size / 1e6:.1f} MB "
                f"in {time.perf_counter() - started:.1f} s"
            )

            console.rule("[bold]2. Crash mid-write: a torn last line")
            with Session.open(path) as s:
                acked = s.append_message(user_message("Could you break the second action item down further?", 0))
            with open(path, "ab") as fh:  # what a power cut mid-write leaves behind
                fh.write(b'{"type":"message","id":"deadbeef","parentId":"' + acked.encode() + b'","mess')
            with Transcript.open(path) as t:
                ok = acked in t
                console.print(f"reopened: acknowledged entry {acked} present: [bold green]{ok}[/]")
                for w in t.warnings:
                    console.print(f"[yellow]warning[/] line {w.line}: {w.message}")
            rep = repair_torn_tail(path)
            console.print(f"repair: moved line {rep.line} ({rep.bytes_moved} bytes) to {Path(rep.sidecar or '').name}")

            console.rule("[bold]3. A durable leaf move (Pi forgets these on reopen)")
            with Session.open(path) as s, Transcript.open(path) as t:
                back_to = t.path()[-6].id
                s.branch(back_to)
            ctx = project_file(path).context
            console.print(f"after reopening, the leaf is still {back_to}: {len(ctx.messages)} messages")

            console.rule("[bold]4. Stats")
            stats_cmd(path, as_json=False)
            console.rule("[bold]5. Tree (linear runs collapsed)")
            tree_cmd(path, full=False, expand=False, as_json=False)
            console.rule("[bold]6. Projection")
            started = time.perf_counter()
            result = project_file(path)
            took = time.perf_counter() - started
            msgs = result.context.messages
            with Transcript.open(path) as t:
                facts = transcript_stats(t)
            console.print(
                Panel.fit(
                    f"{len(msgs)} messages projected from {facts['entries']} entries "
                    f"(scanned {result.entries_read} from the end) in {took * 1000:.1f} ms\n"
                    f"model {result.context.model}, thinking {result.context.thinking_level}\n"
                    f"`kurahi session context {path} --json` prints exactly what Pi's buildSessionContext returns",
                    title="context",
                )
            )
            console.rule("[bold]7. An unplanned reset, rebuilt: A + B → C")
            _reset_and_rebuild(workdir, path)
            if keep is not None:
                console.print(f"kept in {workdir}")
        finally:
            if cleanup is not None:
                cleanup.cleanup()
    os.environ.pop("KURAHI_DEMO", None)


def _reset_and_rebuild(workdir: Path, before: Path) -> None:
    """Continue in a new session (a reset), then stitch the two and check both sides are live."""
    from kurahi.lineage.check import check
    from kurahi.lineage.stitch import stitch
    from kurahi.store.session import Session
    from kurahi.testing import assistant_message, user_message

    with Session.open(before) as s:
        s.append_message(user_message("Before the reset: the lantern code is HARBOUR-LANTERN-42.", 1))
        s.append_message(assistant_message([{"type": "text", "text": "Noted: HARBOUR-LANTERN-42."}], 2))
    after = workdir / "after-reset.jsonl"
    with Session.create(after, cwd="/home/resident") as s:
        s.append_message(user_message("After the reset: the tide word is ORCHARD-TIDE-7.", 3))
        s.append_message(assistant_message([{"type": "text", "text": "Carrying on with ORCHARD-TIDE-7."}], 4))
    markers = ["HARBOUR-LANTERN-42", "ORCHARD-TIDE-7"]
    alone = check(after, markers=markers)
    console.print(f"B alone: {alone.messages} messages; {_hits(alone.markers)}")
    stitched = workdir / "stitched.jsonl"
    report = stitch([before, after], stitched)
    result = check(stitched, markers=markers)
    console.print(
        f"C = A + B: {report.to_dict()['identicalLines']} lines copied byte for byte, "
        f"{len(report.edges)} re-parented root; {result.messages} messages, fast and reference projections "
        f"{'agree' if result.projections_agree else '[red]DISAGREE[/]'}; {_hits(result.markers)}"
    )


def _hits(markers: list[Any]) -> str:
    return ", ".join(f"{m.marker} {'[green]present[/]' if m.index is not None else '[red]missing[/]'}" for m in markers)
