"""Bring one loss back: stitch, check, plan, apply, verify, in one call.

:func:`plan_rescue` builds the candidate from the loss's pieces (``lineage stitch``; a moved
dir's live transcript as it is), chooses markers (:mod:`kurahi.lifecycle.rescue.markers`) and
verifies each with ``lineage check`` in the runtime's own view, then writes an activation
package (``activate plan``). :func:`apply_rescue` then applies it offline, verifies it and
says what came back and how to roll it back. Nothing in the state directory changes before
the apply; every refusal before it changes nothing at all.

Refused, with nothing changed: an OpenClaw gateway running on the state dir (the message says
how to stop it, as a foreground ``openclaw gateway run`` and as a service); a loss linked by
clocks alone that the user did not accept by id (``accept_guess``); an unknown loss id.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from kurahi.errors import GuessNotAcceptedError, LossNotFoundError, OpenClawRunningError, UsageError
from kurahi.lifecycle.rescue.applied import record_applied, rescue_dir
from kurahi.lifecycle.rescue.losses import Loss, RescueReport, find_losses, loss_id
from kurahi.lifecycle.rescue.markers import choose
from kurahi.lifecycle.rescue.reading import Stretch, stretches_of
from kurahi.lineage.find import Agent, Piece, open_agent
from kurahi.runtimes.view import DEFAULT_CONTEXT_WINDOW, RuntimeView
from kurahi.runtimes.views import view as view_facts

if TYPE_CHECKING:
    from kurahi.lifecycle.activation import Host

__all__ = [
    "RescueMarker",
    "RescuePlan",
    "RescueResult",
    "apply_rescue",
    "default_package_dir",
    "pick",
    "plan_rescue",
    "refuse_outside",
]

_RECENT = 20
"""Texts at the end of the live view an "after the boundary" marker is chosen from."""


class RescueMarker(msgspec.Struct, rename="camel", frozen=True):
    """A phrase that proves something came back."""

    text: str
    part: str
    """``lost`` (from a lost stretch: absent from the view now), ``after`` (from after the boundary) or ``user``."""
    source: str | None
    """The piece it comes from."""
    in_view: bool
    """Whether the runtime's view of the candidate holds it (``lineage check``)."""


class RescuePlan(msgspec.Struct, rename="camel"):
    """What a rescue will do, checked, with its activation package written."""

    loss: Loss
    package: str
    candidate_session_id: str
    runtime: str
    markers: list[RescueMarker]
    view_messages: int
    """Messages of the runtime's view of the candidate (what it would send with an endless window)."""
    live_messages: int
    """Messages of its view now."""
    tokens: int | float
    window: int
    sent_messages: int = 0
    """Messages of the candidate's view the runtime sends under ``window``."""
    sent_tokens: int = 0
    rule: str = ""
    """The runtime's limit that applied, in words."""
    not_sent: list[str] = msgspec.field(default_factory=list)
    """Pieces restored in the history whose phrases the runtime will still not send (past the window)."""
    accepted_guesses: list[str] = msgspec.field(default_factory=list)
    stitched: list[str] = msgspec.field(default_factory=list)
    """The sources of the candidate, oldest first."""

    @property
    def brought_back(self) -> int:
        """Messages back in the runtime's view (all sent when the view fits the window)."""
        return max(0, self.view_messages - self.live_messages)

    @property
    def staying_out(self) -> int:
        """Messages of the view the runtime will not send (past the window: the oldest ones)."""
        return max(0, self.view_messages - self.sent_messages)

    @property
    def brought_back_sent(self) -> int:
        """Messages brought back that the runtime sends (the newest of them; what is sent now stays sent)."""
        return max(0, self.brought_back - self.staying_out)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        out["broughtBack"] = self.brought_back
        out["broughtBackSent"] = self.brought_back_sent
        out["stayingOut"] = self.staying_out
        return out


class RescueResult(msgspec.Struct, rename="camel"):
    """A rescue applied and verified."""

    plan: RescuePlan
    outcome: str
    verified: bool
    rollback: str
    """The command that undoes it."""
    activation: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        out["plan"] = self.plan.to_dict()
        return out


