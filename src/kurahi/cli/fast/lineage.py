"""What ``kurahi lineage stitch`` and ``kurahi lineage check`` do once their arguments are parsed.

Kept free of typer so that the commands' fast path (:mod:`kurahi.cli.fast.dispatch`) and the Typer
commands (:mod:`kurahi.cli.lineage.commands`) run the same code: only the parsing differs. Each
function returns the exit code; errors leave through :func:`~kurahi.cli.common.translate_errors`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kurahi.cli.common import EXIT, print_json, shown, translate_errors, warn
from kurahi.cli.output import Part, say, table
from kurahi.errors import UsageError

if TYPE_CHECKING:
    from kurahi.lineage.check import MarkerHit

__all__ = ["run_check", "run_stitch"]


def _input_file(source: Path | str) -> Path:
    """The file an evidence manifest records for a source: a SQLite session's store."""
    from kurahi.runtimes.sources import parse_sqlite_source

    parsed = parse_sqlite_source(source)
    return parsed[0] if parsed is not None else Path(source)


def run_stitch(
    sources: Sequence[Path | str],
    out: Path,
    *,
    leaf: str | None = None,
    report: Path | None = None,
    rename_colliding: bool = False,
    force: bool = False,
    evidence: Path | None = None,
    as_json: bool = False,
) -> int:
    """Stitch ``sources`` (A, then B and later pieces) into ``out``; print the summary."""
    import msgspec

    from kurahi.fs.durable import atomic_write
    from kurahi.lineage.stitch import stitch
    from kurahi.runtimes.own_files import starts_as_transcript

    if sources and not any(str(p).startswith("sqlite:") or starts_as_transcript(p) for p in sources):
        from kurahi.runtimes.registry import own_file_view, own_stitch

        with translate_errors():
            extra = leaf is not None or rename_colliding or force or report is not None or evidence is not None
            if extra and own_file_view(sources[0]) is not None:
                raise UsageError(
                    "--leaf, --rename-colliding, --force, --report and --evidence are for Pi transcripts; "
                    "a Claude Code stitch takes each piece's own leaf and never overwrites"
                )
            done = own_stitch([Path(p) for p in sources], out)
        if done is not None:
            if as_json:
                print_json(done)
            else:
                for s in done["sources"]:
                    say(f"{s['source']}: {s['rows']} rows, {s['messages']} messages")
                say(f"wrote {done['out']}: resume it with `{done['resume']}` from its project's folder")
            return EXIT.OK
    with translate_errors():
        # Refused before C is written: a --report that exists (a dangling symlink too) or is C
        # itself, an --evidence folder that is not empty.
        if report is not None and (os.path.lexists(report) or report.resolve() == out.resolve()):
            raise UsageError(f"--report {report}: exists; stitch never overwrites a file")
        if evidence is not None and os.path.lexists(evidence) and (not evidence.is_dir() or any(evidence.iterdir())):
            raise UsageError(f"--evidence {evidence}: exists and is not an empty directory")
        rep = stitch(list(sources), out, leaf_id=leaf, rename_colliding=rename_colliding, force=force)
        data = rep.to_dict()
        if report is not None:
            # msgspec writes the same JSON (compact, UTF-8) several times faster than json.dumps.
            atomic_write(report, msgspec.json.encode(data), mode=0o644)
        if evidence is not None:
            from kurahi.lineage.evidence_dir import write_evidence

            write_evidence(
                evidence,
                inputs={f"source{i}": _input_file(p) for i, p in enumerate(sources)},
                outputs={"stitched": out},
                reports={"stitch": data},
            )
    for w in rep.warnings:
        warn(w)
    summary = {k: v for k, v in data.items() if k != "sources"}
    summary["sources"] = [{k: v for k, v in s.items() if k != "lines"} for s in data["sources"]]
    if as_json:
        print_json(summary)
        return EXIT.OK
    table(
        ["source", "role", "entries", "copied", "left out", "reset-time leaf"],
        [[s.path, s.role, str(s.entries), str(s.copied), str(s.not_copied), str(s.leaf_id)] for s in rep.sources],
        right=[2, 3, 4],
    )
    say(
        f"wrote {out} (sha256 {rep.out_sha256[:16]}…): {data['identicalLines']} lines byte-identical "
        f"to their source, {data['changedLines']} changed ({', '.join(e['child'] for e in rep.edges)} re-parented)"
    )
    return EXIT.OK


