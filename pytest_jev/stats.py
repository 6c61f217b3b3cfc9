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
  `pair_counts` gives b and c from the registry's per-case marks (`detail.correct`), case by case
  `case_pairs`. The scoreboard's ties and the flip report (--jev-baseline) call this one function.
- The paired accuracy difference of two recordings and its 95% interval: `paired_bootstrap`, a
  percentile bootstrap that resamples *cases* (with all their items), not items: the items of one
  case share a state, so their flips are correlated. Seeded, with jevassert's resampling stream
  (metrics.resamples, `random.Random(seed).randrange`), so it is reproducible to the bit.
- Power of the exact McNemar test, over cases: `mcnemar_power` (exact: the discordant count is
  binomial, and given it the test's rejection region is known), `detectable_difference` (the
  smallest difference found with 80% power at a size) and `cases_needed` (the size that finds a
  given difference). Items are counted through the design effect (`design_effect`): how much more
  the per-case differences vary than independent items would, as in Durkalski et al.'s McNemar
  test for clustered data (2003); a pack of n cases of m items is worth n * m / design effect
  independent items. METHODOLOGY.md ("How big a difference a pack can see") says why, in words.
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
    pairs = case_pairs(first, second)
    return sum(p[0] for p in pairs), sum(p[1] for p in pairs), sum(p[2] for p in pairs)


def case_pairs(first: Mapping[str, str], second: Mapping[str, str]) -> list[tuple[int, int, int]]:
    """pair_counts' (b, c, n) of each case both sides have, in `first`'s order."""
    out = []
    for case_id, marks in first.items():
        other = second.get(case_id)
        if other is None:
            continue
        b = c = n = 0
        for mine, theirs in zip(marks, other):
            if mine in "01" and theirs in "01":
                n += 1
                if mine != theirs:
                    if mine == "1":
                        b += 1
                    else:
                        c += 1
        out.append((b, c, n))
    return out


# -- the paired difference of two recordings ------------------------------------------------