# ---- choosing and guarding ---------------------------------------------------------------


def pick(report: RescueReport, loss_id: str) -> Loss:
    """The loss ``loss_id`` names (its id or a unique prefix of it).

    Raises:
        LossNotFoundError: no loss, or several, match.
    """
    wanted = loss_id.strip().lower()
    hits = [loss for loss in report.losses if loss.id == wanted] or [
        loss for loss in report.losses if wanted and loss.id.startswith(wanted)
    ]
    if len(hits) == 1:
        return hits[0]
    known = ", ".join(loss.id for loss in report.losses) or "none: nothing was lost"
    what = "several losses start with" if hits else "no loss"
    raise LossNotFoundError(
        f"{report.state_dir}: {what} {loss_id!r} (losses: {known}); run `kurahi rescue` to list them"
    )


def refuse_if_running(root: Path) -> None:
    """Raise when the runtime whose state ``root`` is runs on it; say how to stop it.

    Raises:
        OpenClawRunningError: it runs; nothing was changed.
    """
    from kurahi.runtimes.registry import for_state_dir

    runtime = for_state_dir(root)
    lock = runtime.running(root)
    if lock is None:
        return
    raise OpenClawRunningError(
        f"an {runtime.label} gateway is running on {root} (it holds {lock}); stop it first: "
        f"{runtime.how_to_stop}; then run this again. Nothing was changed"
    )


def refuse_outside(root: Path, out: str | os.PathLike[str], option: str = "--out") -> None:
    """Raise when the package ``out`` (given as ``option``) would be inside the state dir ``root``, symlinks resolved.

    A package holds a whole copy of the history and the old catalog: inside the state, the
    runtime (or its next migration) would take them for its own.

    Raises:
        UsageError: it would; nothing was written.
    """
    real_root, real_out = Path(os.path.realpath(root)), Path(os.path.realpath(out))
    if real_out.is_relative_to(real_root):
        shown = "" if Path(os.path.abspath(out)) == real_out else f" (it resolves to {real_out})"
        raise UsageError(
            f"{out}: inside the state dir {root}{shown}; a package is kept outside the state, where the "
            f"runtime never reads it: choose another {option}. Nothing was written"
        )


def _guesses(report: RescueReport, loss: Loss, accepted: Sequence[str]) -> list[str]:
    """The guessed losses a rescue of ``loss`` brings back, each accepted by id, else raise."""
    restored = set(loss.pieces)
    guesses = [g for g in report.losses if g.key == loss.key and g.confidence == "guess" and g.source in restored]
    ok = {a.strip().lower() for a in accepted}
    missing = [g for g in guesses if not any(g.id.startswith(a) for a in ok if a)]
    if missing:
        lines = "; ".join(f"{g.id} ({g.source}: {', '.join(g.evidence)})" for g in missing)
        raise GuessNotAcceptedError(
            f"{loss.id} brings back history linked to {loss.key} by clocks alone: {lines}. "
            f"If it is this key's, confirm with --accept-guess {' --accept-guess '.join(g.id for g in missing)} "
            "(--yes does not confirm a guess); nothing was changed"
        )
    return [g.id for g in guesses]


# ---- building the candidate --------------------------------------------------------------


def _sources(state: Agent, pieces: Sequence[Piece]) -> list[Path]:
    """Each piece as a file: a file piece as it is, a SQLite session as the state's private export."""
    return [Path(p.source) if p.db_path is None else state.session_file(p.session_id) for p in pieces]


def _has_reset(piece: Piece) -> bool:
    return bool(piece.reset_entries)


def default_package_dir(loss_id: str) -> Path:
    """Where ``rescue apply`` keeps a package when not told: ``$XDG_STATE_HOME/kurahi/rescue/<id>-<time>-<random>``.

    Outside the state dir on purpose: OpenClaw's folders get no foreign files. The time says
    when (to the second, for people); the random part keeps two in the same second apart (a
    retry after a failed apply, the same loss on two copies of a state).
    """
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return rescue_dir() / f"{loss_id}-{stamp}-{secrets.token_hex(4)}"


