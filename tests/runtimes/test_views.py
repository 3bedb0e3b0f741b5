"""The views' facts: each says how what stays out past the window reaches the model, in its own runtime's words."""

from __future__ import annotations

import pytest

from kurahi.runtimes.views import VIEWS


@pytest.mark.parametrize("name", list(VIEWS))
def test_what_stays_out_is_folded_in_by_the_runtime_that_sends_the_view(name: str) -> None:
    """``rescue`` prints a view's fold under "stays out": it must name that runtime's way, not another's."""
    view = VIEWS[name]
    assert view.fold
    mentions_openclaw = "openclaw" in view.fold.lower()
    assert mentions_openclaw == name.startswith("openclaw"), (name, view.fold)
    if view.overflow == "compaction":
        # Pi and OpenClaw 2026.5 compact by themselves on the next turn past the window.
        assert "next turn" in view.fold, view.fold
    else:
        assert "compact" in view.fold and "next turn" not in view.fold, view.fold
