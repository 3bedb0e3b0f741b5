"""``kurahi evidence``: where a reply's phrases could have come from."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kurahi.cli.common import EXIT, console, fail, print_json, shown, stdin_files, translate_errors

if TYPE_CHECKING:
    from kurahi.lineage.provenance import ProvenanceReport

__all__ = ["app"]

app = typer.Typer(
    help="Evidence about a resident's replies: provenance of phrases, packets for a repair.", no_args_is_help=True
)


@app.callback()
def evidence() -> None:
    """Evidence about a resident's replies: where their phrases could have come from."""


def _home_sources(home: Path, agent: str, key: str) -> tuple[Path, Path, list[Path]]:
    """The transcript, workspace and other transcripts of a catalog key in a Kurahi home."""
    from kurahi.cli.home import home_root
    from kurahi.errors import ProvenanceError
    from kurahi.resident.home import Home
    from kurahi.store.base import transcript_name
    from kurahi.store.catalog import CATALOG_NAME
    from kurahi.store.open import default_backend

    # Provenance reads files (transcripts and the workspace), so it works on a home's own files.
    home = home_root(home)
    paths = Home.at(home).agent(agent, must_exist=True)
    store = default_backend(home).agent(agent)
    sessions = store.sessions_dir
    assert sessions is not None  # a home's default store is its files
    entry = store.catalog.get(key)
    if entry is None:
        raise ProvenanceError(f"no session key {key!r}", kind="not-found", path=sessions / CATALOG_NAME)
    name = transcript_name(entry)
    if name is None or not store.transcripts.exists(name):
        raise ProvenanceError(f"the transcript of {key!r} is missing", kind="not-found", path=sessions)
    others = [sessions / n for n in store.transcripts.names() if n != name]
    return sessions / name, paths.workspace, others