def paired_bootstrap(gained: Sequence[int], items: Sequence[int], n_resamples: int, seed: int = 0
                     ) -> tuple[float, float] | None:
    """95% percentile interval of the paired accuracy difference sum(gained) / sum(items),
    resampling cases: case i has items[i] >= 1 items answered by both recordings, and gained[i]
    = (items right now) - (items right in the baseline) among them. Each resample draws as many
    cases as there are, with replacement, by jevassert's stream (`random.Random(seed)
    .randrange(n)`, metrics.resamples), and the interval is metrics.percentile_interval's. None
    without cases or resamples. numpy loads here: only a run with a baseline needs it."""
    import numpy as np

    from .metrics import percentile_interval, resamples

    n = len(items)
    if n == 0 or n_resamples <= 0:
        return None
    if len(gained) != n or min(items) < 1:
        raise ValueError("every resampled case needs at least one paired item, and one gain")
    g = np.asarray(gained, dtype=np.int64)
    m = np.asarray(items, dtype=np.int64)
    stats = np.empty(n_resamples, dtype=np.float64)
    start = 0
    for idx in resamples(n, n_resamples, seed, max(1, min(n_resamples, 2_000_000 // n))):
        rows = idx.shape[0]
        stats[start:start + rows] = g[idx].sum(axis=1) / m[idx].sum(axis=1)  # integer sums: exact
        start += rows
    return percentile_interval(np.sort(stats))


# -- power of the exact McNemar test ----------------------------------------------------------

ALPHA = 0.05  # two-sided: a difference is real at p < ALPHA (the scoreboard's "tied" is p >= ALPHA)
POWER = 0.80
DEFAULT_DISCORDANCE = 0.20  # assumed share of items two backends answer differently, when one is recorded
MAX_CASES = 10_000_000  # cases_needed gives up above this


def design_effect(per_case: Sequence[tuple[int, int]]) -> float:
    """How much more the paired difference varies between cases than independent items would
    make it: sum over cases of (b_k - c_k)^2, over the discordant items b + c (Durkalski et al.
    2003: the variance of their clustered McNemar statistic against McNemar's own). 1 when the
    items of a case flip independently (or each case has one item); at most the items per case
    when they always flip together. Floored at 1: a pack is never worth more than its items. 1.0
    without discordant items."""
    discordant = sum(b + c for b, c in per_case)
    if discordant == 0:
        return 1.0
    return max(1.0, sum((b - c) ** 2 for b, c in per_case) / discordant)


def mcnemar_power(pairs: int, discordance: float, difference: float, alpha: float = ALPHA) -> float:
    """Exact power of the two-sided exact McNemar test (mcnemar_exact, a difference at p < alpha)
    on `pairs` independent paired items, when a share `discordance` of the items are answered
    differently and the accuracies differ by `difference` (|difference| <= discordance).

    The discordant count D is Binomial(pairs, discordance); given D = d, the items right only
    in the better backend are Binomial(d, pi), pi = (discordance + |difference|) / (2 *
    discordance), and the test rejects when min(k, d - k) <= c(d), c(d) the largest count with
    2 * P(Bin(d, 1/2) <= c) < alpha. The power is the sum over d of P(D = d) * P(reject | d)
    (tails of D below 1e-12 left out). scipy loads here, as in mcnemar_exact."""
    if not 0 <= discordance <= 1 or abs(difference) > discordance + 1e-12:
        raise ValueError(f"a difference of {difference} cannot come from a discordance of {discordance}")
    if pairs <= 0 or discordance == 0:
        return 0.0
    import numpy as np
    from scipy.stats import binom

    pi = min(1.0, (discordance + abs(difference)) / (2 * discordance))
    lo = int(binom.ppf(1e-12, pairs, discordance))
    hi = int(binom.isf(1e-12, pairs, discordance))
    d = np.arange(lo, hi + 1)
    weight = binom.pmf(d, pairs, discordance)
    c = binom.ppf(alpha / 2, d, 0.5) - 1  # smallest k with P(<= k) >= alpha / 2, less one
    c = np.where(2 * binom.cdf(c + 1, d, 0.5) < alpha, c + 1, c)  # the ppf's rounding, either way
    c = np.where((c >= 0) & (2 * binom.cdf(c, d, 0.5) >= alpha), c - 1, c)
    rejected = np.where(c >= 0, binom.cdf(c, d, pi) + binom.sf(d - c - 1, d, pi), 0.0)
    return float(min(1.0, np.sum(weight * rejected)))


def detectable_difference(pairs: int, discordance: float, power: float = POWER, alpha: float = ALPHA
                          ) -> float | None:
    """The smallest accuracy difference the exact McNemar test finds with probability `power` on
    `pairs` independent items of this discordance (bisection: the power rises with the
    difference); None when even a difference as large as the discordance is found less often."""
    if pairs <= 0 or discordance <= 0 or mcnemar_power(pairs, discordance, discordance, alpha) < power:
        return None
    low, high = 0.0, discordance
    while high - low > 1e-7:
        mid = (low + high) / 2
        if mcnemar_power(pairs, discordance, mid, alpha) >= power:
            high = mid
        else:
            low = mid
    return high


def effective_pairs(cases: int, items_per_case: float, deff: float) -> int:
    """Independent items a pack of `cases` cases is worth: cases * items per case / design effect."""
    return int(cases * items_per_case / max(1.0, deff) + 1e-9)


def cases_needed(difference: float, discordance: float, items_per_case: float, deff: float,
                 power: float = POWER, alpha: float = ALPHA) -> int | None:
    """The fewest cases (of `items_per_case` items, at this discordance and design effect) with
    which the exact McNemar test finds `difference` with probability `power`: the first size at
    which the power reaches it (doubling, then bisection; the exact test's power rises with the
    size up to a small sawtooth). None when no size up to MAX_CASES does, or the difference is
    0 or larger than the discordance (it cannot happen)."""
    difference = abs(difference)
    if difference == 0 or difference > discordance or items_per_case <= 0:
        return None

    def enough(cases: int) -> bool:
        return mcnemar_power(effective_pairs(cases, items_per_case, deff), discordance, difference, alpha) >= power

    high = 1
    while not enough(high):
        if high >= MAX_CASES:
            return None
        high = min(MAX_CASES, high * 2)
    low = high // 2  # not enough (or 0)
    while high - low > 1:
        mid = (low + high) // 2
        if enough(mid):
            high = mid
        else:
            low = mid
    return high


def frontier(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For each (cost, accuracy), whether it is on the cheaper-and-better frontier: no other point
    costs as little or less and is as accurate or more, with one of the two strictly."""
    def dominated(i: int) -> bool:
        cost, acc = points[i]
        return any(oc <= cost and oa >= acc and (oc < cost or oa > acc)
                   for j, (oc, oa) in enumerate(points) if j != i)

    return [not dominated(i) for i in range(len(points))]
