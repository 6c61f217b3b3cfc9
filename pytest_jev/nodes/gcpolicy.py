"""Large sessions keep what collection built out of the cyclic garbage collector's walks.

Packs, graded outcomes and items live until the session ends and hold no cycles worth
collecting, yet each full collection walks all of them: with 100,000 case items that was
about a sixth of the run. From FREEZE_MIN_CASES case items on they are frozen
(`gc.freeze()`: still freed by reference counting) and handed back at unconfigure.
"""

from __future__ import annotations

import gc

import pytest

from ..stash import FROZEN_KEY

# From this many case items on (one pack, or the whole session) collection's objects are frozen.
FREEZE_MIN_CASES = 10_000


def freeze_if_large(config: pytest.Config, n_cases: int) -> None:
    """Freeze every object alive now, when `n_cases` is large. No collection first (a full one
    costs ~0.5 s at 100,000 items): the little cyclic garbage left is collected after unfreeze."""
    if n_cases >= FREEZE_MIN_CASES:
        gc.freeze()
        config.stash[FROZEN_KEY] = True


def unfreeze(config: pytest.Config) -> None:
    """Hand the frozen objects back to the collector (the process may go on: pytest.main())."""
    if config.stash.get(FROZEN_KEY, False):
        config.stash[FROZEN_KEY] = False
        gc.unfreeze()
