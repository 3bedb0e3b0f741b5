"""Kurahi reads what Pi 1.6.0's own ``SessionManager`` writes exactly as Pi does.

Random programs (``tests/peers/pi_fuzz.mjs``: every public append and branch method, unicode
and long texts, compactions anywhere, context edits on and off the branch, custom messages
with arbitrary and deeply nested ``details``, Pi's clock anywhere in ``Date``'s range) are run
by Pi itself; every file Pi wrote is projected by Pi and by each of Kurahi's readers, with the
C scanner and without it, at the leaf and at three other entries (:mod:`pi_fuzzing`). Every
projection must be byte-identical to Pi's, or a difference ``docs/store.md`` documents.

A few hundred files here; ``benchmarks/pi_fuzz.py`` runs thousands and prints the tally.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.pi_fuzzing import Tally, compare, run_pi

pytestmark = pytest.mark.pi

SEEDS = {101: 3_000, 202: 0, 303: 0}
"""Seed -> how deep its programs may nest ``details`` (0: not past CPython's decoders). Here
at most 3,000 levels: each of the six reads of a file decodes such a line in Python (about
2 µs a level); ``benchmarks/pi_fuzz.py`` goes to 30,000, past JSON.stringify's stack."""
PROGRAMS = 110
"""Programs per seed (about four in five write a file: Pi writes nothing before its first
user or assistant message)."""


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_kurahi_projects_every_file_pi_wrote_as_pi_does(seed: int, tmp_path: Path) -> None:
    records = run_pi(seed, PROGRAMS, tmp_path, deep=SEEDS[seed] > 0, max_levels=SEEDS[seed])
    tally = Tally()
    compare(records, tally)
    print(f"seed {seed}: {tally.line()}")
    assert tally.files >= PROGRAMS // 2
    assert tally.unexplained == [], "\n\n".join(tally.unexplained[:10])
