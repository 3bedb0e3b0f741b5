"""``kurahi rescue``: notice when a resident lost its past, and bring it back in one command."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kurahi.cli.common import EXIT, activation_errors, fail, print_json, translate_errors
from kurahi.cli.output import Part, say, table

if TYPE_CHECKING:
    from kurahi.lifecycle.rescue.apply import RescuePlan
    from kurahi.lifecycle.rescue.losses import Loss, RescueReport
    from kurahi.runtimes.session_losses import SessionLoss

__all__ = ["app"]

app = typer.Typer(
    help=(
        "Notice when a resident lost its past (a reset, a rollover, a moved dir, an upgrade), and bring it back; "
        "list what `claude --resume` silently drops."
    ),
    epilog=(
        "Claude Code (--claude DIR, or found in CLAUDE_CONFIG_DIR / ~/.claude): per session, what the next "
        "`claude --resume` no longer sends, by kind: null-parent, progress-parent, sidechain-parent, wrong-parent, "
        "sibling-fork, compact-null, preserved-missing, continue-elsewhere; what a rewind could have written is a "
        "guess. `rescue apply ID --claude DIR` appends the broken row re-linked (the way Claude Code writes; "
        "a later row with the same uuid wins), keeps a package, verifies; `kurahi activate rollback PKG` undoes "
        "it. preserved-missing: the kept rows are rebuilt from the request records the file keeps, when they "
        "hold their words unambiguously (else the listing says why). "
        "See docs/claude-code.md."
    ),
    invoke_without_command=True,
)

OpenClawOpt = Annotated[
    Path | None,
    typer.Option("--openclaw", help="An OpenClaw state dir (default: OPENCLAW_STATE_DIR, else ~/.openclaw)."),
]
PiOpt = Annotated[Path | None, typer.Option("--pi", help="Pi's sessions folder (default: where Pi keeps them).")]
ClaudeOpt = Annotated[
    Path | None,
    typer.Option(
        "--claude",
        help=(
            "A Claude Code config dir (its projects/ folder; a plain `kurahi rescue` looks in CLAUDE_CONFIG_DIR, "
            "else ~/.claude): list what `claude --resume` no longer sends; with apply/plan, the dir the loss is in."
        ),
    ),
]
HomeOpt = Annotated[Path | None, typer.Option("--home", help="A Kurahi home (default: KURAHI_HOME, else ~/.kolo).")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Only this agent.")]
KeyOpt = Annotated[str | None, typer.Option("--key", help="Only this session key.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]
LossArg = Annotated[str, typer.Argument(help="The loss id `kurahi rescue` printed (a unique prefix will do).")]
MarkerOpt = Annotated[
    list[str] | None,
    typer.Option("--marker", help="A phrase of your own that must come back (repeatable); checked with Kurahi's."),
]
GuessOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--accept-guess",
        help="Confirm a loss linked by clocks alone is this key's (repeatable; --yes never confirms a guess).",
    ),
]


class Target:
    """One state to look at: where, what it is, and why there."""

    def __init__(self, path: Path, kind: str, why: str) -> None:
        self.path, self.kind, self.why = path, kind, why


_OPTION = {"kurahi": "home"}
"""A target's option, where it is not its kind's name."""


def _targets(openclaw: Path | None, pi: Path | None, home: Path | None, claude: Path | None = None) -> list[Target]:
    """The states named by an option, else every state found where ``kurahi doctor`` looks."""
    from kurahi.locations.dirs import kurahi_home
    from kurahi.runtimes.registry import RUNTIMES

    named = ((openclaw, "openclaw"), (pi, "pi"), (home, "kurahi"), (claude, "claude"))
    given = [(p, k) for p, k in named if p is not None]
    if len(given) > 1:
        fail("give at most one of --openclaw, --pi, --home and --claude", EXIT.USAGE)
    if given:
        path, kind = given[0]
        option = f"--{_OPTION.get(kind, kind)}"
        if not path.is_dir():
            fail(f"{path}: no such directory ({option})", EXIT.NOT_FOUND)
        return [Target(path, kind, option)]
    with translate_errors():
        # States of agents first, then Kurahi's own home, then folders of session files.
        found = [(r.locate(), r.name) for r in RUNTIMES if r.keyed]
        found += [(kurahi_home(), "kurahi"), *((r.locate(), r.name) for r in RUNTIMES if not r.keyed)]
    out = [Target(loc.path, kind, loc.source) for loc, kind in found if loc.path.is_dir()]
    if not out:
        where = ", ".join(str(loc.path) for loc, _ in found)
        fail(
            f"no OpenClaw, Kurahi, Pi or Claude Code state found (looked in {where}); name one with --openclaw DIR",
            EXIT.NOT_FOUND,
        )
    return out


@contextlib.contextmanager
def _busy(what: str) -> Iterator[None]:
    """A spinner on stderr while the state is read (only on a terminal)."""
    if not sys.stderr.isatty():
        yield
        return
    from kurahi.cli.common import err_console

    with err_console.get().status(what):
        yield


def _report(target: Target, agent: str | None, key: str | None) -> RescueReport:
    from kurahi.errors import KurahiError, UsageError
    from kurahi.lifecycle.rescue.losses import RescueReport, find_losses, own_losses
    from kurahi.runtimes.registry import for_state_dir, named

    runtime = for_state_dir(target.path) if target.kind == "kurahi" else named(target.kind)
    with _busy(f"reading {target.path}…"):
        try:
            own = own_losses(runtime, target.path, target.kind)
        except KurahiError as exc:
            if target.why.startswith("--"):
                raise  # the user named it: say what is wrong with it
            # Found where the program keeps its state by default, but it cannot be read.
            return RescueReport(str(target.path), target.kind, [], 0, [], [f"skipped: {exc}"], [str(target.path)])
    if own is not None:
        return own  # a runtime that lists its own losses (inside its session files)
    if not runtime.keyed:
        # A runtime without keys keeps each session in a file of its own and never resets one by itself.
        return RescueReport(str(target.path), target.kind, [], 0, [], [runtime.no_losses])
    with _busy(f"reading {target.path}…"):
        try:
            return find_losses(target.path, agent=agent, key=key, state_kind=target.kind)
        except UsageError as exc:
            if target.why.startswith("--"):
                raise  # the user named it: say what is wrong with it
            # Found where the program keeps its state by default, but nothing to read there.
            return RescueReport(str(target.path), target.kind, [], 0, [], [f"skipped: {exc}"])


def _short(ms_iso: str | None) -> str:
    return (ms_iso or "-").replace("T", " ")[:19]


def _fits(loss: Loss) -> Part:
    r = loss.restore
    if r.fits is None:
        return "window unknown"
    return ("yes", "green") if r.fits else (f"no: {r.figures}", "yellow")


def _print(reports: list[RescueReport]) -> None:
    losses = [loss for r in reports for loss in r.losses]
    inside = [loss for r in reports for loss in r.session_losses]
    for r in reports:
        counted = r.looked_at or f"{len(r.agents)} agent(s), {r.keys} key(s)"
        say(f"looked at {r.state_dir} ({r.kind}): {counted}")
        for note in r.notes:
            say(("note: ", "dim"), note)
    unread = [u for r in reports for u in r.unread]
    if not losses and not inside and unread:
        say(
            ("No loss found in what could be read", "yellow"),
            f": {len(unread)} transcript(s) could not be read (the notes above say why), so whether their "
            "history is still sent was not judged.",
        )
        return
    if not losses and not inside:
        say(("No loss found: every session's past is still in what the runtime sends.", "green"))
        return
    if inside:
        _print_inside(inside)
    if losses:
        _print_lineage(losses)


def _print_inside(losses: list[SessionLoss]) -> None:
    """Losses inside session files: the project and session stand where an agent and key would."""
    rows: list[list[Part]] = [
        [
            loss.id,
            loss.project,
            loss.session_id[:8],
            _short(loss.last_message_at),
            _short(loss.at),
            loss.kind,
            ("guess", "yellow") if loss.confidence == "guess" else loss.confidence,
            f"{loss.lost_messages} msgs, ~{loss.lost_tokens:,} tok",
        ]
        for loss in losses
    ]
    headers = ["id", "project", "session", "last said (UTC)", "broke at (UTC)", "kind", "link", "left the view"]
    table(headers, rows, keys=range(len(headers)), title=f"{len(losses)} loss(es) inside session files, oldest first")
    for loss in losses:
        say(f"  {loss.id}: {'; '.join(loss.evidence)}")
    for loss in losses:
        if loss.apply_refused:
            say(f"  {loss.id}: ", ("not brought back: ", "yellow"), loss.apply_refused)
    offered = [loss for loss in losses if not loss.apply_refused]
    if offered:
        first = offered[0]
        guess = f" --accept-guess {first.id}" if first.confidence == "guess" else ""
        say(
            "Bring one back: ",
            (f"kurahi rescue apply {first.id} --claude {first.state_dir}{guess}", "bold"),
            " (first quit any claude still running on that session); listing changed nothing",
        )


def _print_lineage(losses: list[Loss]) -> None:
    rows: list[list[Part]] = [
        [
            loss.id,
            loss.agent,
            loss.key,
            _short(loss.last_message_at),
            _short(loss.at),
            loss.kind,
            ("guess", "yellow") if loss.confidence == "guess" else loss.confidence,
            f"{loss.lost_messages} msgs, ~{loss.lost_tokens:,} tok",
            _fits(loss),
        ]
        for loss in losses
    ]
    headers = ["id", "agent", "key", "last said (UTC)", "lost at (UTC)", "kind", "link", "left the view", "fits back"]
    table(headers, rows, keys=range(len(headers)), title=f"{len(losses)} loss(es), oldest first")
    for loss in losses:
        say(f"  {loss.id}: {'; '.join(loss.evidence)}")
        if loss.restore.fits is False:
            say(
                f"  {loss.id}: does not fit back whole: {loss.restore.rule}; the newest part is brought back and "
                "sent, the rest stays in the history (`rescue plan` says how much)"
            )
    offered = [loss for loss in losses if loss.apply_refused is None]
    if not offered:
        reasons = dict.fromkeys(loss.apply_refused or "" for loss in losses)
        for reason in reasons:
            say(("Not yet: ", "yellow"), reason)
        return
    for loss in losses:
        if loss.apply_refused is not None:
            say(f"  {loss.id}: ", ("cannot be brought back yet: ", "yellow"), loss.apply_refused)
    first = offered[0]
    guess = f" --accept-guess {first.id}" if first.confidence == "guess" else ""
    say("Bring one back: ", (f"kurahi rescue apply {first.id}{guess}", "bold"), " (stop OpenClaw first)")


def _json(reports: list[RescueReport]) -> dict[str, Any]:
    listed = ("losses", "sessionLosses")
    return {
        "targets": [{k: v for k, v in r.to_dict().items() if k not in listed} for r in reports],
        "losses": [
            *(loss.to_dict() for r in reports for loss in r.losses),
            *(loss.to_dict() for r in reports for loss in r.session_losses),
        ],
    }


@app.callback()
def rescue_cmd(
    ctx: typer.Context,
    openclaw: OpenClawOpt = None,
    pi: PiOpt = None,
    home: HomeOpt = None,
    claude: ClaudeOpt = None,
    agent: AgentOpt = None,
    key: KeyOpt = None,
    as_json: JsonOpt = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write the report as one HTML page, a picture per loss.")
    ] = None,
) -> None:
    """List every loss of every agent and key, oldest first; exit 0 when none, 1 when some.

    Reads only: the SQLite store through a private snapshot, files through the transcript
    reader; not one byte of the state changes. With no option, looks where `kurahi doctor`
    does (OpenClaw's state dir, the Kurahi home, Pi's sessions, Claude Code's config dir).
    Runs from cron: the exit code says whether something was lost.

    Claude Code (--claude DIR): per session, what the next `claude --resume` no longer sends
    (a row whose parent is null, a progress or subagent row, a wrong earlier row, the sibling
    fork of #88597, a null after /compact, a preserved tail the file lacks, `--continue` run
    from another directory), by a model of 2.1.332's loader; a loss that a rewind could have
    made is a guess. `kurahi rescue apply ID --claude DIR` brings one back by appending.
    """
    if ctx.invoked_subcommand is not None:
        return
    reports = []
    with activation_errors():
        for target in _targets(openclaw, pi, home, claude):
            reports.append(_report(target, agent, key))
        if html is not None:
            from kurahi.lifecycle.rescue.html import write_html

            write_html(reports, html)
    if as_json:
        print_json(_json(reports))
    else:
        _print(reports)
        if html is not None:
            say(f"wrote {html}")
    raise typer.Exit(EXIT.FAILED if any(r.count for r in reports) else EXIT.OK)


def _one(openclaw: Path | None, home: Path | None, loss_id: str | None = None) -> Path:
    from kurahi.runtimes.registry import named

    targets = [t for t in _targets(openclaw, None, home) if t.kind == "kurahi" or named(t.kind).keyed]
    if len(targets) == 1:
        return targets[0].path
    if loss_id is not None:
        _not_brought_back_here(loss_id)
    if not targets:
        fail("no OpenClaw state or Kurahi home found; name one with --openclaw DIR or --home DIR", EXIT.NOT_FOUND)
    fail("several states found; name one with --openclaw DIR or --home DIR", EXIT.USAGE)
    raise AssertionError  # pragma: no cover - fail() exits


def _not_brought_back_here(loss_id: str) -> None:
    """Say so when ``loss_id`` is a loss a runtime lists itself (inside its session files): not brought back yet."""
    from kurahi.errors import KurahiError
    from kurahi.lifecycle.rescue.losses import own_losses
    from kurahi.runtimes.registry import RUNTIMES

    for runtime in RUNTIMES:
        if runtime.keyed:
            continue
        where = runtime.locate().path
        if not where.is_dir():
            continue
        try:
            report = own_losses(runtime, where, runtime.name)
        except KurahiError:
            continue
        for loss in report.session_losses if report is not None else []:
            if loss.id.startswith(loss_id) and loss.apply_refused:
                fail(
                    f"{loss.id} is a {runtime.label} loss ({loss.kind} in {loss.source}): {loss.apply_refused} "
                    f"(coming); nothing was changed. `kurahi rescue --{runtime.name} {where}` lists it",
                    EXIT.FAILED,
                )


def _say_plan(plan: RescuePlan, applied: bool) -> None:
    loss = plan.loss
    lost = [m for m in plan.markers if m.part == "lost" and m.in_view]
    verb = "brought back" if applied else "will bring back"
    what = f"{verb} {plan.brought_back} message(s)"
    if plan.staying_out:
        what += f": {plan.brought_back_sent} sent"
    if lost:
        what += f", e.g. {lost[0].text!r}"
    if plan.staying_out:
        what += f"; {plan.staying_out} past the model's window stay out"
    say((f"{loss.id}", "bold"), f" ({loss.kind}, {loss.key}): {what}")
    if plan.sent_messages >= plan.view_messages:
        sends = f"all {plan.view_messages} message(s), ~{plan.sent_tokens:,} tokens of a {plan.window:,}-token window"
    else:
        sends = (
            f"the newest {plan.sent_messages} of {plan.view_messages} message(s) under its {plan.window:,}-token "
            f"window ({plan.rule})"
        )
    say(f"  the runtime ({plan.runtime}) sends {sends}")
    rows: list[list[Part]] = [
        [m.text, m.part, ("yes", "green") if m.in_view else ("not sent", "yellow")] for m in plan.markers
    ]
    table(["marker", "from", "in view"], rows, keys=(1, 2))
    if plan.staying_out:
        from kurahi.runtimes.views import view

        gone = f" ({', '.join(plan.not_sent)}: its marker among them)" if plan.not_sent else ""
        say(
            ("  stays out: ", "yellow"),
            f"{plan.staying_out} message(s), the oldest, are back in the history but past the "
            f"{plan.window:,}-token window{gone}; {view(plan.runtime).fold}",
        )


@app.command("plan")
def plan_cmd(
    loss_id: LossArg,
    out: Annotated[Path, typer.Option("--out", help="The package directory to write (new or empty).")],
    openclaw: OpenClawOpt = None,
    home: HomeOpt = None,
    agent: AgentOpt = None,
    marker: MarkerOpt = None,
    accept_guess: GuessOpt = None,
    as_json: JsonOpt = False,
    claude: ClaudeOpt = None,
) -> None:
    """Stitch, check and write the activation package for one loss; nothing in the state changes.

    A Claude Code loss (--claude DIR, or found in CLAUDE_CONFIG_DIR / ~/.claude): the package
    records the session file's size and sha256 and the rows `apply` appends; apply it with
    `kurahi activate apply PKG` (refused if the file changed since).
    """
    from kurahi.errors import LossNotFoundError
    from kurahi.lifecycle.rescue.apply import plan_rescue

    croot = _claude_root(claude, openclaw, home, loss_id)
    if croot is not None:
        _claude_plan(croot, loss_id, out, marker or [], accept_guess or [], as_json)
        return
    root = _one(openclaw, home, loss_id)
    with activation_errors():
        try:
            plan = plan_rescue(root, loss_id, out, markers=marker or [], accept_guess=accept_guess or [], agent=agent)
        except LossNotFoundError:
            _not_brought_back_here(loss_id)
            raise
    if as_json:
        print_json(plan.to_dict())
        return
    _say_plan(plan, applied=False)
    say(
        "wrote ",
        (plan.package, "bold"),
        f"; apply it with `kurahi activate apply {plan.package} --home {root} --offline`",
    )


@app.command("apply")
def apply_cmd(
    loss_id: LossArg,
    openclaw: OpenClawOpt = None,
    home: HomeOpt = None,
    agent: AgentOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Where to keep the package (default: $XDG_STATE_HOME/kurahi/rescue/<id>-<time>-<random>, outside).",
        ),
    ] = None,
    marker: MarkerOpt = None,
    accept_guess: GuessOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before applying.")] = False,
    as_json: JsonOpt = False,
    claude: ClaudeOpt = None,
) -> None:
    """Bring one loss back: stitch, check, plan, apply, verify; then say what came back and how to undo it.

    OpenClaw must be stopped (the refusal says how). A loss linked by clocks alone is brought
    back only with --accept-guess ID.

    A Claude Code loss (--claude DIR, or found in CLAUDE_CONFIG_DIR / ~/.claude): the broken
    row is appended again, re-linked as Claude Code would have written it (a later row with
    the same uuid wins), in one fsynced write; refused (exit 5) while a claude has the session
    open, checked by the loader's model after ("verified: yes"). A guess (what a rewind could
    have written) only with --accept-guess ID.
    """
    from kurahi.gateway.activation_host import OfflineHost
    from kurahi.lifecycle.rescue.apply import apply_rescue, refuse_if_running
    from kurahi.lifecycle.rescue.losses import find_losses

    croot = _claude_root(claude, openclaw, home, loss_id)
    if croot is not None:
        _claude_apply(croot, loss_id, out, marker or [], accept_guess or [], yes, as_json)
        return
    root = _one(openclaw, home, loss_id)
    with activation_errors():
        refuse_if_running(root)
        report = find_losses(root, agent=agent)
        loss = _pick_or_say_applied(root, report, loss_id)
        _confirm(
            f"{loss.id}: {loss.kind} of {loss.key} at {_short(loss.at)}, {loss.lost_messages} message(s) lost",
            yes,
            as_json,
        )
        res = apply_rescue(
            root,
            loss.id,
            OfflineHost(root),
            out,
            markers=marker or [],
            accept_guess=accept_guess or [],
            agent=agent,
            report=report,
        )
    if as_json:
        print_json(res.to_dict())
    else:
        _say_plan(res.plan, applied=True)
        say(f"{res.outcome}; verified: {'yes' if res.verified else 'NO'}")
        say("undo with: ", (res.rollback, "bold"))
    if not res.verified:
        raise typer.Exit(EXIT.FAILED)


def _claude_root(claude: Path | None, openclaw: Path | None, home: Path | None, loss_id: str) -> Path | None:
    """The Claude Code dir a loss id is brought back in: ``--claude``, else the default one when it lists the id."""
    from kurahi.errors import KurahiError
    from kurahi.runtimes.registry import named

    if claude is not None:
        if openclaw is not None or home is not None:
            fail("give at most one of --openclaw, --home and --claude", EXIT.USAGE)
        if not claude.is_dir():
            fail(f"{claude}: no such directory (--claude)", EXIT.NOT_FOUND)
        return claude
    if openclaw is not None or home is not None or not loss_id:
        return None
    runtime = named("claude")
    where = runtime.locate().path
    if not where.is_dir():
        return None
    try:
        report = runtime.losses(where)
    except KurahiError:
        return None
    if report is not None and any(loss.id.startswith(loss_id) for loss in report.losses):
        return where
    return None


def _claude_plan(
    root: Path, loss_id: str, out: Path, markers: list[str], accept_guess: list[str], as_json: bool
) -> None:
    from kurahi.lifecycle.rescue.appending import plan_append
    from kurahi.runtimes.registry import named

    with activation_errors():
        plan = plan_append(named("claude"), root, loss_id, out, markers=markers, accept_guess=accept_guess)
    if as_json:
        print_json(plan.to_dict())
        return
    loss = plan.loss
    say((loss.id, "bold"), f" ({loss.kind}, session {loss.session_id}): will append {len(plan.rows)} row(s)")
    say(f"  {plan.lost_rows} row(s) back on the path; the loader's model then sends {plan.view_messages} message(s)")
    say("wrote ", (plan.package, "bold"), f"; apply it with `kurahi activate apply {plan.package}`")


def _confirm(what: str, yes: bool, as_json: bool) -> None:
    """Ask before applying (``what``: the loss in a line), unless ``--yes``; refuse to ask off a terminal."""
    if yes:
        return
    if as_json or not sys.stdin.isatty():
        fail("not a terminal to ask on: pass --yes to apply without asking; nothing was changed", EXIT.USAGE)
    say(what)
    if not typer.confirm("Bring it back now?", default=False):
        fail("nothing was changed", EXIT.FAILED)


def _claude_apply(
    root: Path, loss_id: str, out: Path | None, markers: list[str], accept_guess: list[str], yes: bool, as_json: bool
) -> None:
    from kurahi.lifecycle.rescue.appending import apply_append, find_loss
    from kurahi.runtimes.registry import named

    runtime = named("claude")
    rules = runtime.session_append
    assert rules is not None  # Claude Code's losses are mended by appending
    with activation_errors():
        report = runtime.losses(root)  # read once: apply finds the loss in it again, not in the dir
        assert report is not None  # Claude Code lists its own losses
        loss = find_loss(report, loss_id, runtime)
        rules.refuse_open(root, loss.session_id)
        _confirm(
            f"{loss.id}: {loss.kind} in session {loss.session_id}, {loss.lost_messages} message(s) lost", yes, as_json
        )
        res = apply_append(runtime, root, loss.id, out, markers=markers, accept_guess=accept_guess, report=report)
    if as_json:
        print_json(res.to_dict())
    else:
        say((loss.id, "bold"), f" ({loss.kind}, session {loss.session_id}): {res.outcome}")
        if res.plan is not None:
            say(f"  {res.plan.lost_rows} row(s) back on the path `claude --resume {loss.session_id}` walks")
        why = "" if res.verified else f" ({'; '.join(res.problems)})"
        say(f"verified: {'yes' if res.verified else 'NO'}{why}")
        say("undo with: ", (res.rollback, "bold"))
    if not res.verified:
        raise typer.Exit(EXIT.FAILED)


def _pick_or_say_applied(root: Path, report: RescueReport, loss_id: str) -> Loss:
    """The loss ``loss_id`` names; when there is none, what an earlier ``rescue apply`` of it left."""
    from kurahi.errors import LossNotFoundError
    from kurahi.lifecycle.rescue.applied import applied_before
    from kurahi.lifecycle.rescue.apply import pick

    try:
        return pick(report, loss_id)
    except LossNotFoundError as exc:
        found = applied_before(root, loss_id)
        if not found:
            _not_brought_back_here(loss_id)
            raise
        lines = [f"no loss {loss_id!r} is left to bring back: an earlier `rescue apply` took it"]
        for a in found:
            finish = f"kurahi activate apply {a.package} --home {root} --offline"
            undo = f"kurahi activate rollback {a.package} --home {root} --offline"
            if a.phase == "applying":
                state = "the live state is its new one" if a.is_new else "the live state is not yet its new one"
                lines.append(
                    f"{a.loss_id} ({a.key}): {a.package} was interrupted while applying ({state}); "
                    f"finish it with `{finish}`, or undo it with `{undo}`"
                )
            elif a.phase == "applied":
                lines.append(f"{a.loss_id} ({a.key}): {a.package} applied it; undo it with `{undo}`")
            else:
                lines.append(f"{a.loss_id} ({a.key}): {a.package} (journal: {a.phase}); undo with `{undo}`")
            if a.locks:
                lines.append(
                    f"  lock files the interrupted Kurahi process left (harmless; finishing or undoing removes "
                    f"them): {', '.join(a.locks)}"
                )
        fail("\n".join(lines), exc.exit_code)


def _prepare(root: Path, loss: Loss, report: RescueReport, folder: Path) -> Path:
    """Build ``--prepare``'s folder: the loss's candidate and checked markers in ``folder/<id>/``.

    A package too when OpenClaw is stopped and the loss is not a guess; the state is only read.
    """
    import msgspec

    from kurahi.errors import OpenClawRunningError
    from kurahi.lifecycle.rescue.apply import plan_rescue, prepare_candidate, refuse_if_running

    where = folder / loss.id
    where.mkdir(parents=True, exist_ok=False)
    prepared = prepare_candidate(root, loss, report, where)
    (where / "rescue.json").write_bytes(msgspec.json.encode(prepared) + b"\n")
    try:
        refuse_if_running(root)
    except OpenClawRunningError:
        return where  # a package is planned against a stopped OpenClaw: `rescue apply` makes it then
    if loss.confidence != "guess":
        plan_rescue(root, loss.id, where / "package", report=report)
    return where


@app.command("watch")
def watch_cmd(
    openclaw: OpenClawOpt = None,
    home: HomeOpt = None,
    agent: AgentOpt = None,
    key: KeyOpt = None,
    interval: Annotated[float, typer.Option("--interval", min=0.2, help="Seconds between polls.")] = 30.0,
    on_loss: Annotated[
        str | None,
        typer.Option("--on-loss", help="A shell command run for each new loss, the loss as JSON on its stdin."),
    ] = None,
    prepare: Annotated[
        Path | None,
        typer.Option("--prepare", help="For each new loss, build and check its candidate in DIR/<id>/ (read-only)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per new loss, one per line.")] = False,
) -> None:
    """Poll the state read-only and print one line per new loss, until stopped (Ctrl-C or SIGTERM: exit 0).

    Losses already there when it starts are counted on stderr, not printed. An idle resident
    costs a few stat calls a poll: the state is read again only when a file of it changed.
    """
    import json
    import signal
    import subprocess
    import threading

    from kurahi.lifecycle.rescue.apply import refuse_outside
    from kurahi.lifecycle.rescue.watch import Watcher

    root = _one(openclaw, home)
    if prepare is not None and not prepare.is_dir():
        fail(f"{prepare}: no such directory (--prepare)", EXIT.NOT_FOUND)
    if prepare is not None:
        with translate_errors():
            refuse_outside(root, prepare, "--prepare")
    stop = threading.Event()

    def _stop(*_: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    watcher = Watcher(root, agent=agent, key=key)
    with activation_errors():
        first = watcher.start()
    sys.stderr.write(f"watching {root} every {interval:g} s; {len(first.losses)} loss(es) already there\n")
    sys.stderr.flush()
    while not stop.wait(interval):
        with activation_errors():
            new = watcher.poll()
        for loss in new:
            if as_json:
                print_json(loss.to_dict())
            else:
                say(
                    f"{_short(loss.at)}  {loss.id}  {loss.agent}  {loss.key}  {loss.kind}  "
                    f"{loss.lost_messages} msgs left the view  → kurahi rescue apply {loss.id}"
                )
            sys.stdout.flush()
            if prepare is not None and watcher.report is not None:
                try:
                    with activation_errors():
                        sys.stderr.write(f"prepared {_prepare(root, loss, watcher.report, prepare)}\n")
                except typer.Exit:
                    pass  # the error was said; the watch goes on
            if on_loss is not None:
                data = json.dumps(loss.to_dict(), ensure_ascii=False).encode("utf-8")
                done = subprocess.run(on_loss, shell=True, input=data, check=False)
                if done.returncode != 0:
                    sys.stderr.write(f"warning: --on-loss exited {done.returncode} for {loss.id}\n")
            sys.stderr.flush()
