"""``kurahi activate plan|apply|verify|rollback``: put a reconstructed session live, atomically."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kurahi.cli.common import EXIT, activation_errors, fail, print_json, stdin_files, translate_errors
from kurahi.cli.home import HOME_DEFAULT
from kurahi.cli.output import Part, say, table

if TYPE_CHECKING:
    from kurahi.store.base import Backend

__all__ = ["app"]

app = typer.Typer(
    help="Activate a reconstructed session atomically: plan a package, apply it (validated before any "
    "user turn), verify it, roll it back.",
    no_args_is_help=True,
)

HomeOpt = Annotated[
    Path | None,
    typer.Option(
        "--home",
        show_default=HOME_DEFAULT,
        help="State directory (a Kurahi home, or an OpenClaw state directory: always handled as --offline).",
    ),
]
PlainHomeOpt = Annotated[
    Path | None,
    typer.Option(
        "--home",
        show_default=HOME_DEFAULT,
        help="State directory (a Kurahi home, or an OpenClaw state directory).",
    ),
]
PackageArg = Annotated[
    Path, typer.Argument(help="The package directory written by `activate plan`.", show_default=False)
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
OfflineOpt = Annotated[
    bool,
    typer.Option(
        "--offline",
        help="No gateway: skip stopping, starting and reading through it; validate from the files. "
        "Audit records only go to an existing chain.",
    ),
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        min=0,
        show_default="30",
        help="Seconds the gateway gets to stop. Refused (usage error) for a package into OpenClaw 2026.9's "
        "SQLite store: Kurahi never stops OpenClaw, it refuses while it runs.",
    ),
]


StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar="KOLO_STORE",
        show_envvar=True,
        help="Where the home's sessions live when not in its files: postgres://user@host:port/db, as given to "
        "`gateway run --store` (password from PGPASSWORD, ~/.pgpass or --password-file, never on the command "
        "line). Gateways on that database are not stopped: the activation takes the session's lease, which "
        "fences them off it until the switch is made.",
    ),
]
PasswordFileOpt = Annotated[
    Path | None,
    typer.Option("--password-file", help="With a database --store: a file whose first line is its password."),
]


@contextmanager
def _store(root: Path, store: str | None, password_file: Path | None) -> Iterator[Backend | None]:
    """The database ``--store`` names, open for the command (``None``: the home's files)."""
    from kurahi.store.open import open_backend, postgres_backend, url_has_password

    if store is None or store == "file" or store.startswith("file:"):
        with translate_errors():
            open_backend(root, store)  # refuses a file: store naming another home
        yield None
        return
    if store in ("memory", "memory:"):
        fail("--store memory: holds nothing once this command ends; name postgres://user@host:port/db", EXIT.USAGE)
    if url_has_password(store) and store != os.environ.get("KOLO_STORE"):
        fail(
            "--store holds a password, which every user of this machine can read in the process list: "
            "put it in PGPASSWORD or ~/.pgpass, in a file named by --password-file, "
            "or pass the whole URL in KOLO_STORE",
            EXIT.USAGE,
        )
    with translate_errors():
        if not store.startswith(("postgres://", "postgresql://")):
            open_backend(root, store)  # says which stores there are
        from kurahi.cli.store import _password

        backend = postgres_backend()(
            store,
            home=root,
            owner_id=f"kurahi-activate-{os.getpid()}-{os.urandom(3).hex()}",
            password=_password(password_file),
        )
    try:
        yield backend
    finally:
        backend.close()


def _refuse_timeout(package: Path, timeout: float | None) -> float:
    """``--timeout`` for a file activation; a usage error for a SQLite-store package (nothing to stop)."""
    from kurahi.lifecycle.activation.targets import stops_gateway

    if timeout is not None and not stops_gateway(package):
        fail(
            "--timeout does not apply to an activation into OpenClaw 2026.9's SQLite store: Kurahi never stops "
            "OpenClaw there (stop it with `openclaw gateway stop`, then run this again without --timeout); "
            "nothing was changed",
            EXIT.USAGE,
        )
    return 30.0 if timeout is None else timeout


def _own(report: dict[str, Any], as_json: bool, *, exit_unverified: bool = True) -> None:
    """Print a target's own account of a run (one session file's: no home, gateway or store is involved)."""
    if as_json:
        print_json(report)
    else:
        say(report["outcome"])
        if report["action"] != "rollback":
            why = "" if report["verified"] else f" ({'; '.join(report['problems'])})"
            say(f"verified: {'yes' if report['verified'] else 'NO'}{why}")
        if report["action"] == "apply":
            say("undo with: ", (report["rollback"], "bold"))
    if exit_unverified and not report["verified"]:
        raise typer.Exit(EXIT.FAILED)


@contextmanager
def _state(
    package: Path, home: Path | None, offline: bool | None, store: str | None, password_file: Path | None
) -> Iterator[tuple[Path | None, Backend | None, Any]]:
    """The state dir, database and host (``offline`` ``None``: none) ``package`` is applied to.

    None of them for a package into one session file: it has no home, gateway or store.
    """
    from kurahi.lifecycle.activation.targets import homed

    if not homed(package):
        yield None, None, None
        return
    root = _root(home)
    with _store(root, store, password_file) as backend:
        yield root, backend, None if offline is None else _host_for(root, offline, backend)


def _root(home: Path | None) -> Path:
    from kurahi.cli.home import home_root

    return home_root(home)


def _host(root: Path, offline: bool) -> Any:
    """The gateway host for a Kurahi home; files only with --offline or for an OpenClaw state directory.

    A directory without Kurahi's ``config.json`` is not a Kurahi home: it has no Kurahi gateway to
    stop or read through, and Kurahi must not add its own ``audit/`` folder to it.
    """
    from kurahi.gateway.activation_host import GatewayHost, OfflineHost
    from kurahi.resident.home import Home

    return OfflineHost(root) if offline or not Home(root).config.is_file() else GatewayHost(root)


def _host_for(root: Path, offline: bool, backend: Backend | None) -> Any:
    """:func:`_host`, or for sessions in a database the store host: no gateway is stopped (leases fence them off)."""
    from kurahi.gateway.activation_host import StoreHost

    return _host(root, offline) if backend is None else StoreHost(root, backend)


@app.command("plan")
@stdin_files("candidate")
def plan_cmd(
    agent: Annotated[str, typer.Option("--agent", help="The agent id.", show_default=False)],
    candidate: Annotated[
        Path,
        typer.Option(
            "--candidate", help="The candidate transcript (e.g. from `kurahi lineage stitch`); - reads it from stdin."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="The package directory to write (new or empty).")],
    key: Annotated[
        str | None, typer.Option("--key", help="The session key.", show_default="agent:<agent>:main")
    ] = None,
    marker: Annotated[
        list[str] | None,
        typer.Option("--marker", help="Text that must be in the effective context (repeatable); checked again live."),
    ] = None,
    home: PlainHomeOpt = None,
    store: StoreOpt = None,
    password_file: PasswordFileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check a candidate and write an activation package; nothing live is changed.

    The package holds the preconditions (live transcript, catalog entry and candidate
    hashes), the new catalog entry, the planned projection, a copy of the candidate and
    what a rollback needs, with SHA256SUMS over every file.
    """
    from kurahi.lifecycle.activation import plan_activation

    root = _root(home)
    with _store(root, store, password_file) as backend:
        if not candidate.is_file():
            fail(f"{candidate}: no such file", EXIT.NOT_FOUND)
        with activation_errors():
            pkg = plan_activation(
                root, agent, key or f"agent:{agent}:main", candidate, out, markers=marker or [], backend=backend
            )
    plan = pkg.plan
    if as_json:
        print_json({"package": str(pkg.root), "plan": _plan_dict(pkg)})
        return
    if getattr(plan, "store", None) == "openclaw-sqlite":
        _sqlite_plan(pkg.root, plan)
        return
    say("wrote ", (str(pkg.root), "bold"), " for ", (plan.agent, "bold"), " key ", (plan.key, "bold"))
    pre = plan.preconditions
    rows = [
        ["live transcript", pre.live_transcript.name or "-", pre.live_transcript.sha256],
        ["catalog entry", plan.key, pre.catalog_entry],
        ["candidate", "candidate.jsonl", pre.candidate],
        ["target", plan.target_file, pre.target.sha256],
    ]
    table(["part", "file", "sha256"], rows, keys=(0, 2), title="preconditions")
    p = plan.projection
    old_sid = (plan.old_entry or {}).get("sessionId", "-")
    say(
        f"session {old_sid} → ",
        (plan.candidate_session_id, "cyan"),
        f", {plan.compaction_count} compactions; projects {p.messages} messages (sha256 {p.sha256[:16]}…)"
        + (", replaces the live transcript (old bytes kept in the package)" if plan.replaces_live else ""),
    )
    _markers(p.markers_found, p.markers_missing)


def _sqlite_plan(root: Path, plan: Any) -> None:
    pre = plan.preconditions
    say(
        "wrote ",
        (str(root), "bold"),
        " for ",
        (plan.agent, "bold"),
        " key ",
        (plan.key, "bold"),
        f" in {plan.db} (schema version {pre.schema_version})",
    )
    rows = [
        ["current session", pre.current_session_id],
        ["events", f"{pre.event_count} (last seq {pre.last_seq}), sha256 {pre.events_sha256}"],
        ["session node", pre.node_sha256],
        ["store content", pre.content_sha256],
        ["candidate", f"{plan.candidate_events} events, sha256 {plan.candidate_sha256}"],
    ]
    table(["part", "value"], rows, keys=(0,), title="preconditions")
    p = plan.projection
    say(
        f"session {plan.old_session_id} → ",
        (plan.new_session_id, "cyan"),
        f" (new rows; the old session is kept and linked); projects {p.messages} messages (sha256 {p.sha256[:16]}…)",
    )
    _markers(p.markers_found, p.markers_missing)


def _plan_dict(pkg: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(pkg.plan)


def _markers(found: list[str], missing: list[str]) -> None:
    if not found and not missing:
        return
    rows: list[list[Part]] = [[m, ("yes", "green")] for m in found]
    rows += [[m, ("missing", "bold red")] for m in missing]
    table(["marker", "in context"], rows, keys=(1,))


@app.command("apply")
def apply_cmd(
    package: PackageArg,
    home: HomeOpt = None,
    offline: OfflineOpt = False,
    no_stop: Annotated[
        bool,
        typer.Option(
            "--no-stop",
            help="Refuse if a gateway runs instead of stopping it. Into OpenClaw 2026.9's SQLite store this is "
            "always so (with or without the flag): a running OpenClaw is refused, exit 5.",
        ),
    ] = False,
    timeout: TimeoutOpt = None,
    store: StoreOpt = None,
    password_file: PasswordFileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Stop the gateway, install the candidate, rewrite the catalog entry, restart, validate.

    Before any user turn, the live session is re-read through the restarted gateway and its
    projection compared with the plan; on a mismatch the old state is put back (exit 1).
    Rerunning apply after a crash finishes the activation. With a database --store no gateway is
    stopped: the session's lease is taken (gateways on that database are fenced off it) and the
    live session is validated as the store holds it.
    """
    from kurahi.errors import PreTurnValidationError
    from kurahi.lifecycle.activation import apply_package

    with _state(package, home, offline, store, password_file) as (root, backend, host):
        stop_timeout = _refuse_timeout(package, timeout)
        with activation_errors():
            try:
                res = apply_package(
                    package, root, host, stop_timeout=stop_timeout, require_stopped=no_stop, backend=backend
                )
            except PreTurnValidationError as exc:
                if as_json and exc.result is not None:
                    print_json(exc.result)
                elif exc.result is not None and "verified" in exc.result:
                    _own(exc.result, False, exit_unverified=False)
                else:
                    _validation(exc.result.get("validation") if exc.result else None)
                raise
    if res.report is not None:
        _own(res.report, as_json)
        return
    if as_json:
        print_json(res.to_dict())
        return
    _result(res.to_dict())
    _validation(res.validation)


def _result(data: dict[str, Any]) -> None:
    steps = ", ".join(data["steps"]) or "nothing to do"
    gw = f"gateway on port {data['gatewayPort']}" if data["gatewayPort"] is not None else "no gateway"
    say(
        (str(data["outcome"]), "bold"),
        f": {data['key']} → {data['sessionId']} ({steps}; {gw}; "
        f"audit {'recorded' if data['audited'] else 'not recorded'})",
    )


def _validation(v: dict[str, Any] | None) -> None:
    if not v:
        return
    live = v["live"] or {}
    planned = v["planned"]
    rows = [
        ["messages", str(planned["messages"]), str(live.get("messages", "-"))],
        ["sha256", planned["sha256"][:16] + "…", (live.get("sha256") or "-")[:16] + "…"],
        ["markers", ", ".join(planned["markersFound"]) or "-", ", ".join(live.get("markersFound", [])) or "-"],
    ]
    table(["", "planned", "live"], rows, keys=(0,), title=f"pre-turn validation (read through the {v['source']})")
    say(("matches the plan", "green") if v["ok"] else ("differs: " + "; ".join(v["differences"]), "bold red"))


@app.command("verify")
def verify_cmd(
    package: PackageArg,
    home: PlainHomeOpt = None,
    store: StoreOpt = None,
    password_file: PasswordFileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check that the live state is the package's new state (exit 0), or say which part differs (exit 1)."""
    from kurahi.lifecycle.activation import verify_package

    with _state(package, home, None, store, password_file) as (root, backend, _), activation_errors():
        rep = verify_package(package, root, backend=backend)
    if rep.report is not None:
        _own(rep.report, as_json)
        return
    if as_json:
        print_json(rep.to_dict())
    else:
        rows: list[list[Part]] = []
        for p in rep.parts:
            exp, act = p["expected"], p["actual"]
            if p["part"] == "projection":
                exp = f"{exp['messages']} messages"
                act = "; ".join(p["differences"]) if p["differences"] else f"{act['messages']} messages"
            rows.append([p["part"], ("yes", "green") if p["ok"] else ("no", "bold red"), str(exp), str(act)])
        table(
            ["part", "matches", "expected", "actual"], rows, keys=(0, 1), title=f"{rep.package} (journal: {rep.phase})"
        )
    if not rep.ok:
        raise typer.Exit(EXIT.FAILED)


@app.command("rollback")
def rollback_cmd(
    package: PackageArg,
    home: HomeOpt = None,
    offline: OfflineOpt = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Roll back even if the activated session was used since; its transcript is kept in the "
            "package's evidence/.",
        ),
    ] = False,
    timeout: TimeoutOpt = None,
    store: StoreOpt = None,
    password_file: PasswordFileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Put the state before `apply` back, byte for byte (or finish an interrupted rollback).

    The catalog entry and the transcript files are restored, the installed candidate is
    removed, and the rollback is recorded in the audit chain.
    """
    from kurahi.lifecycle.activation import rollback_package

    with _state(package, home, offline, store, password_file) as (root, backend, host):
        stop_timeout = _refuse_timeout(package, timeout)
        with activation_errors():
            res = rollback_package(package, root, host, stop_timeout=stop_timeout, force=force, backend=backend)
    if res.report is not None:
        _own(res.report, as_json)
        return
    if as_json:
        print_json(res.to_dict())
    else:
        _result(res.to_dict())
