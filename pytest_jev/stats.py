"""Statistics of the protocol's selective metrics: pure functions, no I/O.

- Wilson score interval (95%, no continuity correction), as scipy's
  `binomtest(k, n).proportion_ci(method="wilson")` computes it (tested to 1e-12).
- Expected calibration error on 10 equal-width bins of confidence ([0, .1), ..., [.9, 1]):
  the protocol's ECE. (The jevassert-exact ECE on 10 equal-mass bins stays the default
  everywhere else: metrics.py.)
- Brier score: (p - y)^2 for a yes/no answer; for a choice or a score the multi-class form,
  the sum over labels of (p_label - [label is gold])^2.
- Nearest-rank percentiles.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

# scipy.special.ndtri(0.975), the z scipy's Wilson interval uses (statistics.NormalDist gives
# the neighbouring double, 1.9599639845400536)
Z95 = 1.959963984540054
ECE_WIDTH_BINS = 10


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The 95% Wilson score interval of k successes in n trials; None when n is 0."""
    if n <= 0:
        return None
    p = k / n
    t = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / t
    delta = z / t * math.sqrt(p * (1 - p) / n + (z / (2 * n)) ** 2)
    return max(0.0, centre - delta), min(1.0, centre + delta)


def rate(k: int, n: int) -> dict[str, Any]:
    """A rate with its counts and Wilson interval, as reports carry it."""
    ci = wilson(k, n)
    return {"value": k / n if n else None, "k": k, "n": n, "ci": list(ci) if ci else None}


def ece_equal_width(confidence: Sequence[float], correct: Sequence[bool], bins: int = ECE_WIDTH_BINS) -> float | None:
    """sum over bins of (bin size / n) * |mean confidence - accuracy|; bin i holds confidences in
    [i/bins, (i+1)/bins), the last bin also 1.0. None without samples."""
    n = len(confidence)
    if n == 0:
        return None
    sums = [0.0] * bins
    hits = [0] * bins
    counts = [0] * bins
    for c, ok in zip(confidence, correct):
        i = min(bins - 1, max(0, int(c * bins)))
        sums[i] += c
        hits[i] += bool(ok)
        counts[i] += 1
    return sum(counts[i] / n * abs(sums[i] / counts[i] - hits[i] / counts[i]) for i in range(bins) if counts[i])


def brier(probabilities: Sequence[Mapping[str, float]], gold: Sequence[str]) -> float | None:
    """Mean Brier score. A yes/no sample (labels "true" and "false") scores (P(true) - y)^2, the
    binary Brier the summary and jevassert print; a choice or score sample scores the sum over its
    labels of (p - [label == gold])^2, the multi-class Brier (0 to 2). None without samples."""
    n = len(probabilities)
    if n == 0:
        return None
    total = 0.0
    for probs, label in zip(probabilities, gold):
        if set(probs) == {"true", "false"}:
            total += (probs["true"] - (1.0 if label == "true" else 0.0)) ** 2
            continue
        total += sum((p - (1.0 if key == label else 0.0)) ** 2 for key, p in probs.items())
        if label not in probs:
            total += 1.0  # the gold label got no probability at all
    return total / n


def nearest_rank(values: Sequence[float], pct: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(pct / 100 * len(ordered))) - 1]
