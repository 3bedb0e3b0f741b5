"""``kurahi agent`` and ``kurahi actions``: run a turn locally, list jobs, read the ledger."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kurahi.cli.common import EXIT, console, fail, print_json, translate_errors
from kurahi.cli.home import HomeOpt, home_root
from kurahi.cli.output import Part, table
from kurahi.cli.sessions import open_store

if TYPE_CHECKING:
    from kurahi.agent.ledger import Action

__all__ = ["actions_app", "agent_app"]

agent_app = typer.Typer(
    help="Run a resident's turns locally (without a gateway) and list its jobs.", no_args_is_help=True
)
actions_app = typer.Typer(
    help="The action-outcome ledger: every side-effecting tool call, its intent and its outcome.",
    no_args_is_help=True,
)

AgentOpt = Annotated[str, typer.Option("--agent", help="Agent id.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _when(ms: int | None) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


@agent_app.command("send")
def send_command(
    text: Annotated[str, typer.Argument(help="The message.")],
    home: HomeOpt = None,
    agent: AgentOpt = "main",
    key: Annotated[str | None, typer.Option("--key", help="Session key (default agent:<id>:main).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run one turn in this process and print the reply (exit 0 once it is durable, 1 if the turn failed).

    The session's transcript is locked while the turn runs: with a gateway running on the
    same home this exits 5 (busy); send through the gateway instead.
    """
    from kurahi.agent.layout import AgentPaths
    from kurahi.agent.runtime import Runtime

    root = home_root(home)

    async def go() -> tuple[Any, str | None]:
        with translate_errors():  # start-up too: a corrupt catalog is a message and exit 4, not a traceback
            AgentPaths.of(root, agent, must_exist=True)
            rt = Runtime(root, agent)
            try:
                await rt.start()
                result = await rt.send(key or f"agent:{agent}:main", text)
            finally:
                await rt.close()
            return result, rt.close_problem

    result, problem = asyncio.run(go())
    if as_json:
        print_json(result.to_dict())
    elif result.status == "ok":
        console.print(result.reply, markup=False, highlight=False)  # the model's words, never markup
    if result.status != "ok":
        fail(f"turn {result.status}: {result.error}", EXIT.FAILED)
    if problem is not None:
        # The turn is stored, but not all of it is durable (its clock): not exit 0.
        fail(problem, EXIT.FAILED)


@agent_app.command("jobs")
def jobs_command(home: HomeOpt = None, agent: AgentOpt = "main", as_json: JsonOpt = False) -> None:
    """List the agent's jobs and their status."""
    from kurahi.agent.jobs import JobStore
    from kurahi.agent.layout import AgentPaths

    root = home_root(home)
    with translate_errors():
        AgentPaths.of(root, agent, must_exist=True)
        jobs = list(JobStore(open_store(root).agent(agent).log("jobs")).jobs().values())
    if as_json:
        print_json([j.to_dict() for j in jobs])
        return
    rows = [[j.id, j.status, j.session_key, _when(j.created_at), _when(j.ended_at), j.error or ""] for j in jobs]
    table(["id", "status", "session", "created", "ended", "error"], rows, title=f"jobs of {agent}")


def _ledger(home: Path | None, agent: str) -> dict[str, Action]:
    from kurahi.agent.layout import AgentPaths
    from kurahi.agent.ledger import Ledger

    root = home_root(home)
    with translate_errors():
        AgentPaths.of(root, agent, must_exist=True)
        return Ledger(open_store(root).agent(agent).log("ledger")).actions()


_STYLE = {"ok": "green", "error": "red", "unknown": "bold yellow", "pending": "yellow"}


@actions_app.command("ls")
def actions_ls(
    home: HomeOpt = None,
    agent: AgentOpt = "main",
    status: Annotated[
        str | None, typer.Option("--status", help="Only this status: pending, ok, error, unknown.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List side-effecting tool calls, oldest first. ``pending`` means no outcome is recorded yet."""
    actions = [a for a in _ledger(home, agent).values() if status is None or a.status == status]
    if as_json:
        print_json([a.to_dict() for a in actions])
        return
    rows: list[list[Part]] = [
        [
            a.action_id,
            a.tool,
            (a.status, _STYLE.get(a.status, "")),
            a.settled_by or "-",
            _when(a.intent_at),
            (a.result or "").splitlines()[0][:80] if a.result else "",
        ]
        for a in actions
    ]
    table(["action id", "tool", "status", "settled by", "intent", "result"], rows, title=f"actions of {agent}")


@actions_app.command("show")
def actions_show(
    action_id: Annotated[str, typer.Argument(help="The action id (<sessionId>:<toolCallId>).")],
    home: HomeOpt = None,
    agent: AgentOpt = "main",
    as_json: JsonOpt = False,
) -> None:
    """Show one action: its arguments, status, result and every ledger record about it."""
    action = _ledger(home, agent).get(action_id)
    if action is None:
        fail(f"no action {action_id!r} in the ledger of {agent!r}", EXIT.NOT_FOUND)
    if as_json:
        print_json({**action.to_dict(), "records": action.history})
        return
    from rich.markup import escape

    d = action.to_dict()
    for k in ("actionId", "tool", "status", "settledBy", "sessionId", "toolCallId", "argsSha256"):
        console.print(f"[bold]{k}[/]: {escape(str(d[k]))}")
    console.print(f"[bold]intentAt[/]: {_when(action.intent_at)}  [bold]outcomeAt[/]: {_when(action.outcome_at)}")
    console.print("[bold]args[/]:", d["args"])
    console.print("[bold]result[/]:", escape(str(d["result"] or "-")))