class Prepared(msgspec.Struct, rename="camel"):
    """A loss's candidate, built and checked, before any package: what ``rescue watch --prepare`` keeps."""

    loss: Loss
    candidate: str
    markers: list[RescueMarker]
    view_messages: int
    live_messages: int
    tokens: int | float
    window: int
    not_sent: list[str]
    accepted_guesses: list[str]
    sent_messages: int = 0
    """Messages of the view the runtime sends under the window."""
    sent_tokens: int = 0
    rule: str = ""
    """The runtime's limit that applied, in words."""


def prepare_candidate(
    root: Path,
    loss: Loss,
    report: RescueReport,
    folder: Path,
    *,
    markers: Sequence[str] = (),
    accepted: Sequence[str] = (),
) -> Prepared:
    """Stitch the loss's pieces into ``folder/C.jsonl``, choose markers and check them; reads the state only.

    Raises:
        StitchError, TranscriptReadError: as stitch and check raise them.
    """
    from kurahi.lineage.stitch import stitch

    same_key = [g for g in report.losses if g.key == loss.key and g.agent == loss.agent]
    lost_here = [g for g in same_key if g.source in loss.pieces and (g.at or "") >= (loss.at or "")]
    with open_agent(root, loss.agent) as state:
        lineage = state.lineage(loss.key)
        by_source = {p.source: p for p in lineage.pieces}
        pieces = [by_source[s] for s in loss.pieces]
        notes: list[str] = []
        stretch_texts: dict[str, list[tuple[str, str]]] = {}
        live_texts: list[tuple[str, str]] = []
        keep: list[str] = []
        for piece in pieces:
            parts, _ = stretches_of(state, piece, notes, texts=True)
            if piece.source == loss.source:
                parts, earlier = _from_the_loss(loss, parts)
                if view_facts(loss.runtime).after_last_reset:
                    # Bringing back loss N leaves the resets before it where they are: what they ended
                    # stays out of the view, each of those losses still listed and brought back on its own.
                    keep = [p.ends_with_reset[0] for p in earlier if p.ends_with_reset is not None]
            if piece.current:
                # Only the stretches before its last reset left the view; the last one is the view.
                stretch_texts[piece.source] = [t for part in parts[:-1] for t in part.texts]
                live_texts = parts[-1].texts if parts else []
            else:
                stretch_texts[piece.source] = [t for part in parts for t in part.texts]
        candidate = folder / "C.jsonl"
        # A session with nothing in it yet (the one a reset opened, not talked to since) adds nothing.
        used = [p for p in pieces if p.entry_count] or pieces[-1:]
        files = _sources(state, used)
        if len(files) == 1 and not _has_reset(used[0]):
            shutil.copyfile(files[0], candidate)  # a moved dir, or one piece before an empty session
        else:
            stitch(files, candidate, keep_resets=keep)
        absent, live_messages = _live_view(state, lineage, loss, notes)
    # The latest of what is sent now: a phrase from there proves the candidate ends where the view does.
    recent = list(live_texts[-_RECENT:])
    history = [t for texts in stretch_texts.values() for _, t in texts] + [t for _, t in recent]
    view, messages = _runtime_view(candidate, loss)
    # Past the window the oldest messages are not sent: a marker is chosen from what is, so that
    # what comes back and is sent is proved, and what stays out is counted, not refused.
    from kurahi.lineage.check import message_text

    unsent = "\n".join(message_text(messages[i]) for i in view.left_out)
    chosen = _choose(lost_here, stretch_texts, recent, absent + "\n" + unsent, unsent, history)
    # In the view and sent under the window: plan refuses a marker the runtime will not send.
    hits = {text: _sent(messages, set(view.sent), text) for text in [*(m.text for m in chosen), *markers]}
    final = [RescueMarker(m.text, m.part, m.source, hits[m.text]) for m in chosen]
    final += [RescueMarker(t, "user", None, hits[t]) for t in markers]
    lost_sources = {m.source for m in final if m.part == "lost" and m.source}
    back = {m.source for m in final if m.part == "lost" and m.in_view}
    return Prepared(
        loss=loss,
        candidate=str(candidate),
        markers=final,
        view_messages=view.messages,
        live_messages=live_messages,
        tokens=view.tokens,
        window=view.window,
        not_sent=sorted(s for s in lost_sources - back if s),
        accepted_guesses=list(accepted),
        sent_messages=len(view.sent),
        sent_tokens=view.sent_tokens,
        rule=view.rule,
    )


