"""An OpenClaw resident as a continuity target (``kurahi continuity run --openclaw STATE_DIR``).

The same runner and report as for Kurahi's own residents (:mod:`kurahi.continuity.runner`,
:mod:`kurahi.continuity.report`: per disruption, the manifests before and after, the probes,
the outcome, a leak scan and C0–C9, signed), with an OpenClaw gateway as the target; what it
offers and lacks (no job API, no audit chain, no identity marker) is declared in
:data:`kurahi.continuity.capabilities.OPENCLAW`:

- manifests are taken by Kurahi, read-only, from the state dir
  (:mod:`kurahi.continuity.targets.openclaw.manifest`), signed with Kurahi's observer key;
- every disruption goes through OpenClaw (:mod:`kurahi.continuity.targets.openclaw.runtime`):
  ``model-swap`` is ``config.patch`` of the default model, ``restart`` stops the gateway
  process and starts a new one, ``move`` renames the state dir and starts OpenClaw on the new
  ``OPENCLAW_STATE_DIR`` (and renames it back once the evidence is taken), ``close`` is
  ``sessions.reset`` of the probe session;
- ``reset`` (OpenClaw residents only) resets a session that holds a marker phrase and reports
  what left the runtime's view (Kurahi's runtime-aware ``lineage check``: messages and markers
  before and after); with ``repair`` it stitches the session's lineage and activates it
  (Kurahi's lineage repair and activation for both eras), starts OpenClaw again, reports the
  view once more and takes one turn in the repaired session.

Supervised mode (the default) starts and stops the gateway; attached mode uses a running one,
restarts it through OpenClaw's own ``gateway.restart.request``, and skips, with the reason,
what needs the gateway stopped (``move``, the ``repair`` of a ``reset``).
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kurahi.continuity.capabilities import OPENCLAW
from kurahi.continuity.invariants import ManifestCheck
from kurahi.continuity.report import Signer
from kurahi.continuity.runner import Plan, check_plan, key_signer, leak_scan, probe_key, run, sayer
from kurahi.continuity.signing import SigningKey
from kurahi.continuity.targets.openclaw.manifest import build_openclaw_manifest, observer_key
from kurahi.continuity.targets.openclaw.rounds import check_rounds_target, run_openclaw_rounds
from kurahi.continuity.targets.openclaw.runtime import OpenClawRuntime, which_openclaw
from kurahi.errors import ContinuityError, KurahiError, UsageError
from kurahi.runtimes.openclaw.config import OpenClawState, open_state
from kurahi.runtimes.openclaw.versions import of_era

__all__ = ["OPENCLAW_DISRUPTIONS", "OpenClawOptions", "OpenClawTarget", "run_openclaw_suite"]

OPENCLAW_DISRUPTIONS = ("model-swap", "restart", "move", "close", "reset")
"""``all`` is the first four, as for Kurahi's own residents; ``reset`` is asked for by name."""


@dataclass
class OpenClawOptions:
    """What to run against an OpenClaw resident."""

    state_dir: Path
    resident: str = "main"
    disruptions: Sequence[str] = ("model-swap", "restart", "move", "close")
    supervised: bool = True
    binary: str | None = None
    """``openclaw`` to run (default: the one on PATH)."""
    swap_to: str | None = None
    """``provider/model`` to swap to (default: another model the config names)."""
    repair: bool = False
    """After a ``reset``: run Kurahi's lineage repair and activation, and report the view again."""
    reset_key: str | None = None
    """The session ``reset`` resets (default ``agent:<id>:continuity-reset``)."""
    rounds: int = 0
    """Then this many rounds of compaction, reset and repair (:mod:`kurahi.continuity.targets.openclaw.rounds`)."""
    work_dir: Path | None = None
    """Where the repair's candidate and activation package go (default: a temp dir)."""
    progress: Callable[[str], None] | None = None
    sabotage: Callable[[Path, str], None] | None = None
    """Test hook: called right after each disruption with the (current) state dir and the
    disruption's name, to break the resident on purpose and prove an invariant can fail."""


