"""The wider protocols: config apply, device pairing, stitch output, evidence packets, activation
apply and rollback (a Kurahi home and an OpenClaw JSON-era state dir), the manifest hash cache."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

from support.crashstates.protocols import Ctx, Protocol, _guard

# -- config apply and device pairing -------------------------------------------------------------


def _config_setup(ctx: Ctx) -> None:
    from kurahi.resident.init import init_home

    init_home(ctx.root / "kolo", "alice", marker="ALICE-7F3A")


def _config_act(ctx: Ctx) -> None:
    from kurahi.gateway.service import Gateway
    from kurahi.resident.home import Home

    gw = Gateway(Home(ctx.root / "kolo"))
    for k in range(2 * ctx.scale):
        patch = {"models": {f"m{k}": {"provider": "deterministic", "model": f"m{k}"}}}
        asyncio.run(gw.apply_config(patch, "owner"))
        ctx.ack(f"m{k}")


def _config_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    import msgspec

    from kurahi.agent.config import load_config
    from kurahi.resident.home import Home
    from kurahi.store.audit.log_file import AuditChain

    def run() -> list[str]:
        home = Home(d / "kolo")
        out: list[str] = []
        config = load_config(home.root)  # what a gateway start reads first
        models = set(msgspec.json.decode(home.config.read_bytes()).get("models", {}))
        if set(acks) - models:
            out.append(f"config.json: acknowledged applies lost: {sorted(set(acks) - models)}")
        del config
        if home.audit.exists():
            chain = AuditChain(home.audit)
            chain.append("gateway", "gateway.start", {})
            if not chain.verify().ok:
                out.append(f"audit chain does not verify: {chain.verify().reason}")
        return out

    return _guard(run, "config apply")


def _devices_setup(ctx: Ctx) -> None:
    from kurahi.resident.devices import DeviceRegistry

    DeviceRegistry(ctx.root / "devices.json").pair("phone", "read")


def _devices_act(ctx: Ctx) -> None:
    from kurahi.resident.devices import DeviceRegistry

    reg = DeviceRegistry(ctx.root / "devices.json")
    for k in range(3 * ctx.scale):
        ctx.ack(reg.pair(f"tablet {k}", "read,chat")[0].id)


def _devices_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.resident.devices import DeviceRegistry

    def run() -> list[str]:
        devices = {x.id: x for x in DeviceRegistry(d / "devices.json").devices()}
        out = []
        for a in acks:
            if a not in devices:
                out.append(f"devices.json: acknowledged pairing {a} lost")
        DeviceRegistry(d / "devices.json").pair("next", "read")
        return out

    return _guard(run, "devices.json")


# -- stitch output and evidence packets -----------------------------------------------------------


def _stitch_setup(ctx: Ctx) -> None:
    from kurahi.testing import build_session

    build_session(ctx.root / "A.jsonl", entries=30, seed=5, markers=["BEFORE"])
    build_session(ctx.root / "B.jsonl", entries=20, seed=6, markers=["AFTER"])


def _stitch_act(ctx: Ctx) -> None:
    from kurahi.lineage.stitch import stitch

    stitch([ctx.root / "A.jsonl", ctx.root / "B.jsonl"], ctx.root / "C.jsonl", force=True)
    ctx.ack("C.jsonl")
    ctx.info["c_sha256"] = hashlib.sha256((ctx.root / "C.jsonl").read_bytes()).hexdigest()
    ctx.info["sources"] = {n: hashlib.sha256((ctx.root / n).read_bytes()).hexdigest() for n in ("A.jsonl", "B.jsonl")}


def _stitch_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.lineage.stitch import stitch
    from kurahi.pi.transcript import Transcript

    def run() -> list[str]:
        out = []
        for n, digest in info["sources"].items():
            if hashlib.sha256((d / n).read_bytes()).hexdigest() != digest:
                out.append(f"{n}: a source changed")
        c = d / "C.jsonl"
        if c.exists():
            # C appears only whole: stitch writes a temporary file and links it into place.
            if hashlib.sha256(c.read_bytes()).hexdigest() != info["c_sha256"]:
                out.append("C.jsonl: exists but is not the stitched file (a partial C)")
            with Transcript.open(c):
                pass
        elif acks:
            out.append("C.jsonl: acknowledged stitch output lost")
        else:
            stitch([d / "A.jsonl", d / "B.jsonl"], c, force=True)  # the rerun a user makes
        return out

    return _guard(run, "stitch")


def _packet_act(ctx: Ctx) -> None:
    from kurahi.lineage.packet import write_packet

    write_packet(ctx.root / "packet", sources=[ctx.root / "A.jsonl", ctx.root / "B.jsonl"], replies=2)
    ctx.ack("packet")


def _packet_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.lineage.packet import verify_packet, write_packet

    def run() -> list[str]:
        folder = d / "packet"
        if acks:
            check = verify_packet(folder)
            return [] if check.ok else [f"packet: acknowledged but does not verify: {check.to_dict()}"]
        if folder.exists():
            shutil.rmtree(folder)  # an unacknowledged packet is redone from scratch
        write_packet(folder, sources=[d / "A.jsonl", d / "B.jsonl"], replies=2)
        check = verify_packet(folder)
        return [] if check.ok else ["packet: the rerun does not verify"]

    return _guard(run, "evidence packet")


# -- activation -----------------------------------------------------------------------------------


def _activation_setup(layout: str, then_apply: bool) -> Any:
    def setup(ctx: Ctx) -> None:
        from kurahi.gateway.activation_host import OfflineHost
        from kurahi.lifecycle.activation import apply_package, plan_activation
        from kurahi.lineage.stitch import stitch
        from support.activations import OC_NEW, OC_OLD, OPENCLAW, make_home

        if layout == "kurahi":
            make_home(ctx.root, chain=True)
            home, agent, key, markers = ctx.root / "home", "alice", "agent:alice:main", ["LATE"]
        else:
            shutil.copytree(OPENCLAW, ctx.root / "state")
            sessions = ctx.root / "state" / "agents" / "main" / "sessions"
            stitch([sessions / OC_OLD, sessions / OC_NEW], ctx.root / "C.jsonl")
            home, agent, key, markers = ctx.root / "state", "main", "agent:main:main", ["PURPLE-GIRAFFE-ALPHA"]
        pkg = plan_activation(home, agent, key, ctx.root / "C.jsonl", ctx.root / "pkg", markers=markers)
        ctx.info.update(home=str(home.relative_to(ctx.root)), agent=agent, key=key)
        ctx.info["sessions_old"] = _sessions(home / "agents" / agent / "sessions")
        if then_apply:
            apply_package(pkg.root, home, OfflineHost(home))
            ctx.info["sessions_new"] = _sessions(home / "agents" / agent / "sessions")

    return setup


def _sessions(sessions: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(sessions.iterdir())
        if p.is_file() and not p.name.endswith(".lock")
    }


def _activation_act(op: str) -> Any:
    def act(ctx: Ctx) -> None:
        from kurahi.gateway.activation_host import OfflineHost
        from kurahi.lifecycle.activation import apply_package, rollback_package

        home = ctx.root / ctx.info["home"]
        fn = apply_package if op == "apply" else rollback_package
        fn(ctx.root / "pkg", home, OfflineHost(home))
        ctx.ack(op)
        if op == "apply":
            ctx.info["sessions_new"] = _sessions(home / "agents" / ctx.info["agent"] / "sessions")

    return act


def _activation_check(op: str) -> Any:
    def check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
        from kurahi.gateway.activation_host import OfflineHost
        from kurahi.lifecycle.activation import apply_package, rollback_package, verify_package
        from kurahi.store.audit.log_file import AuditChain, chain_path

        home = d / info["home"]
        sessions = home / "agents" / info["agent"] / "sessions"
        old, new = info["sessions_old"], info["sessions_new"]
        want = new if op == "apply" else old
        now = {k: v for k, v in _sessions(sessions).items() if ".tmp" not in k}
        out = []
        # Exactly old or exactly new, apart from files nothing refers to (the installed
        # candidate while the catalog still points at the old session).
        referenced_old = {k: v for k, v in now.items() if k in old}
        if now != old and now != new and not (referenced_old == old and set(now) - set(old) <= set(new)):
            out.append(f"sessions: neither old nor new: {sorted(set(now.items()) ^ set(new.items()))[:3]}")
        if acks and now != want:
            out.append(f"sessions: {op} acknowledged, but the state is not the {op} result")

        def finish() -> list[str]:
            # The recovery: rerun the operation offline, as the gateway campaign does.
            fn = apply_package if op == "apply" else rollback_package
            fn(d / "pkg", home, OfflineHost(home))
            res = []
            if {k: v for k, v in _sessions(sessions).items() if ".tmp" not in k} != want:
                res.append(f"sessions: rerunning {op} did not give the {op} result")
            if op == "apply" and not verify_package(d / "pkg", home).ok:
                res.append("activate verify fails after the rerun")
            chain = AuditChain(chain_path(home))
            if chain.path.exists() and not chain.verify().ok:
                res.append(f"audit chain does not verify: {chain.verify().reason}")
            return res

        return out + _guard(finish, f"rerun {op}")

    return check


# -- the manifest hash cache ----------------------------------------------------------------------


def _hash_setup(ctx: Ctx) -> None:
    for k in range(3):
        (ctx.root / f"f{k}.md").write_bytes(f"file {k}\n".encode() * (k + 1))
        os.utime(ctx.root / f"f{k}.md", (1_700_000_000, 1_700_000_000))  # old enough to be cached


def _hash_act(ctx: Ctx) -> None:
    from kurahi.continuity.hashcache import HashCache

    cache = HashCache(ctx.root / "run" / "hash-cache.json", root=ctx.root)
    cache.digests([ctx.root / f"f{k}.md" for k in range(3)])
    cache.save()
    ctx.ack("saved")
    (ctx.root / "f1.md").write_bytes(b"changed\n")
    os.utime(ctx.root / "f1.md", (1_700_000_100, 1_700_000_100))
    cache = HashCache(ctx.root / "run" / "hash-cache.json", root=ctx.root)
    cache.digests([ctx.root / f"f{k}.md" for k in range(3)])
    cache.save()
    ctx.ack("saved again")


def _hash_check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
    from kurahi.continuity.hashcache import HashCache

    def run() -> list[str]:
        files = [d / f"f{k}.md" for k in range(3)]
        cache = HashCache(d / "run" / "hash-cache.json", root=d)
        got = [x.sha256 for x in cache.digests(files)]
        want = [hashlib.sha256(p.read_bytes()).hexdigest() for p in files]
        out = [] if got == want else ["hash cache: a digest does not match the file"]
        cache.save()
        return out

    return _guard(run, "hash cache")


WIDE = [
    Protocol("config-apply", _config_setup, _config_act, _config_check, ("filefsync", "dirfsync")),
    Protocol("device-pairing", _devices_setup, _devices_act, _devices_check, ("filefsync", "dirfsync")),
    Protocol("stitch-output", _stitch_setup, _stitch_act, _stitch_check),
    Protocol("evidence-packet", _stitch_setup, _packet_act, _packet_check, ("filefsync", "dirfsync")),
    Protocol(
        "activation-apply",
        _activation_setup("kurahi", False),
        _activation_act("apply"),
        _activation_check("apply"),
        ("filefsync", "dirfsync"),
        cost=10,
    ),
    Protocol(
        "activation-rollback",
        _activation_setup("kurahi", True),
        _activation_act("rollback"),
        _activation_check("rollback"),
        ("filefsync", "dirfsync"),
        cost=10,
    ),
    Protocol(
        "activation-apply-openclaw",
        _activation_setup("openclaw", False),
        _activation_act("apply"),
        _activation_check("apply"),
        ("filefsync", "dirfsync"),
        cost=10,
    ),
    Protocol("hash-cache", _hash_setup, _hash_act, _hash_check, ()),
]
