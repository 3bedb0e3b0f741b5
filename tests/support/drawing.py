"""Draw many hypothesis examples at once, to send to a peer in one batch."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

__all__ = ["draw_batch"]


def draw_batch(strategy: st.SearchStrategy[Any], n: int) -> list[Any]:
    """Draw ``n`` examples of ``strategy`` (hypothesis still picks them: edge cases first)."""
    drawn: list[Any] = []

    @settings(
        max_examples=n,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
            HealthCheck.filter_too_much,
        ],
    )
    @given(strategy)
    def draw(value: Any) -> None:
        drawn.append(value)

    while len(drawn) < n:  # hypothesis may stop a little short of max_examples
        draw()
    return drawn[:n]
