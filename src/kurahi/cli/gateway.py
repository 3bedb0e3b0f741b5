"""``kurahi init``, ``kurahi gateway run|status|stop``, ``kurahi devices`` and ``kurahi chat``."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from kurahi.cli.common import EXIT, console, err_console, fail, print_json, translate_errors
from kurahi.cli.home import HomeOpt, home_root

__all__ = ["chat_command", "devices_app", "gateway_app", "init_command"]

gateway_app = typer.Typer(help="Run the resident gateway, see whether it runs, stop it.", no_args_is_help=True)
devices_app = typer.Typer(
    help="Pair devices (a token with scopes read, chat, admin, metrics), list and revoke them.", no_args_is_help=True
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _home(home: Path | None, *, must_exist: bool = True) -> Any:
    from kurahi.resident.home import Home

    return Home(home_root(home, must_exist=must_exist))


def init_command(
    home: HomeOpt = None,
    agent: Annotated[str, typer.Option("--agent", help="Id of the resident to seed.")] = "main",
    as_json: JsonOpt = False,
) -> None:
    """Create a state directory with a seeded resident, a config and an owner token.

    Existing files are never overwritten; running it again only adds what is missing. The
    owner token is written to secrets/gateway.token (0600) and is not printed.
    """
    from kurahi.resident.init import init_home

    with translate_errors():
        report = init_home(_home(home, must_exist=False).root, agent)
    if as_json:
        print_json(report.to_dict())
        return
    from kurahi.cli.output import say

    say(
        "home ", (str(report.home), "bold"), ", resident ", (report.agent, "bold"), f", identity marker {report.marker}"
    )
    for p in report.created:
        say("  ", ("created", "green"), f" {p}")
    for p in report.kept:
        say("  ", ("kept", "dim"), f"    {p}")


@gateway_app.command("run")
def run_command(
    home: HomeOpt = None,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0 picks a free one).")] = 0,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (loopback unless --allow-remote).")
    ] = "127.0.0.1",
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            help="Allow an address beyond loopback. Bearer tokens then cross the network: put TLS in front.",
        ),
    ] = False,
    access_log: Annotated[
        bool,
        typer.Option(
            "--access-log/--no-access-log",
            help="A line per request on stderr: method, path (no query), status, duration, who.",
        ),
    ] = True,
    trust_proxy: Annotated[
        list[str] | None,
        typer.Option(
            "--trust-proxy",
            metavar="ADDR",
            help="The address of a reverse proxy in front (repeatable): its X-Forwarded-Proto and "
            "X-Forwarded-For are believed (the viewer's cookie is Secure behind HTTPS); ignored from others.",
        ),
    ] = None,
    grace: Annotated[float, typer.Option("--grace", min=0, help="Seconds running turns get at shutdown.")] = 5.0,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            envvar="KOLO_STORE",
            show_envvar=True,
            help="Where sessions, logs and the audit chain live: files in the home (default), or "
            "postgres://user@host/db (password from PGPASSWORD or ~/.pgpass, never on the command line).",
        ),
    ] = None,
    gateway_id: Annotated[
        str | None,
        typer.Option(
            "--gateway-id",
            envvar="KOLO_GATEWAY_ID",
            show_envvar=True,
            help="With a database store: this gateway's lease owner id, unique among the gateways on it "
            "(default: host, pid and a random part). A second live gateway with the same id is refused.",
        ),
    ] = None,
    lease_seconds: Annotated[
        float | None,
        typer.Option(
            "--lease-seconds",
            envvar="KOLO_LEASE_SECONDS",
            show_envvar=True,
            min=0.5,
            max=3600,
            help="With a database store: how long a session's lease outlives this gateway's last renewal "
            "(default 4). A gateway that is killed is known dead at once; one whose host vanished, "
            "or that stalls, keeps its sessions this long.",
        ),
    ] = None,
) -> None:
    """Serve the home's residents over HTTP until SIGTERM or SIGINT.

    The port goes into run/gateway.lock ({"pid", "port", "startedAt"}), where clients find
    it. A second gateway on the same home refuses (exit 5).
    """
    from kurahi.extras import require

    with translate_errors():
        require("gateway", "kurahi gateway run")
    from kurahi.continuity.api import install as continuity_api
    from kurahi.gateway.bind import check_bind
    from kurahi.gateway.server import serve
    from kurahi.store.open import open_backend, url_has_password
    from kurahi.ui.routes import install as ui_install

    h = _home(home)
    if store is not None and url_has_password(store) and store != os.environ.get("KOLO_STORE"):
        fail(
            "--store holds a password, which every user of this machine can read in the process list: "
            "put it in PGPASSWORD or ~/.pgpass, or pass the whole URL in KOLO_STORE",
            EXIT.USAGE,
        )
    with translate_errors():
        check_bind(host, allow_remote=allow_remote)  # before the store is opened: a refusal changes nothing
        backend = open_backend(h.root, store, owner_id=gateway_id, lease_seconds=lease_seconds)
        serve(
            h,
            host=host,
            port=port,
            grace=grace,
            plugins=[continuity_api, ui_install],
            backend=backend,
            allow_remote=allow_remote,
            access_log=access_log,
            trust_proxy=trust_proxy or (),
        )


@gateway_app.command("status")
def status_command(home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Whether a gateway runs for this home: pid, port, start time, health (exit 1 if none)."""
    from kurahi.gateway.lock import gateway_info

    h = _home(home)
    info = gateway_info(h.lock)
    if info is None:
        if as_json:
            print_json({"running": False})
        else:
            from kurahi.cli.output import say

            say(f"no gateway is running for {h.root}")
        raise typer.Exit(EXIT.FAILED)
    from kurahi.doctor.gateway import probe_health

    health, _ = probe_health(info.port, timeout=5)
    out = {"running": True, **info.to_dict(), "healthy": health}
    if as_json:
        print_json(out)
    else:
        from kurahi.cli.output import say

        state = ("healthy", "green") if health else ("not answering", "red")
        say(f"gateway pid {info.pid} on port {info.port}, started {info.started_at}: ", state)


