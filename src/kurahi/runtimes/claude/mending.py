"""What ``kurahi rescue apply|plan`` appends to mend one listed Claude Code loss, checked before anything is written.

The generic rescue room (:mod:`kurahi.lifecycle.rescue.appending`) asks through
:meth:`kurahi.runtimes.claude.append.ClaudeAppend.repair`; this module reads the session file,
finds the listed break in it again (the file may have changed since the listing), computes the
rows (:mod:`.repair`) and checks with the loader's model that the file with them sends every
lost row, text and tool pair in order, and each of the user's markers. It writes nothing.
"""

from __future__ import annotations

from pathlib import Path

from kurahi.errors import LossNotFoundError, RescueError
from kurahi.runtimes.base import AppendRepair
from kurahi.runtimes.claude.breaks import Break, find_breaks
from kurahi.runtimes.claude.files import list_sessions, read_session
from kurahi.runtimes.claude.graph import Graph
from kurahi.runtimes.claude.losses import CONTINUE_ELSEWHERE
from kurahi.runtimes.claude.losses import loss_id as id_of
from kurahi.runtimes.claude.repair import Mend, mend, mend_elsewhere, verify
from kurahi.runtimes.claude.rows import ParsedRows, encode_row, parse_rows
from kurahi.runtimes.claude.versions import newest
from kurahi.runtimes.session_losses import SessionLoss

__all__ = ["find_break", "repair_of"]


def find_break(parsed: ParsedRows, session_id: str, loss_id: str) -> Break | None:
    """The break of a session whose loss id starts with ``loss_id`` (``None``: no such break now)."""
    g = Graph(parsed, newest())
    for b in find_breaks(g).breaks:
        row = g.rows[b.row]
        if id_of(session_id, b.kind, row.uuid or str(parsed.lines[b.row])).startswith(loss_id):
            return b
    return None


def _new_session(root: Path, session_id: str) -> Path:
    """The file of session ``session_id`` (the new one ``--continue`` began elsewhere)."""
    for sp in list_sessions(root).sessions:
        if sp.session_id == session_id:
            return sp.path
    raise LossNotFoundError(f"session {session_id} is no longer in {root}; list the losses again")


def _tail(data: bytes, m: Mend) -> bytes:
    """The bytes to append: a newline first when the last line is torn (as Claude Code starts its next row)."""
    lead = b"\n" if data and not data.endswith(b"\n") else b""
    return lead + b"".join(encode_row(r) for r in m.rows)


def repair_of(root: Path, loss: SessionLoss, markers: list[str]) -> AppendRepair:
    """The rows that mend ``loss`` and the model's word that they do (see the module docstring).

    Raises:
        LossNotFoundError: the session no longer has the break, or is gone.
        RescueError: the rows cannot be made (the reason), or the model does not confirm them.
    """
    said = f"{loss.id} ({loss.kind}, session {loss.session_id})"
    try:
        if loss.kind == CONTINUE_ELSEWHERE:
            path = _new_session(root, loss.session_id)
            data = read_session(path)
            m = mend_elsewhere(parse_rows(read_session(Path(loss.source))), parse_rows(data), loss.row or "", loss.id)
        else:
            path = Path(loss.source)
            data = read_session(path)
            parsed = parse_rows(data)
            b = find_break(parsed, loss.session_id, loss.id)
            if b is None:
                raise LossNotFoundError(f"{loss.id}: the session changed while it was read; list the losses again")
            m = mend(parsed, b, loss.id)
    except ValueError as exc:
        raise RescueError(f"{said}: {exc}; nothing was changed") from exc
    appended = _tail(data, m)
    checked = verify(data + appended, m, markers)
    if not checked.ok:
        raise RescueError(
            f"{said}: appending the repair's row(s) would not send everything back by the loader's model "
            f"({'; '.join(checked.problems)}); nothing was changed"
        )
    return AppendRepair(
        file=path,
        data=data,
        appended=appended,
        rows=[str(r.get("uuid")) for r in m.rows],
        lost_rows=len(m.lost_uuids),
        lost_items=len(m.lost_items),
        view_messages=checked.messages,
        own={
            "before": m.before,
            "lostUuids": m.lost_uuids,
            "lostItems": [list(x) for x in m.lost_items],
            "markers": markers,
        },
    )
