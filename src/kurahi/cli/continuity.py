"""``kurahi continuity run|verify|badge``: prove a resident survives four disruptions."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from kurahi.cli.common import EXIT, console, err_console, fail, print_json, stdin_files, translate_errors

__all__ = ["app"]

app = typer.Typer(help="The continuity suite: disruptions, invariants C0-C9, signed reports.", no_args_is_help=True)


def _checker() -> Any:
    from kurahi.continuity.manifest import verify_manifest

    def check(manifest: dict[str, Any]) -> tuple[bool, str]:
        try:
            result = verify_manifest(manifest)
        except Exception as exc:
            return False, str(exc)
        return bool(result.ok), str(result.reason or "verifies")

    return check


@app.command("run")
def run_command(
    throwaway: Annotated[
        bool, typer.Option("--throwaway", help="A fresh gateway in a temporary home (KOLO_SMOKE_HOME if set).")
    ] = False,
    resident: Annotated[str, typer.Option("--resident", help="The resident (agent id).")] = "alice",
    disruption: Annotated[
        str, typer.Option("--disruption", help="model-swap,restart,move,close, all, or none (with --rounds).")
    ] = "all",
    rounds: Annotated[
        int,
        typer.Option(
            "--rounds",
            min=0,
            help="Then N continuity-preserving rollovers with compactions in between, each scored.",
        ),
    ] = 0,
    swap_to: Annotated[str | None, typer.Option("--swap-to", help="The model profile to swap to.")] = None,
    facts: Annotated[
        Path | None, typer.Option("--facts", help="JSON array of {query, expect} for the recall probe.")
    ] = None,
    chat: Annotated[bool, typer.Option("--chat", help="Probe with a chat turn (always on in throwaway mode).")] = False,
    out: Annotated[Path, typer.Option("--out", help="Where the reports go.")] = Path("continuity-out"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    openclaw: Annotated[
        Path | None, typer.Option("--openclaw", help="Test an OpenClaw resident: its state dir (OPENCLAW_STATE_DIR).")
    ] = None,
    openclaw_bin: Annotated[
        str | None, typer.Option("--openclaw-bin", help="The openclaw to run (default: the one on PATH).")
    ] = None,
    attached: Annotated[
        bool,
        typer.Option("--attached", help="With --openclaw: use the running gateway (token in OPENCLAW_GATEWAY_TOKEN)."),
    ] = False,
    repair: Annotated[
        bool, typer.Option("--repair", help="With --openclaw and the reset disruption: repair and measure again.")
    ] = False,
    reset_key: Annotated[
        str | None,
        typer.Option(
            "--reset-key",
            help="With --openclaw: the session the reset disruption resets (default agent:<resident>:"
            "continuity-reset, a session of the suite's own).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run the suite and write continuity-report.json, continuity-report.md and continuity-badge.txt.

    Exit 0 when the verdict is PASS, 1 when an invariant failed. Attached mode (without
    --throwaway) uses the gateway running on KOLO_HOME and its owner token; never a flag.
    """
    if openclaw is not None:
        _run_openclaw(
            openclaw, openclaw_bin, attached, repair, reset_key, resident, disruption, rounds, swap_to, out, as_json
        )
        return
    if openclaw_bin is not None or attached or repair or reset_key is not None:
        fail("--openclaw-bin, --attached, --repair and --reset-key go with --openclaw STATE_DIR", EXIT.INVALID)
    from kurahi.extras import require

    with translate_errors():
        require("gateway", "kurahi continuity run")
    from kurahi.continuity.targets.kurahi import DISRUPTIONS, SuiteOptions, report_signer, run_suite

    if disruption == "all":
        chosen = list(DISRUPTIONS)
    elif disruption == "none":
        chosen = []
    else:
        chosen = [d.strip() for d in disruption.split(",") if d.strip()]
    fact_list = None
    if facts is not None:
        try:
            fact_list = json.loads(facts.read_text())
        except (OSError, ValueError) as exc:
            fail(f"{facts}: cannot read the facts: {exc}", EXIT.INVALID)
        if not isinstance(fact_list, list) or not all(
            isinstance(f, dict) and isinstance(f.get("query"), str) and isinstance(f.get("expect"), str)
            for f in fact_list
        ):
            fail(f'{facts}: must be a JSON array of {{"query": ..., "expect": ...}}', EXIT.INVALID)
    with _progress("continuity suite") as progress:
        opts = SuiteOptions(
            throwaway=throwaway,
            resident=resident,
            disruptions=chosen,
            swap_to=swap_to,
            facts=fact_list,
            chat=chat or throwaway,
            rounds=rounds,
            progress=progress,
        )
        with translate_errors():
            report = run_suite(opts, check_manifest=_checker(), signer_for=report_signer)
    _print_report(report, out, as_json)


