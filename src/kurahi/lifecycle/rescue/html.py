"""``kurahi rescue --html FILE``: the losses as one page a person can look at.

One section per loss: what it is, the evidence, what left the view and whether it fits back,
and a lineage picture (:mod:`kurahi.lineage.draw`) of the pieces a rescue would stitch, oldest
first, the lost one on the left. Self-contained: no script, no network, inline SVG only.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path

from kurahi.errors import KurahiError, UsageError
from kurahi.lifecycle.rescue.losses import Loss, RescueReport
from kurahi.lineage.find import open_agent
from kurahi.runtimes.session_losses import SessionLoss
from kurahi.store.redact import scrub_text

__all__ = ["render_html", "write_html"]

_CSS = (
    "body{font-family:system-ui,sans-serif;margin:16px;color:#1f2933;max-width:1200px}"
    "table{border-collapse:collapse;margin:4px 0 12px}th,td{border:1px solid #cbd2d9;padding:2px 8px;"
    "text-align:left;font-size:13px;vertical-align:top}th{background:#f0f4f8}"
    ".guess{color:#8d2b0b;font-weight:600}.ok{color:#0e6245}section{margin:24px 0}"
    "figure{overflow-x:auto;border:1px solid #e4e7eb;margin:0;padding:4px}"
    "figcaption{font-size:13px;color:#52606d;margin:4px}"
)


def _e(value: object) -> str:
    # Keys, evidence and reasons come from the state: secrets in them go as in every output.
    return html.escape(scrub_text(str(value)), quote=True)


def _picture(loss: Loss) -> str:
    """The inline SVG of the pieces a rescue of ``loss`` would stitch (SQLite ones exported privately)."""
    from kurahi.lineage.draw import draw_lineage
    from kurahi.lineage.draw_render import render_svg

    try:
        with open_agent(loss.state_dir, loss.agent) as state:
            lineage = state.lineage(loss.key)
            by_source = {p.source: p for p in lineage.pieces}
            files = []
            for source in loss.pieces:
                piece = by_source.get(source)
                if piece is not None:
                    files.append(Path(piece.source) if piece.db_path is None else state.session_file(piece.session_id))
            return render_svg(draw_lineage(files), standalone=False)
    except KurahiError as exc:
        return f"<p>No picture: {_e(exc)}</p>"


def _section(loss: Loss, picture: bool) -> str:
    r = loss.restore
    fits = "window unknown" if r.fits is None else ("yes" if r.fits else f"no: {r.rule}")
    link = (
        f'<span class="guess">{_e(loss.confidence)} (clocks alone)</span>'
        if loss.confidence == "guess"
        else _e(loss.confidence)
    )
    rows = [
        ("agent / key", f"{_e(loss.agent)} / {_e(loss.key)}"),
        ("last said (UTC)", _e(loss.last_message_at or "-")),
        ("lost at (UTC)", _e(loss.at or "-")),
        ("kind", _e(loss.kind)),
        ("link", link),
        ("evidence", "<br>".join(_e(x) for x in loss.evidence)),
        ("left the view", f"{loss.lost_messages} messages, ~{loss.lost_tokens:,} tokens ({_e(loss.runtime)})"),
        ("would come back", f"{r.messages} messages, ~{r.tokens:,} tokens; fits the window: {_e(fits)}"),
        ("pieces, oldest first", "<br>".join(_e(p) for p in loss.pieces)),
    ]
    guess = f" --accept-guess {loss.id}" if loss.confidence == "guess" else ""
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    caption = (
        f"<figcaption>Left to right, oldest first: {_e(Path(loss.source).name)} held what left the model's view "
        "(up to its reset link); the last file is what the runtime sends now. A rescue stitches them along the "
        "orange links into one session the runtime sends whole.</figcaption>"
    )
    fig = f"<figure>{caption}{_picture(loss)}</figure>" if picture else ""
    if loss.apply_refused is not None:
        back = f"<p>Cannot be brought back yet: {_e(loss.apply_refused)}</p>"
    else:
        back = f"<p>Bring it back: <code>kurahi rescue apply {_e(loss.id)}{guess}</code></p>"
    return (
        f'<section id="loss-{_e(loss.id)}"><h2>{_e(loss.id)}: {_e(loss.kind)} of {_e(loss.key)}</h2>'
        f"<table>{body}</table>{back}{fig}"
        "</section>"
    )


def _inside_section(loss: SessionLoss) -> str:
    """A loss inside a session file: no lineage to draw, the rows that broke named instead."""
    link = f'<span class="guess">{_e(loss.confidence)}</span>' if loss.confidence == "guess" else _e(loss.confidence)
    rows = [
        ("project / session", f"{_e(loss.project)} / {_e(loss.session_id)}"),
        ("last said (UTC)", _e(loss.last_message_at or "-")),
        ("broke at (UTC)", _e(loss.at or "-")),
        ("kind", _e(loss.kind)),
        ("link", link),
        ("evidence", "<br>".join(_e(x) for x in loss.evidence)),
        ("left the view", f"{loss.lost_messages} messages, ~{loss.lost_tokens:,} tokens ({_e(loss.runtime)})"),
        ("file", _e(loss.source)),
    ]
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    guess = f" --accept-guess {loss.id}" if loss.confidence == "guess" else ""
    back = (
        f"<p>Not brought back: {_e(loss.apply_refused)}</p>"
        if loss.apply_refused
        else f"<p>Bring it back: <code>kurahi rescue apply {_e(loss.id)} --claude {_e(loss.state_dir)}{_e(guess)}"
        "</code></p>"
    )
    return (
        f'<section id="loss-{_e(loss.id)}"><h2>{_e(loss.id)}: {_e(loss.kind)} in {_e(loss.session_id)}</h2>'
        f"<table>{body}</table>{back}</section>"
    )


def render_html(reports: Sequence[RescueReport], *, pictures: bool = True) -> str:
    """The page for some reports (one per state looked at)."""
    losses = [loss for r in reports for loss in r.losses]
    inside = [loss for r in reports for loss in r.session_losses]
    looked = "".join(
        f"<li>{_e(r.state_dir)} ({_e(r.kind)}): {_e(r.looked_at or f'{len(r.agents)} agent(s), {r.keys} key(s)')}</li>"
        for r in reports
    )
    if losses or inside:
        head = f"<p>{len(losses) + len(inside)} loss(es), oldest first.</p>"
    else:
        head = '<p class="ok">No loss found: every session\'s past is still in what the runtime sends.</p>'
    sections = "".join(_inside_section(loss) for loss in inside) + "".join(_section(loss, pictures) for loss in losses)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Kurahi rescue</title>'
        f"<style>{_CSS}</style></head><body><h1>What your residents lost</h1><ul>{looked}</ul>{head}"
        f"{sections}</body></html>\n"
    )


def write_html(reports: Sequence[RescueReport], out: str | os.PathLike[str]) -> Path:
    """Write :func:`render_html` to ``out`` (a new file, never one that exists).

    Raises:
        UsageError: ``out`` exists, its folder does not, or it cannot be written (a full disk,
            a folder that takes no files); no file is left then.
    """
    from kurahi.fs.durable import atomic_write
    from kurahi.fs.os_errors import os_errors

    path = Path(out)
    if path.exists() or path.is_symlink():
        raise UsageError(f"{path} already exists; not overwriting it (choose another --html)")
    if not path.parent.is_dir():
        raise UsageError(f"{path.parent} is not a directory")
    with os_errors(UsageError, "cannot write the page (--html)", path=path):
        atomic_write(path, render_html(reports).encode("utf-8"), mode=0o644)
    return path