@gateway_app.command("stop")
def stop_command(
    home: HomeOpt = None,
    timeout: Annotated[float, typer.Option("--timeout", min=0, help="Seconds to wait for it to exit.")] = 20.0,
) -> None:
    """Ask the running gateway to shut down gracefully (SIGTERM) and wait until it has."""
    from kurahi.gateway.lock import gateway_info

    h = _home(home)
    info = gateway_info(h.lock)
    if info is None:
        console.print(f"no gateway is running for {h.root}")
        return
    try:
        os.kill(info.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    except PermissionError:
        fail(f"not allowed to signal the gateway (pid {info.pid})", EXIT.FAILED)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gateway_info(h.lock) is None:
            console.print(f"gateway pid {info.pid} stopped")
            return
        time.sleep(0.05)
    fail(f"gateway pid {info.pid} did not stop within {timeout:g} s", EXIT.FAILED)


@devices_app.command("pair")
def pair_command(
    name: Annotated[str, typer.Option("--name", help="A name for the device.")],
    scopes: Annotated[str, typer.Option("--scopes", help="Comma-separated: read, chat, admin, metrics.")] = "read,chat",
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Pair a device and print its token once (only its hash is stored)."""
    from kurahi.cli.sessions import open_store
    from kurahi.resident.devices import DeviceRegistry

    h = _home(home)
    with translate_errors():
        device, token = DeviceRegistry(h.devices).pair(name, scopes)
        open_store(h.root).audit().append(
            "cli", "device.pair", {"device": device.id, "name": name, "scopes": device.scopes}
        )
    if as_json:
        print_json({"device": device.to_dict(), "token": token})
        return
    console.print(f"paired [bold]{device.name}[/] as {device.id} with scopes {', '.join(device.scopes)}")
    err_console.print("token (shown once, store it now):")
    sys.stdout.write(token + "\n")


@devices_app.command("ls")
def devices_ls(home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """List paired devices (never their tokens)."""
    from kurahi.resident.devices import DeviceRegistry

    with translate_errors():
        devices = DeviceRegistry(_home(home).devices).devices()
    if as_json:
        print_json([d.to_dict() for d in devices])
        return
    from kurahi.cli.output import table

    rows = [[d.id, d.name, ",".join(d.scopes), "active" if d.active else ("revoked", "red")] for d in devices]
    table(["id", "name", "scopes", "state"], rows, keys=(0, 2, 3))


@devices_app.command("revoke")
def devices_revoke(
    device_id: Annotated[str, typer.Argument(help="The device id (dev_...).")], home: HomeOpt = None
) -> None:
    """Revoke a device: its token stops working at once."""
    from kurahi.cli.sessions import open_store
    from kurahi.resident.devices import DeviceRegistry

    h = _home(home)
    with translate_errors():
        device = DeviceRegistry(h.devices).revoke(device_id)
        if device is None:
            fail(f"no device {device_id!r}", EXIT.NOT_FOUND)
        open_store(h.root).audit().append("cli", "device.revoke", {"device": device.id})
    console.print(f"revoked {device.id} ({device.name})")


def chat_command(
    message: Annotated[str | None, typer.Argument(help="The message (none: an interactive session).")] = None,
    agent: Annotated[str, typer.Option("--agent", help="Agent id.")] = "main",
    key: Annotated[str | None, typer.Option("--key", help="Session key (default agent:<id>:main).")] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Talk to a resident through the running gateway, with streaming output.

    The gateway is found through run/gateway.lock and the owner token through
    KOLO_GATEWAY_TOKEN or secrets/gateway.token. Exits 0 only once the reply has been
    received, that is, once the turn is acknowledged and durable.
    """
    from kurahi.extras import require

    with translate_errors():
        require("gateway", "kurahi chat", ("httpx",))
    from kurahi.gateway.client import GatewayClient

    with translate_errors():
        client = GatewayClient.for_home(_home(home))
    with client, translate_errors():
        if message is not None:
            ok = _one_turn(client, agent, message, key, as_json)
            raise typer.Exit(EXIT.OK if ok else EXIT.FAILED)
        err_console.print(f"chatting with {agent} (end with Ctrl-D)")
        while True:
            try:
                line = input("> ")
            except EOFError:
                break
            if line.strip():
                _one_turn(client, agent, line, key, as_json)


def _one_turn(client: Any, agent: str, message: str, key: str | None, as_json: bool) -> bool:
    if as_json:
        result = client.chat(agent, message, key=key)
        print_json(result)
        return bool(result.get("status") == "ok")
    done: Any = None
    for event, data in client.chat_stream(agent, message, key=key):
        if event == "delta":
            sys.stdout.write(data.get("text", ""))
            sys.stdout.flush()
        elif event in ("done", "error"):
            done = (event, data)
    sys.stdout.write("\n")
    if done is None or done[0] == "error" or done[1].get("status") != "ok":
        detail = done[1].get("error") or done[1].get("message") if done else "the stream ended early"
        err_console.print(f"[bold red]error:[/] {detail}")
        return False
    return True
