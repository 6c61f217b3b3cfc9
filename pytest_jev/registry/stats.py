"""Statistics of the scoreboard: pure functions, no I/O.

- `mcnemar_exact(b, c)`: the exact McNemar test of two backends graded on the same items, b items
  right only for the first and c right only for the second. Under "no difference" each
  discordant item is a fair coin, so the p-value is the two-sided binomial test of min(b, c) in
  b + c trials at 0.5: `scipy.stats.binomtest(min(b, c), b + c, 0.5).pvalue` (tested to 1e-12).
  With p = 0.5 the distribution is symmetric and that is min(1, 2 * P(X <= min(b, c))).
- `pair_counts`: b and c from the registry's per-case marks (`detail.correct`).
- `frontier`: the cheaper-and-better points of a cost / accuracy cloud.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

__all__ = ["frontier", "mcnemar_exact", "pair_counts"]


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs; 1.0 without any.

    Summed in exact integers (math.comb), so it holds for thousands of pairs where a float
    binomial pmf would underflow term by term."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n, k = b + c, min(b, c)
    if n == 0 or 2 * k == n:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return min(1.0, float(Fraction(2 * tail, 2**n)))


def pair_counts(first: Mapping[str, str], second: Mapping[str, str]) -> tuple[int, int, int]:
    """(b, c, n) over the items both backends answered: b right only in `first`, c right only in
    `second`, n the paired items. Marks are one character per question ('1' right, '0' wrong,
    '-' no usable answer); cases one side lacks, and items either side missed, are not paired."""
    b = c = n = 0
    for case_id, marks in first.items():
        other = second.get(case_id)
        if other is None:
            continue
        for mine, theirs in zip(marks, other):
            if mine in "01" and theirs in "01":
                n += 1
                if mine != theirs:
                    if mine == "1":
                        b += 1
                    else:
                        c += 1
    return b, c, n


def frontier(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For each (cost, accuracy), whether it is on the cheaper-and-better frontier: no other point
    costs as little or less and is as accurate or more, with one of the two strictly."""
    def dominated(i: int) -> bool:
        cost, acc = points[i]
        return any(oc <= cost and oa >= acc and (oc < cost or oa > acc)
                   for j, (oc, oa) in enumerate(points) if j != i)

    return [not dominated(i) for i in range(len(points))]