def _from_the_loss(loss: Loss, parts: list[Stretch]) -> tuple[list[Stretch], list[Stretch]]:
    """The lost piece's stretches from the loss's own onward, and those before it."""
    for n, part in enumerate(parts):
        if loss_id(loss.agent, loss.key, part) == loss.id:
            return parts[n:], parts[:n]
    return parts, []  # pragma: no cover - a loss is one of its piece's stretches


def _runtime_view(candidate: Path, loss: Loss) -> tuple[RuntimeView, list[Any]]:
    """What the loss's runtime sends of the candidate under the key's window, and the whole view's messages.

    The plain reference projection (:mod:`kurahi.context.reference`) and the runtime's rule
    (:mod:`kurahi.runtimes.view`); ``activate plan`` then checks the candidate again
    with ``lineage check``, both projections compared.
    """
    from kurahi.context.reference import reference_projection
    from kurahi.runtimes.view import view_of

    ref = reference_projection(candidate)
    window = loss.restore.window or DEFAULT_CONTEXT_WINDOW
    view = view_of(ref, loss.runtime, context_window=window, window_from=loss.restore.window_from or "the default")
    after_reset = view_facts(loss.runtime).after_last_reset and ref.runtime_messages is not None
    return view, list(ref.runtime_messages if after_reset and ref.runtime_messages is not None else ref.messages)


def _sent(messages: Sequence[Any], sent: set[int], text: str) -> bool:
    """Whether ``lineage check`` finds ``text`` sent: its first message holding it (JSON text) is sent."""
    from kurahi.lineage.check import message_text

    first = next((i for i, m in enumerate(messages) if text in message_text(m)), None)
    return first is not None and first in sent


def plan_rescue(
    state_dir: str | os.PathLike[str],
    loss_id: str,
    out: str | os.PathLike[str],
    *,
    markers: Sequence[str] = (),
    accept_guess: Sequence[str] = (),
    agent: str | None = None,
    report: RescueReport | None = None,
) -> RescuePlan:
    """Build, check and package the repair of one loss; the state dir is only read.

    Raises:
        LossNotFoundError: no such loss.
        GuessNotAcceptedError: the repair needs a guess the user did not accept.
        OpenClawRunningError: OpenClaw runs on the state dir.
        CandidateError: a marker the user gave is not in the runtime's view of the candidate.
        StitchError, ActivationError, TranscriptReadError: as the steps raise them.
    """
    from kurahi.lifecycle.activation import plan_activation

    root = Path(os.path.abspath(state_dir))
    refuse_outside(root, out)
    refuse_if_running(root)
    if report is None:
        report = find_losses(root, agent=agent)
    loss = pick(report, loss_id)
    accepted = _guesses(report, loss, accept_guess)
    with tempfile.TemporaryDirectory(prefix="kurahi-rescue-c-") as tmp:
        prep = prepare_candidate(root, loss, report, Path(tmp), markers=markers, accepted=accepted)
        verified = [m.text for m in prep.markers if m.in_view]
        # The user's own markers go to the plan even when missing: plan then refuses, naming them.
        pkg = plan_activation(
            root,
            loss.agent,
            loss.key,
            prep.candidate,
            out,
            markers=verified + [t for t in markers if t not in verified],
        )
    plan = pkg.plan
    return RescuePlan(
        loss=loss,
        package=str(pkg.root),
        candidate_session_id=plan.session_after,
        runtime=loss.runtime,
        markers=prep.markers,
        view_messages=prep.view_messages,
        live_messages=prep.live_messages,
        tokens=prep.tokens,
        window=prep.window,
        sent_messages=prep.sent_messages,
        sent_tokens=prep.sent_tokens,
        rule=prep.rule,
        not_sent=prep.not_sent,
        accepted_guesses=accepted,
        stitched=list(loss.pieces),
    )


