"""The seeded, stratified sample: distinct states only, each label's share of the sample
proportional to its share of the source.

Deterministic for a given seed and source: pools keep the file's order, labels are walked
in the taxonomy's order, and all randomness comes from one `random.Random(seed)` (Mersenne
Twister; `sample` and `shuffle` have drawn the same way since Python 3.2).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from .dataset import Row


@dataclass(frozen=True)
class Distinct:
    """The source's rows with each state once (the first occurrence kept)."""

    rows: tuple[Row, ...]
    read: int  # rows in the file
    duplicates: int  # rows skipped because their state came earlier
    conflicts: int  # of those, rows whose label differs from the kept one's


def distinct(rows: Sequence[Row]) -> Distinct:
    first: dict[tuple[str, ...], str] = {}
    kept: list[Row] = []
    conflicts = 0
    for row in rows:
        seen = first.get(row.values)
        if seen is None:
            first[row.values] = row.label
            kept.append(row)
        elif seen != row.label:
            conflicts += 1
    return Distinct(tuple(kept), len(rows), len(rows) - len(kept), conflicts)


def quotas(counts: Mapping[str, int], size: int) -> dict[str, int]:
    """How many cases each label gets: size x its share, rounded by largest remainder (ties:
    the larger label, then taxonomy order), then at least one for every label present when
    the size allows it, taken from the label whose quota most exceeds its exact share."""
    total = sum(counts.values())
    order = list(counts)
    exact = {label: Fraction(size * n, total) for label, n in counts.items()}
    out = {label: int(share) for label, share in exact.items()}
    by_remainder = sorted(order, key=lambda lb: (-(exact[lb] - out[lb]), -counts[lb], order.index(lb)))
    for label in by_remainder[:size - sum(out.values())]:
        out[label] += 1
    present = [label for label in order if counts[label]]
    if size >= len(present):
        for label in present:
            if out[label] == 0:
                donor = max((d for d in order if out[d] > 1), key=lambda d: (out[d] - exact[d], -order.index(d)))
                out[donor] -= 1
                out[label] = 1
    return out


def stratified(rows: Sequence[Row], labels: Sequence[str], size: int, seed: int) -> list[Row]:
    """`size` rows drawn per label by quotas(), then shuffled so labels mix in the file."""
    pools: dict[str, list[Row]] = {label: [] for label in labels}
    for row in rows:
        pools[row.label].append(row)
    rng = random.Random(seed)
    picked: list[Row] = []
    for label, k in quotas({label: len(pool) for label, pool in pools.items()}, size).items():
        picked += rng.sample(pools[label], k)
    rng.shuffle(picked)
    return picked