def _print_report(report: dict[str, Any], out: Path, as_json: bool) -> None:
    from kurahi.continuity.report import write_report

    paths = write_report(report, out)
    body = report["body"]
    if as_json:
        print_json({"summary": body["summary"], "badge": body["badge"], "report": str(paths["json"])})
    else:
        for run in body["runs"]:
            marks = " ".join(f"{r['id']}:{r['status']}" for r in run["invariants"])
            console.print(f"[bold]{run['disruption']:<10}[/] {marks}", soft_wrap=True)
        for ev in body.get("rounds") or []:
            state = "unmarked" if ev["verdict"]["ok"] else f"MARKED: {ev['verdict']['detail']}"
            console.print(f"[bold]round {ev['round']:<4}[/] {state}", soft_wrap=True, markup=True)
        if body.get("interrupted"):
            cut = body["interrupted"]
            err_console.print(f"interrupted during {cut['disruption']}: {cut['reason']}", soft_wrap=True)
        console.print(body["badge"], soft_wrap=True)
        console.print(f"reports in {out}")
    if body["summary"]["verdict"] != "PASS":
        raise typer.Exit(EXIT.FAILED)


@contextlib.contextmanager
def _progress(title: str) -> Iterator[Callable[[str], None]]:
    """A spinner on stderr for a suite run; yields the callback that says what it is doing now."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err_console.get()
    ) as bar:
        task = bar.add_task(title, total=None)
        yield lambda text: bar.update(task, description=text)


def _run_openclaw(
    state_dir: Path,
    binary: str | None,
    attached: bool,
    repair: bool,
    reset_key: str | None,
    resident: str,
    disruption: str,
    rounds: int,
    swap_to: str | None,
    out: Path,
    as_json: bool,
) -> None:
    from kurahi.continuity.targets.openclaw.target import OpenClawOptions, run_openclaw_suite

    four = list(OpenClawOptions.disruptions)  # "all": the four the default runs (reset is asked for by name)
    chosen: list[str] = []
    for d in [d.strip() for d in disruption.split(",") if d.strip() and d.strip() != "none"]:
        chosen += four if d == "all" else [d]
    with _progress("continuity suite (OpenClaw)") as progress:
        opts = OpenClawOptions(
            state_dir=state_dir,
            resident="main" if resident == "alice" else resident,
            disruptions=chosen,
            supervised=not attached,
            binary=binary,
            swap_to=swap_to,
            repair=repair,
            reset_key=reset_key,
            rounds=rounds,
            work_dir=out.absolute(),
            progress=progress,
        )
        with translate_errors():
            report = run_openclaw_suite(opts, check_manifest=_checker())
    _print_report(report, out, as_json)


@app.command("verify")
@stdin_files("report")
def verify_command(
    report: Annotated[Path, typer.Argument(help="continuity-report.json")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Recompute every hash, root, signature and score in a report; name the first mismatch (exit 1)."""
    from kurahi.continuity.report import read_report, verify_report

    if not report.is_file():
        fail(f"{report}: no such file", EXIT.NOT_FOUND)
    with translate_errors():
        data = read_report(report)
    result = verify_report(data, check_manifest=_checker())
    if as_json:
        print_json(result.to_dict())
    elif result.ok:
        console.print(f"[green]verified[/]: {data['body']['badge']}", soft_wrap=True)
    else:
        err_console.print(f"[bold red]does not verify[/]: {result.problems[0]}")
    if not result.ok:
        raise typer.Exit(EXIT.FAILED)


@app.command("badge")
@stdin_files("report")
def badge_command(report: Annotated[Path, typer.Argument(help="continuity-report.json")]) -> None:
    """Print the badge; UNVERIFIED is appended when the report does not recompute."""
    from kurahi.continuity.report import read_report, verify_report

    if not report.is_file():
        fail(f"{report}: no such file", EXIT.NOT_FOUND)
    try:
        data = read_report(report)
    except Exception as exc:
        console.print(f"continuity FAIL | unreadable report | UNVERIFIED ({exc})")
        raise typer.Exit(EXIT.FAILED) from None
    result = verify_report(data, check_manifest=_checker())
    line = data["body"]["badge"] + ("" if result.ok else " UNVERIFIED")
    console.print(line, soft_wrap=True)
    if not result.ok:
        raise typer.Exit(EXIT.FAILED)