@app.command("provenance")
@stdin_files("transcript")
def provenance_cmd(
    home: Path | None = typer.Option(None, "--home", help="A Kurahi home (with --agent and --key)."),
    agent: str | None = typer.Option(None, "--agent", help="The agent id in the home."),
    key: str | None = typer.Option(None, "--key", help="The session key (its catalog entry names the transcript)."),
    transcript: Path | None = typer.Option(
        None, "--transcript", help="A transcript file (instead of --home); - reads it from stdin."
    ),
    workspace: Path | None = typer.Option(None, "--workspace", help="The resident's workspace (with --transcript)."),
    reply: str | None = typer.Option(None, "--reply", help="The assistant reply's entry id (default: the latest)."),
    phrase: list[str] = typer.Option([], "--phrase", help="A phrase to trace (repeatable)."),
    auto: bool = typer.Option(False, "--auto", help="Also trace the reply's distinctive tokens missing from the cue."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Where each phrase of a reply occurs (cue, tools, context, workspace, elsewhere) and the verdict.

    Verdicts, first that applies wins: cue, tool, context-only, workspace, elsewhere, absent.
    Reads only; nothing is written.
    """
    from kurahi.errors import ProvenanceError
    from kurahi.lineage.provenance import provenance

    if (home is None) == (transcript is None):
        fail("give either --home with --agent and --key, or --transcript", EXIT.USAGE)
    with translate_errors():
        try:
            others: list[Path] = []
            if home is not None:
                if agent is None or key is None:
                    fail("--home needs --agent and --key", EXIT.USAGE)
                if workspace is not None:
                    fail("--workspace goes with --transcript; a home names its own", EXIT.USAGE)
                transcript, workspace, others = _home_sources(home, agent, key)
            assert transcript is not None
            report = provenance(
                transcript, reply_id=reply, phrases=phrase, auto=auto, workspace=workspace, other_transcripts=others
            )
            report.transcript = shown(report.transcript)  # <stdin> for -, not the private copy's path
        except ProvenanceError as exc:  # its kind picks the exit code (ProvenanceError.exit_code)
            fail(str(exc), exc.exit_code)
    if as_json:
        print_json(report.to_dict())
        return
    _print(report)


def _print(report: ProvenanceReport) -> None:
    from kurahi.cli.output import say, table

    cue = ", ".join(map(str, report.cue_ids)) or "-"
    say(
        "reply ",
        (report.reply_id, "cyan"),
        f" in {report.transcript}: cue {cue}, {report.tool_calls} tool call(s), {report.reads} read(s), "
        f"{report.context_messages} context message(s)"
        + (f", compaction {report.compaction_id}" if report.compaction_id else ""),
    )
    rows = []
    for p in report.phrases:
        c = p.counts
        rows.append(
            [
                p.phrase,
                p.verdict,
                str(c.get("cue", 0)),
                str(c.get("tool", 0)),
                str(c.get("context", 0)),
                str(c.get("workspace", 0) + c.get("memory", 0)),
                str(c.get("transcript", 0) + c.get("other-transcript", 0)),
                "; ".join(p.reasons),
            ]
        )
    headers = ["phrase", "verdict", "cue", "tool", "context", "workspace", "elsewhere", "reasons"]
    table(headers, rows, right=(2, 3, 4, 5, 6), keys=range(1, 7))
    if report.skipped_files:
        say(f"skipped: {', '.join(report.skipped_files)}")


@app.command("packet")
def packet_cmd(
    out: Path = typer.Option(..., "--out", help="The packet folder (new or empty)."),
    source: list[Path] = typer.Option([], "--source", help="A source transcript (repeatable: A, B, ...)."),
    reconstruction: Path | None = typer.Option(None, "--reconstruction", help="The reconstructed transcript (C)."),
    activation: Path | None = typer.Option(None, "--activation", help="The activation package directory."),
    live: Path | None = typer.Option(None, "--live", help="The live transcript after activation (first replies)."),
    replies: int = typer.Option(3, "--replies", min=0, help="How many first replies to record."),
    after: str | None = typer.Option(None, "--after", help="Only replies after this entry id."),
    phrase: list[str] = typer.Option([], "--phrase", help="Trace this phrase in each recorded reply (repeatable)."),
    workspace: Path | None = typer.Option(None, "--workspace", help="The workspace, for the provenance reports."),
    hashes_only: bool = typer.Option(False, "--hashes-only", help="Keep hashes, leave transcript content out."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Write one folder documenting a continuity repair, with a SHA256SUMS file over all of it."""
    from kurahi.errors import ProvenanceError
    from kurahi.lineage.packet import first_replies, write_packet
    from kurahi.lineage.provenance import provenance

    for given in [*source, reconstruction, live]:
        if given is not None and not given.exists():
            fail(f"{given}: no such file", EXIT.NOT_FOUND)
    if activation is not None and not activation.is_dir():
        fail(f"{activation}: no such directory", EXIT.NOT_FOUND)
    with translate_errors():
        reports = []
        if live is not None and phrase:
            for r in first_replies(live, replies, after=after):
                try:
                    rep = provenance(live, reply_id=r["entryId"], phrases=phrase, workspace=workspace)
                except ProvenanceError as exc:
                    fail(str(exc), exc.exit_code)
                reports.append(rep.to_dict())
        folder = write_packet(
            out,
            sources=source,
            reconstruction=reconstruction,
            activation=activation,
            live=live,
            replies=replies,
            after=after,
            provenance=reports,
            hashes_only=hashes_only,
        )
    files = sum(1 for p in folder.rglob("*") if p.is_file())
    if as_json:
        print_json({"folder": str(folder), "files": files, "hashesOnly": hashes_only, "reports": len(reports)})
    else:
        console.print(f"packet written to {folder}: {files} files, SHA256SUMS over all of them")


@app.command("verify")
def verify_cmd(
    folder: Path = typer.Argument(..., help="The packet folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Re-check a packet: every file against SHA256SUMS, nothing unlisted, copies against their originals' hashes."""
    from kurahi.lineage.packet import verify_packet

    if not folder.is_dir():
        fail(f"{folder}: no such directory", EXIT.NOT_FOUND)
    with translate_errors():
        result = verify_packet(folder)
    if as_json:
        print_json(result.to_dict())
    elif result.ok:
        console.print(f"[green]verified[/]: {result.checked} files")
    else:
        console.print(f"[bold red]does not verify[/]: {result.problems[0]}")
    if not result.ok:
        raise typer.Exit(EXIT.FAILED)