def _live_view(state: Agent, lineage: Any, loss: Loss, notes: list[str]) -> tuple[str, int]:
    """What the runtime sends now, as the stored text of those entries, and its message count.

    The runtime's view: the current session's path (OpenClaw 2026.9: after its last reset;
    nothing for a moved 2026.5 dir). Its stored lines are what a marker must be absent from:
    they hold every word of the view, so a phrase not in them is not in the view.
    """
    current = next((p for p in lineage.pieces if p.current), None)
    if current is None or (view_facts(loss.runtime).empty_when_moved and lineage.moved_from):
        return "", 0
    parts, _ = stretches_of(state, current, notes)
    if view_facts(loss.runtime).after_last_reset:
        parts = parts[-1:]
    with state.open_piece(current) as t:
        indices = [i for part in parts for i in part.indices]
        _, data = t.raw_joined(indices)
    return data.decode("utf-8", "replace"), sum(part.messages for part in parts)


class _Chosen(msgspec.Struct, frozen=True):
    text: str
    part: str
    source: str | None


def _choose(
    lost: Sequence[Loss],
    stretch_texts: dict[str, list[tuple[str, str]]],
    live_texts: Sequence[tuple[str, str]],
    absent: str,
    unsent: str,
    history: Sequence[str],
) -> list[_Chosen]:
    """One phrase per lost piece (absent from the view now), and one from after the boundary; none from ``unsent``."""
    out: list[_Chosen] = []
    for source in dict.fromkeys(g.source for g in lost):
        for phrase in choose(
            stretch_texts.get(source, []), absent_from=absent, history=history, avoid=[c.text for c in out], limit=1
        ):
            out.append(_Chosen(phrase, "lost", source))
    if live_texts:
        avoid = [c.text for c in out]
        for phrase in choose(list(live_texts), absent_from=unsent, history=history, avoid=avoid, limit=1):
            out.append(_Chosen(phrase, "after", None))
    return out


def apply_rescue(
    state_dir: str | os.PathLike[str],
    loss_id: str,
    host: Host,
    out: str | os.PathLike[str] | None = None,
    *,
    markers: Sequence[str] = (),
    accept_guess: Sequence[str] = (),
    agent: str | None = None,
    report: RescueReport | None = None,
) -> RescueResult:
    """Plan (see :func:`plan_rescue`), apply and verify; the rollback command comes back.

    ``host`` is the world outside the files (:class:`~kurahi.lifecycle.activation.Host`): for an
    OpenClaw state dir, the offline host (Kurahi never stops or starts OpenClaw). The one
    activation driver chooses the target (the state dir's files, or its SQLite store).

    Raises:
        The errors of :func:`plan_rescue`, and of ``activate apply``/``verify``.
    """
    from kurahi.lifecycle.activation import apply_package, verify_package

    root = Path(os.path.abspath(state_dir))
    if report is None:
        report = find_losses(root, agent=agent)
    if out is None:
        out = default_package_dir(pick(report, loss_id).id)
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    plan = plan_rescue(root, loss_id, out, markers=markers, accept_guess=accept_guess, agent=agent, report=report)
    refuse_if_running(root)
    record_applied(root, plan.loss.id, plan.loss.key, plan.package)  # before: a kill from here on is found again
    res = apply_package(plan.package, root, host)
    verified = verify_package(plan.package, root)
    return RescueResult(
        plan=plan,
        outcome=res.outcome,
        verified=verified.ok,
        rollback=f"kurahi activate rollback {plan.package} --home {root} --offline",
        activation=res.to_dict(),
    )