def run_check(
    file: Path,
    *,
    markers: Sequence[str] = (),
    window: int | None = None,
    reserves: Sequence[int] = (),
    system_prompt_tokens: Sequence[int] = (),
    evidence: Path | None = None,
    runtime: str | None = None,
    as_json: bool = False,
    one_shot: bool = False,
) -> int:
    """Check ``file``; print the report.

    1 when a marker is missing from the chosen runtime's view or the projections disagree.
    ``one_shot``: this process runs this one command, then leaves by ``os._exit`` (see
    :func:`kurahi.lineage.check.check`).
    """
    from kurahi.lineage.check import check, own_view_of
    from kurahi.runtimes.views import reset_view, whole_path_views

    with translate_errors():
        own = own_view_of(str(file), runtime)
    if own is not None:
        return _print_own_check(file, own, markers, runtime, evidence, as_json)
    with translate_errors():
        rep = check(
            str(file) if str(file).startswith("sqlite:") else file,
            markers=list(markers),
            window=window,
            reserves=list(reserves) or None,
            system_prompt_tokens=list(system_prompt_tokens) or [0],
            runtime=runtime,
            one_shot=one_shot,
        )
        if evidence is not None:
            from kurahi.lineage.evidence_dir import write_evidence

            write_evidence(
                evidence, inputs={"transcript": _input_file(str(file))}, outputs={}, reports={"check": rep.to_dict()}
            )
    if as_json:
        print_json(rep.to_dict())
        return EXIT.OK if rep.ok else EXIT.FAILED
    agree: Part = ("agree", "green") if rep.projections_agree else ("DISAGREE", "bold red")
    say(
        (shown(file), "bold"),
        f": {rep.messages} messages; fast and reference projections ",
        agree,
        f" (sha256 {rep.fast_sha256[:16]}…)",
    )
    if rep.compaction_id:
        say(f"operative compaction {rep.compaction_id}: 1 summary + {rep.retained} retained + {rep.later} later")
    if rep.runtime_messages is not None:
        say(f"OpenClaw 2026.9 sends only what follows the last reset entry: {rep.runtime_messages} messages")
    source = "the last recorded usage" if rep.tokens_from == "usage" else "the content"
    say(
        f"verdict for {rep.runtime} ({rep.runtime_reason}): {rep.view_messages} messages, "
        f"about {rep.tokens} tokens (estimated from {source})"
    )
    view = rep.view
    if view is not None:
        sent: Part = (
            (f"all {view.messages} messages", "green")
            if view.fits
            else (f"{len(view.sent)} of {view.messages} messages", "bold yellow")
        )
        say(f"{rep.runtime} sends ", sent, f" under the {rep.window:,}-token window ({rep.window_from}): {view.rule}")
    if rep.markers:

        def cell(index: int | None) -> Part:
            return (f"yes ({index})", "green") if index is not None else ("missing", "bold red")

        def sent_cell(m: MarkerHit) -> Part:
            why = rep.not_sent(m)
            if why is not None:
                return (why, "bold red")
            return ("yes", "green") if rep.view_index(m) is not None else ("-", "")

        table(
            ["marker", " / ".join(whole_path_views()), reset_view(), "part", f"sent by {rep.runtime}"],
            [[m.marker, cell(m.index), cell(m.runtime_index), m.part or "-", sent_cell(m)] for m in rep.markers],
        )
    for f in rep.refused:
        say(
            ("REFUSED", "bold red"),
            f" {f['code']} at entry {f['entryId']} (line {f['line']}): refused by {', '.join(f['refusedBy'])}; "
            "mend with `kurahi session doctor --fix`",
        )
    if rep.routes:
        keys = ("systemPromptTokens", "reserveTokens", "contextTokens", "threshold", "headroom", "route")
        table(
            ["system prompt", "reserve", "tokens", "threshold", "headroom", "route"],
            [[str(r[k]) for k in keys] for r in rep.routes],
            right=range(6),
        )
    return EXIT.OK if rep.ok else EXIT.FAILED


def _print_own_check(
    file: Path, own: Any, markers: Sequence[str], runtime: str | None, evidence: Path | None, as_json: bool
) -> int:
    """``lineage check`` of a runtime's own session file (Claude Code's): 1 when a marker is not sent next."""
    from kurahi.lineage.check import check_own

    rep = check_own(own, markers, "--runtime" if runtime is not None else "its rows")
    if evidence is not None:
        from kurahi.lineage.evidence_dir import write_evidence

        with translate_errors():
            write_evidence(evidence, inputs={"transcript": Path(file)}, outputs={}, reports={"check": rep.to_dict()})
    if as_json:
        print_json(rep.to_dict())
        return EXIT.OK if rep.ok else EXIT.FAILED
    say(
        (shown(file), "bold"),
        f": {own.label} session {own.session_id or '-'}; `{rep.resume}` sends {rep.messages} messages, "
        f"about {rep.tokens} tokens, from leaf {rep.leaf} ({rep.leaf_from})",
    )
    for note in rep.notes:
        say(("note: ", "yellow"), note)
    if rep.markers:

        def sent(m: dict[str, Any]) -> Part:
            return (f"yes ({m['index']}, {m['role']})", "green") if m["sent"] else ("missing", "bold red")

        table(["marker", f"sent by {own.label}"], [[m["marker"], sent(m)] for m in rep.markers])
    return EXIT.OK if rep.ok else EXIT.FAILED