def _reset_key(agent: str) -> str:
    return f"agent:{agent}:continuity-reset"


def _phrase(tag: str) -> str:
    return f"KURAHI-{tag}-{secrets.token_hex(5).upper()}"


class OpenClawTarget:
    """One OpenClaw resident as the suite's target, driven through OpenClaw's own surfaces."""

    declared = OPENCLAW
    failures: tuple[type[BaseException], ...] = (KurahiError, OSError, KeyError, TypeError, ValueError)

    def __init__(self, opts: OpenClawOptions, state: OpenClawState, rt: OpenClawRuntime, key: SigningKey) -> None:
        self.opts = opts
        self.state = state
        self.rt = rt
        self.key = key
        self.manifests_seen: list[str] = []
        self.home_dir = state.root
        self.work = opts.work_dir
        self.say = sayer(opts.progress)

    @property
    def agent(self) -> str:
        """The resident's id."""
        return self.opts.resident

    @property
    def reset_key(self) -> str:
        """The session the ``reset`` disruption resets."""
        return self.opts.reset_key or _reset_key(self.agent)

    # -- the runner's side ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the gateway when supervised (attached mode uses the one running)."""
        if self.opts.supervised:
            self.say(f"starting OpenClaw {self.rt.version} on {self.state.root}")
            self.rt.start()

    def rounds(self, count: int, out: list[dict[str, Any]]) -> None:
        """Rounds of compaction, reset and repair (:mod:`kurahi.continuity.targets.openclaw.rounds`)."""
        run_openclaw_rounds(self, count, out)

    def report_fields(self, runs: list[dict[str, Any]]) -> dict[str, Any]:
        """``mode``, the runtime, the observer key's fingerprint and where it is."""
        del runs  # the observer key signs every manifest; its fingerprint is known before any run
        return {
            "mode": "supervised" if self.opts.supervised else "attached",
            "target": {"runtime": "openclaw", "version": self.rt.version, "era": self.state.era},
            "fingerprint": self.key.fingerprint,
            "observerKey": str(self.key.path) if self.key.path else None,
        }

    def signer(self) -> Signer:
        """Kurahi's observer key (the one that signs the manifests it takes)."""
        return key_signer(self.key)

    def close(self) -> None:
        """Leave nothing running, the state dir where it was found, and no logs."""
        if self.opts.supervised:
            self.rt.kill()
        if self.rt.state_dir != self.state.root and not self.state.root.exists():
            os.rename(self.rt.state_dir, self.state.root)  # a move cut short: the state dir goes back
        shutil.rmtree(self.rt.logs, ignore_errors=True)

    # -- evidence ------------------------------------------------------------------------------

    def manifest(self) -> dict[str, Any]:
        """The manifest as it is now, signed by the observer key (kept for the leak scan)."""
        m = build_openclaw_manifest(self.rt.state_dir, self.agent, key=self.key, version=self.rt.version)
        import json

        self.manifests_seen.append(json.dumps(m))
        return m

    def snapshot(self) -> dict[str, Any]:
        """The manifest and the chat probe, and who is answering."""
        reply = self.rt.turn(probe_key(self.agent), "continuity probe: who are you?")
        manifest = self.manifest()
        sessions = {e["name"]: e["value"] for e in manifest["entries"] if e["kind"] == "session"}
        probe = sessions.get(probe_key(self.agent)) or {}
        return {
            "manifest": manifest,
            "probes": {"chat": {"status": "answered" if reply else "empty", "reply": reply}},
            "probeSessionId": probe.get("sessionId"),
            "job": None,
            "audit": None,
            "gateway": {
                "pid": self.rt.pid,
                "bootId": None,
                "generation": None,
                "serverStartedAt": self.rt.server_started_ms(),
                "home": str(self.rt.state_dir),
            },
        }

    # -- disruptions --------------------------------------------------------------------------

    def disrupt(self, d: str, ev: dict[str, Any]) -> dict[str, Any]:
        """Perform disruption ``d`` through OpenClaw; its outcome."""
        if d == "model-swap":
            now = self.state_for_now().model()
            current = f"{now['provider']}/{now['model']}"
            target = self.opts.swap_to or self._other_model(current)
            self.rt.set_model(target)
            detail = f"config.patch: model {current} -> {target}"
            return {"ok": True, "detail": detail, "swapTo": target, "swapFrom": current}
        if d == "move" and not self.rt.supervised:
            detail = "attached mode cannot move the state dir of a gateway it does not own (OpenClaw must be stopped)"
            return {"ok": False, "unsupported": True, "detail": detail}
        if d == "restart" and not self.rt.supervised:
            done = self.rt.request_restart()
            signal = f", {done['signal']}" if done.get("signal") else ""
            detail = f"gateway.restart.request: OpenClaw restarted itself (pid {done.get('pid')}{signal})"
            return {"ok": True, "detail": detail, "requestedAt": done["requestedAt"]}
        if d == "restart":
            before = self.rt.pid
            self.rt.stop()
            self.rt.start()
            return {"ok": True, "detail": f"gateway stopped (SIGTERM) and started (pid {before} -> {self.rt.pid})"}
        if d == "move":
            old = self.rt.state_dir
            new = old.with_name(old.name + "-moved")
            if new.exists():
                raise UsageError(f"{new}: already exists; the move would need that name")
            self.rt.stop()
            os.rename(old, new)
            self.rt.move_to(new)
            self.rt.start()
            return {"ok": True, "detail": f"state dir moved {old} -> {new}; OpenClaw started on the new dir"}
        if d == "close":
            self.rt.reset(probe_key(self.agent))
            return {"ok": True, "detail": f"sessions.reset of {probe_key(self.agent)}"}
        if d == "reset":
            return self._reset(ev)
        raise UsageError(f"unknown disruption {d!r}; use {', '.join(OPENCLAW_DISRUPTIONS)} or all")

    def state_for_now(self) -> OpenClawState:
        """The state dir as it is now (where it is now)."""
        return open_state(self.rt.state_dir, self.agent, self.rt.version)

    def _other_model(self, current: str) -> str:
        providers = (self.state_for_now().config.get("models") or {}).get("providers") or {}
        for name, p in sorted(providers.items()) if isinstance(providers, dict) else []:
            for m in p.get("models") or [] if isinstance(p, dict) else []:
                ref = f"{name}/{m.get('id')}" if isinstance(m, dict) else None
                if ref and ref != current:
                    return ref
        raise UsageError(f"the config names no model other than {current}; give --swap-to provider/model")

    def old_dir_writes(self) -> list[str]:
        """Files that appeared at the old path while the state dir was moved (OpenClaw wrote there)."""
        if self.rt.state_dir == self.home_dir or not self.home_dir.exists():
            return []
        return sorted(str(p.relative_to(self.home_dir)) for p in self.home_dir.rglob("*") if p.is_file())

    def move_back(self) -> None:
        """Put a moved state dir back where it was found."""
        if self.rt.state_dir != self.home_dir:
            running = self.rt.pid is not None
            self.rt.stop()
            if self.home_dir.exists():
                # OpenClaw recreated the old path while the dir was moved: keep what it wrote
                # there, beside, and put the resident back where it was.
                stray = self.home_dir.with_name(f"{self.home_dir.name}-stray-{secrets.token_hex(3)}")
                os.rename(self.home_dir, stray)
                self.say(f"move: OpenClaw wrote into the old state dir; kept in {stray}")
            os.rename(self.rt.state_dir, self.home_dir)
            self.rt.move_to(self.home_dir)
            if running:
                self.rt.start()

    # -- reset, measured ----------------------------------------------------------------------

    def view(self, markers: list[str]) -> dict[str, Any]:
        """What OpenClaw would send from the reset key's current session (Kurahi's runtime-aware check)."""
        from kurahi.lineage.check import check
        from kurahi.lineage.find import find_lineage

        lineage = find_lineage(self.rt.state_dir, agent=self.agent, key=self.reset_key)
        sid = lineage.current_session_id
        live = [p for p in lineage.pieces if p.session_id == sid]
        if not live:
            raise ContinuityError(f"the session of {self.reset_key} ({sid}) has no transcript to check")
        piece = live[-1]
        runtime = of_era("sqlite" if piece.db_path is not None else "json").view.name
        rep = check(piece.source, markers=markers, runtime=runtime)
        return {
            "sessionId": sid,
            "runtime": runtime,
            "messages": rep.view_messages,
            "resets": len(piece.reset_entries),
            "pieces": len(lineage.pieces),
            "markers": {h.marker: rep.view_index(h) is not None for h in rep.markers},
        }

    def _reset(self, ev: dict[str, Any]) -> dict[str, Any]:
        a, b = ev["view"]["markers"]
        key = self.reset_key
        how = self.rt.user_reset(key)
        self.rt.turn(key, f"New topic: {b}.")
        ev["view"]["reset"] = self.view([a, b])
        detail = f"{how} of {key}"
        if not self.opts.repair:
            return {"ok": True, "detail": detail}
        if not self.rt.supervised:
            ev["view"]["repairSkipped"] = "attached mode cannot stop the gateway for an activation"
            return {"ok": True, "detail": detail + "; repair skipped (attached)"}
        repaired = self.repair(key, [a, b])
        ev["view"]["repair"] = repaired
        ev["view"]["repaired"] = self.view([a, b])
        check_phrase = _phrase("CHECK")
        ev["view"]["confirm"] = {"phrase": check_phrase, "reply": self.rt.turn(key, f"Do you remember? {check_phrase}")}
        return {"ok": True, "detail": detail + f"; repaired: {repaired['steps']}"}

    def repair(self, key: str, markers: list[str], *, live_only: bool = False) -> dict[str, Any]:
        """Kurahi's lineage repair: stitch the key's lineage into C, plan and apply the activation.

        ``live_only``: stitch the key's live session alone (across its in-transcript resets,
        2026.9), for a session that an earlier repair already made the whole path.
        """
        import tempfile

        from kurahi.gateway.activation_host import OfflineHost
        from kurahi.lifecycle.activation import apply_package, plan_activation
        from kurahi.lineage.find import find_lineage
        from kurahi.lineage.stitch import stitch

        self.say("reset: stopping OpenClaw for the repair")
        self.rt.stop()
        work = self.work or Path(tempfile.mkdtemp(prefix="kurahi-openclaw-repair-"))
        work = work / f"repair-{secrets.token_hex(4)}"
        work.mkdir(parents=True)
        lineage = find_lineage(self.rt.state_dir, agent=self.agent, key=key)
        candidate = work / "C.jsonl"
        # A piece linked by clocks alone waits for a person (`kurahi rescue apply --accept-guess`):
        # the suite never splices in what may be another key's conversation.
        sources = [p.source for p in lineage.pieces if p.confidence != "guess"]
        if live_only:
            live = [p.source for p in lineage.pieces if p.session_id == lineage.current_session_id]
            sources = live[-1:] or sources
        stitched = stitch(sources, candidate)
        pkg = plan_activation(self.rt.state_dir, self.agent, key, candidate, work / "package", markers=markers)
        res = apply_package(pkg.root, self.rt.state_dir, OfflineHost(self.rt.state_dir))
        steps = [str(s) for s in res.to_dict().get("steps") or []]
        self.rt.start()
        return {
            "pieces": [p.kind for p in lineage.pieces],
            "stitchedLines": stitched.identical_lines,
            "package": (work / "package").name,
            "steps": ", ".join(steps) or str(res.to_dict().get("outcome")),
        }

    # -- one disruption -------------------------------------------------------------------------

    def run_one(self, d: str) -> dict[str, Any]:
        """One disruption's evidence (the runner scores it)."""
        ev: dict[str, Any] = {"target": "openclaw", "disruption": d}
        seen = len(self.rt.outputs)
        if d == "reset":
            a, b = _phrase("BEFORE"), _phrase("AFTER")
            ev["view"] = {"key": self.reset_key, "markers": [a, b]}
            self.say("reset: a turn with the marker phrase")
            self.rt.turn(self.reset_key, f"Please keep {a} in mind.")
            ev["view"]["before"] = self.view([a, b])
        self.say(f"{d}: taking the manifest and probe before")
        ev["before"] = self.snapshot()
        self.say(f"{d}: disrupting")
        try:
            ev["outcome"] = self.disrupt(d, ev)
            if self.opts.sabotage is not None and not ev["outcome"].get("unsupported"):
                self.opts.sabotage(self.rt.state_dir, d)
            self.say(f"{d}: taking the manifest and probe after")
            ev["after"] = self.snapshot()
            ev["after"]["wrongToken"] = self.rt.wrong_token()
            if d == "move":
                ev["after"]["oldDirWrites"] = self.old_dir_writes()
        finally:
            # The resident is left as it was found: the state dir where it was, its model back.
            if d == "move":
                self.move_back()
            swapped_from = (ev.get("outcome") or {}).get("swapFrom")
            if swapped_from:
                self.rt.set_model(swapped_from)
        keys = {probe_key(self.agent), self.reset_key}
        driven = {
            e["value"].get("sessionId")
            for side in ("before", "after")
            for e in ev[side]["manifest"]["entries"]
            if e["kind"] == "session" and e["name"] in keys
        }
        for v in (ev.get("view") or {}).values():
            if isinstance(v, dict) and v.get("sessionId"):
                driven.add(v["sessionId"])
        ev["drivenSessions"] = sorted(s for s in driven if s)
        ev["leakScan"] = self.scan_leaks(seen)
        return ev

    def scan_leaks(self, start: int) -> dict[str, Any]:
        """OpenClaw's output since ``start`` and the manifests taken, scanned for the token and the config's secrets."""
        texts = [*self.rt.outputs[start:], *(("manifest", m) for m in self.manifests_seen)]
        self.manifests_seen.clear()
        return leak_scan(texts, [self.rt.token, *_config_secrets(self.state.config)])


