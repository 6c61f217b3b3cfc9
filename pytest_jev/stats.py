"""Statistics: pure functions, no I/O, each statistic once.

- Wilson score interval (95%, no continuity correction): `wilson`, the interval scipy's
  `binomtest(k, n).proportion_ci(method="wilson")` computes (tested to 1e-12). Used by the
  protocol's rates and the registry's per-locale accuracy. Written out here rather than called
  from scipy: scipy evaluates Newcombe's form of the same formula, whose last bit differs from
  this one for about half of all (k, n) (465 of the 1,082 intervals in the committed results/
  files), and published numbers do not change with a refactoring; it is also ~100x cheaper.
- Exact McNemar test of two backends graded on the same items: `mcnemar_exact(b, c)`, b items
  right only for the first and c right only for the second. Under "no difference" each
  discordant item is a fair coin, so the p-value is the two-sided binomial test of min(b, c) in
  b + c trials at 0.5: `scipy.stats.binomtest(min(b, c), b + c, 0.5).pvalue`, tested against an
  exact integer sum (with p = 0.5 the distribution is symmetric: min(1, 2 * P(X <= min(b, c)))).
  `pair_counts` gives b and c from the registry's per-case marks (`detail.correct`).
- Expected calibration error on 10 equal-width bins of confidence ([0, .1), ..., [.9, 1]):
  `ece_equal_width`, the protocol's ECE. (The jevassert-exact ECE on 10 equal-mass bins stays
  the default everywhere else: metrics.ece.)
- Multi-class Brier score: `brier_multiclass`, (p - y)^2 for a yes/no answer; for a choice or a
  score the sum over labels of (p_label - [label is gold])^2. (The jevassert-exact binary Brier
  of the summary is metrics.brier.)
- Nearest-rank percentiles: `nearest_rank`.
- The majority-label baseline: `majority_baseline`, the accuracy of always answering each
  question's most common gold label (the scoreboard's dashed tick, the terminal's baseline row).
- `frontier`: the cheaper-and-better points of a cost / accuracy cloud.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from operator import methodcaller
from typing import Any

# scipy.special.ndtri(0.975), the z scipy's Wilson interval uses (statistics.NormalDist gives
# the neighbouring double, 1.9599639845400536)
Z95 = 1.959963984540054
ECE_WIDTH_BINS = 10
NOISE = 1e-12  # float rounding around a Wilson bound of exactly 0 or 1 (a real one: k = 1 of 10**6 gives 1.8e-7)


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The 95% Wilson score interval of k successes in n trials; None when n is 0."""
    if n <= 0:
        return None
    p = k / n
    t = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / t
    delta = z / t * math.sqrt(p * (1 - p) / n + (z / (2 * n)) ** 2)
    return _snap(centre - delta), _snap(centre + delta)


def _snap(bound: float) -> float:
    """A bound within float noise of 0 or 1 is 0.0 or 1.0: at k = 0 the lower bound is exactly
    0, and centre - delta leaves ~7e-18 there (written into reports as 6.938893903907228e-18)."""
    if bound < NOISE:
        return 0.0
    return 1.0 if bound > 1.0 - NOISE else bound


def majority_baseline(expects: Sequence[Mapping[str, Any]], questions: Sequence[str]) -> float | None:
    """Accuracy of always answering each question's most common gold label (ties: any), over
    every case x question; None without cases or questions."""
    if not expects or not questions:
        return None
    hits = 0
    for qid in questions:  # counted at C speed: 100,000 cases in a few ms
        hits += max(Counter(map(methodcaller("get", qid), expects)).values())
    return hits / (len(expects) * len(questions))


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


def brier_multiclass(probabilities: Sequence[Mapping[str, float]], gold: Sequence[str]) -> float | None:
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


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs; 1.0 without any: scipy's
    exact binomial test of min(b, c) in b + c fair coin flips (scipy loads here, on the first
    pair: a replay that builds no scoreboard never imports it)."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n, k = b + c, min(b, c)
    if n == 0 or 2 * k == n:
        return 1.0
    from scipy.stats import binomtest  # heavy (~0.5 s): only the scoreboard needs it

    return min(1.0, float(binomtest(k, n, 0.5).pvalue))


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
