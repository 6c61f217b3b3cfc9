"""A slow, literal reading of the metrics contract, used only to check the fast numpy code.

Python's sum() of floats changed in 3.12 to compensated (Neumaier) summation; jevassert's
published numbers were made with it, so this reference implements that algorithm itself
and does not depend on the Python running the tests.
"""

from __future__ import annotations

import math
import random


def neumaier(values):
    total = 0.0  # sum() starts from 0: a lone -0.0 sums to 0.0
    comp = 0.0
    for x in values:
        t = total + x
        if abs(total) >= abs(x):
            comp += (total - t) + x
        else:
            comp += (x - t) + total
        total = t
    return total + comp if comp and math.isfinite(comp) else total


def mean(values):
    return neumaier(float(v) for v in values) / len(values) if values else 0.0


def ece(probs, corrects, bins=10):
    if not probs:
        return 0.0
    pairs = sorted(zip(probs, corrects))
    n = len(pairs)
    k = min(bins, n)
    total = 0.0
    for i in range(k):
        chunk = pairs[i * n // k:(i + 1) * n // k]
        if chunk:
            mp = neumaier(p for p, _ in chunk) / len(chunk)
            mc = neumaier(1.0 for _, c in chunk if c) / len(chunk)
            total += len(chunk) / n * abs(mp - mc)
    return total


def bootstrap(values, statistic, b, seed=0):
    if not values or b <= 0:
        return None
    rng = random.Random(seed)
    n = len(values)
    stats = sorted(statistic([values[rng.randrange(n)] for _ in range(n)]) for _ in range(b))
    return stats[max(0, int((1 - 0.95) / 2 * b))], stats[min(b - 1, int((1 + 0.95) / 2 * b))]


def intervals(probs, corrects, b, seed=0):
    acc = bootstrap(list(corrects), mean, b, seed)
    pairs = list(zip(probs, corrects))
    e = bootstrap(pairs, lambda s: ece([p for p, _ in s], [c for _, c in s]), b, seed)
    return acc, e


def cohen_kappa(first, second):
    """Cohen's kappa from the confusion matrix of two label lists (any hashable labels):
    (p_o - p_e) / (1 - p_e), with p_e from the two raters' marginal shares; 1.0 when both
    gave one and the same label throughout."""
    labels = sorted(set(first) | set(second), key=repr)
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for a, b in zip(first, second):
        matrix[index[a]][index[b]] += 1
    n = len(first)
    observed = sum(matrix[i][i] for i in range(len(labels))) / n
    rows = [sum(row) for row in matrix]
    cols = [sum(matrix[i][j] for i in range(len(labels))) for j in range(len(labels))]
    expected = sum(r * c for r, c in zip(rows, cols)) / (n * n)
    if expected == 1.0:
        return 1.0
    return (observed - expected) / (1 - expected)


def paired_bootstrap(gained, items, b, seed=0):
    """The paired accuracy difference's percentile interval, resampling cases: each resample
    draws len(items) case indices with random.Random(seed).randrange, and its statistic is the
    drawn cases' summed gains over their summed items."""
    if not items or b <= 0:
        return None
    return bootstrap(list(zip(gained, items)), lambda s: sum(g for g, _ in s) / sum(m for _, m in s), b, seed)


def mcnemar_power_by_enumeration(n, discordance, difference, p_value, alpha=0.05):
    """The power of a McNemar test on n independent pairs, by enumerating every (b, c) outcome
    of the trinomial (b: right only in the worse, c: only in the better, n - b - c: alike) with
    its exact probability, and asking `p_value(b, c)` whether it rejects (p < alpha)."""
    worse, better = (discordance - difference) / 2, (discordance + difference) / 2
    alike = 1 - discordance
    total = 0.0
    for b in range(n + 1):
        for c in range(n + 1 - b):
            if p_value(b, c) < alpha:
                ways = math.comb(n, b) * math.comb(n - b, c)
                total += ways * worse**b * better**c * alike ** (n - b - c)
    return total