def _config_secrets(config: Any) -> list[str]:
    """Every string under a secret-looking key of the config (an API key, a token), to scan for."""
    from kurahi.store.redact import looks_secret

    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, str) and looks_secret(str(k)) and len(x) >= 8 and not x.startswith("__OPENCLAW"):
                    out.append(x)
                else:
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(config)
    return out


def run_openclaw_suite(opts: OpenClawOptions, *, check_manifest: ManifestCheck) -> dict[str, Any]:
    """Run the suite against an OpenClaw resident and return the signed report.

    Raises:
        UsageError: not an OpenClaw state dir, an OpenClaw release Kurahi does not know, no
            ``openclaw``, an unknown disruption, attached mode without a token.
        ContinuityError: the gateway did not start (before any disruption; later it makes
            the report INCOMPLETE instead).
    """
    check_plan(opts.disruptions, opts.rounds, OPENCLAW_DISRUPTIONS)
    state = open_state(opts.state_dir, opts.resident)
    binary = which_openclaw(opts.binary)
    rt = OpenClawRuntime(binary, state.root, supervised=opts.supervised, config=state.config)
    state = open_state(opts.state_dir, opts.resident, rt.version)
    if opts.rounds:
        check_rounds_target(opts.supervised, rt.version)
    target = OpenClawTarget(opts, state, rt, observer_key())
    # No facts probe (OpenClaw has no recall API), so the recall threshold is the default's.
    return run(target, Plan(opts.resident, opts.disruptions, opts.rounds, 0.8, check_manifest))
