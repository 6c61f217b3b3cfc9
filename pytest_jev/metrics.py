"""Metrics over graded items: pure numpy functions with no I/O and no pytest.

The definitions are jevassert 0.2.1's (written out in ../shared metrics contract and
SPEC.md "Reading the numbers"), reproduced to the last bit:

* jevassert's published figures come from Python >= 3.12, whose ``sum()`` of floats
  is compensated (Neumaier). Point estimates use that very algorithm (`py_sum`), on any
  Python. Inside the bootstrap, bin sums are computed exactly in integer limbs and
  rounded once: that equals Neumaier's result unless the exact sum sits within about
  n^2 * 2^-106 of a rounding midpoint, which needs probabilities spread over dozens of
  binades (never seen in a recording; checked against a literal reference in tests).
* Bootstrap draws are Python's ``random.Random(seed).randrange(n)`` stream, produced
  in bulk from numpy's MT19937 set to the same state (32-bit words, top k bits,
  rejection of values >= n).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Iterator

import numpy as np

COVERAGE_THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
ECE_BINS = 10
CONFIDENCE = 0.95


# -- point statistics ------------------------------------------------------------------

def py_sum(values: list[float]) -> float:
    """CPython >= 3.12's sum() of floats (Neumaier compensation), on any Python version."""
    if not values:
        return 0.0
    total = values[0]
    comp = 0.0
    for x in values[1:]:
        t = total + x
        if abs(total) >= abs(x):
            comp += (total - t) + x
        else:
            comp += (x - t) + total
        total = t
    return total + comp if comp and math.isfinite(comp) else total


def mean_bool(values: np.ndarray) -> float:
    n = values.shape[0]
    return int(np.count_nonzero(values)) / n if n else 0.0


def mean_float(values: np.ndarray) -> float:
    n = values.shape[0]
    return py_sum(values.tolist()) / n if n else 0.0


def ece(prob: np.ndarray, correct: np.ndarray, bins: int = ECE_BINS) -> float:
    """Expected calibration error on `bins` equal-mass bins of the sorted (p, correct) pairs."""
    n = prob.shape[0]
    if n == 0:
        return 0.0
    order = np.lexsort((correct, prob))
    p_sorted = prob[order].tolist()
    c_sorted = correct[order]
    k = min(bins, n)
    total = 0.0
    for i in range(k):
        lo, hi = i * n // k, (i + 1) * n // k
        if hi == lo:
            continue
        size = hi - lo
        mean_p = py_sum(p_sorted[lo:hi]) / size
        mean_c = int(np.count_nonzero(c_sorted[lo:hi])) / size
        total += size / n * abs(mean_p - mean_c)
    return total


def brier(p_decision: np.ndarray, got_true: np.ndarray, gold_true: np.ndarray) -> float:
    """Mean of (p_yes - gold)^2 with Python's own float ops (`**` follows the platform libm)."""
    n = p_decision.shape[0]
    if n == 0:
        return 0.0
    terms = [((p if g else 1.0 - p) - (1.0 if t else 0.0)) ** 2
             for p, g, t in zip(p_decision.tolist(), got_true.tolist(), gold_true.tolist())]
    return py_sum(terms) / n


def nearest_rank(values: list[float], pct: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(pct / 100 * len(ordered))) - 1]


@dataclass(frozen=True)
class CoverageRow:
    threshold: float
    coverage: float
    precision: float | None


def coverage_rows(prob: np.ndarray, correct: np.ndarray,
                  thresholds: tuple[float, ...] = COVERAGE_THRESHOLDS) -> list[CoverageRow]:
    n = prob.shape[0]
    rows = []
    for t in thresholds:
        accepted = prob >= t
        k = int(np.count_nonzero(accepted))
        rows.append(CoverageRow(t, k / n if n else 0.0,
                                int(np.count_nonzero(correct & accepted)) / k if k else None))
    return rows


@dataclass(frozen=True)
class Suggestion:
    threshold: float
    coverage: float
    precision: float
    n_accepted: int


def suggest_threshold(prob: np.ndarray, correct: np.ndarray, target: float,
                      min_accepted: int = 10) -> Suggestion | None:
    """Highest-coverage cut on 0.50..0.99 whose precision reaches `target` (first on ties)."""
    n = prob.shape[0]
    best: Suggestion | None = None
    for step in range(50, 100):
        t = step / 100
        accepted = prob >= t
        k = int(np.count_nonzero(accepted))
        if k < min_accepted:
            continue
        precision = int(np.count_nonzero(correct & accepted)) / k
        if precision < target:
            continue
        coverage = k / n
        if best is None or coverage > best.coverage:
            best = Suggestion(t, coverage, precision, k)
    return best


# -- bootstrap -------------------------------------------------------------------------

def _mt19937_like_python(seed: int) -> np.random.MT19937:
    state = random.Random(seed).getstate()[1]
    generator = np.random.MT19937()
    generator.state = {"bit_generator": "MT19937",
                       "state": {"key": np.asarray(state[:624], dtype=np.uint32), "pos": state[624]}}
    return generator


def randrange_stream(n: int, seed: int) -> Iterator[np.ndarray]:
    """Blocks of `random.Random(seed).randrange(n)` results, in order, for n < 2**32."""
    if not 0 < n < 2**32:
        raise ValueError("n must be in [1, 2**32)")
    generator = _mt19937_like_python(seed)
    shift = np.uint64(32 - n.bit_length())
    accept = n / float(1 << n.bit_length())
    block = max(4096, min(1 << 24, int(4 * n / accept)))
    while True:
        words = generator.random_raw(block) >> shift
        yield words[words < n]


def resamples(n: int, count: int, seed: int, rows_per_block: int) -> Iterator[np.ndarray]:
    """`count` resamples of n indices each, as (rows, n) int64 blocks, in draw order."""
    stream = randrange_stream(n, seed)
    pending: list[np.ndarray] = []
    have = 0
    done = 0
    while done < count:
        rows = min(rows_per_block, count - done)
        need = rows * n
        while have < need:
            chunk = next(stream)
            pending.append(chunk)
            have += chunk.shape[0]
        flat = np.concatenate(pending) if len(pending) > 1 else pending[0]
        yield flat[:need].astype(np.int64).reshape(rows, n)
        rest = flat[need:]
        pending, have = ([rest], rest.shape[0]) if rest.shape[0] else ([], 0)
        done += rows


def _interval(stats: np.ndarray) -> tuple[float, float]:
    b = stats.shape[0]
    ordered = np.sort(stats)
    low = max(0, int((1 - CONFIDENCE) / 2 * b))  # jevassert's own expression, bit for bit
    high = min(b - 1, int((1 + CONFIDENCE) / 2 * b))
    return float(ordered[low]), float(ordered[high])


class _ExactSums:
    """Sums of sorted probabilities over position ranges of a resample, exactly.

    Each probability is an integer multiple of 2**-scale; it is split into 31-bit
    integer limbs so prefix sums stay exact in int64. The bin sum is then rounded
    once, correctly, like a compensated Python sum.
    """

    LIMB = 31

    def __init__(self, p_sorted: np.ndarray) -> None:
        values = p_sorted.tolist()
        scale = 0
        for v in values:
            if v > 0.0:
                mant, exp = math.frexp(v)
                m = int(math.ldexp(mant, 53))
                scale = max(scale, 53 - exp - ((m & -m).bit_length() - 1))
        self.scale = scale
        ints = [int(math.ldexp(v, scale)) for v in values]
        top = max(ints, default=0).bit_length()
        self.n_limbs = max(1, -(-top // self.LIMB))
        mask = (1 << self.LIMB) - 1
        self.limbs = [np.asarray([(x >> (self.LIMB * i)) & mask for x in ints], dtype=np.int64)
                      for i in range(self.n_limbs)]

    def to_float(self, limb_sums: list[np.ndarray]) -> np.ndarray:
        flat = [s.ravel().tolist() for s in limb_sums]
        out = np.empty(limb_sums[0].size, dtype=np.float64)
        scale = self.scale
        for j in range(out.size):
            total = 0
            for i, s in enumerate(flat):
                total += s[j] << (self.LIMB * i)
            out[j] = math.ldexp(float(total), -scale) if total < (1 << 1000) else float(total) / (2 ** scale)
        return out.reshape(limb_sums[0].shape)


def bootstrap(prob: np.ndarray, correct: np.ndarray, n_resamples: int, seed: int = 0,
              bins: int = ECE_BINS, memory_budget: int = 3_000_000
              ) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """Percentile intervals (accuracy, ECE) from the same resamples, as jevassert draws them."""
    n = prob.shape[0]
    if n == 0 or n_resamples <= 0:
        return None, None
    order = np.lexsort((correct, prob))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    c_sorted = correct[order].astype(np.int64)
    sums = _ExactSums(prob[order])
    k = min(bins, n)
    bounds = np.asarray([i * n // k for i in range(k + 1)], dtype=np.int64)
    sizes = np.diff(bounds)
    correct_i = correct.astype(np.int64)
    acc_stats = np.empty(n_resamples, dtype=np.float64)
    ece_stats = np.empty(n_resamples, dtype=np.float64)
    rows_per_block = max(1, min(n_resamples, memory_budget // n))
    start = 0
    for idx in resamples(n, n_resamples, seed, rows_per_block):
        rows = idx.shape[0]
        acc_stats[start:start + rows] = correct_i[idx].sum(axis=1) / n
        ece_stats[start:start + rows] = _ece_rows(rank[idx], n, rows, sums, c_sorted, bounds, sizes)
        start += rows
    return _interval(acc_stats), _interval(ece_stats)


def _ece_rows(ranks: np.ndarray, n: int, rows: int, sums: _ExactSums, c_sorted: np.ndarray,
              bounds: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    offsets = np.arange(rows, dtype=np.int64)[:, None]
    counts = np.bincount((ranks + offsets * n).ravel(), minlength=rows * n).reshape(rows, n)
    cum = np.cumsum(counts, axis=1)
    # first rank whose cumulative count reaches each boundary, searched row by row at once
    lifted = (cum + offsets * (n + 1)).ravel()
    targets = (bounds[None, :] + offsets * (n + 1))
    g = np.searchsorted(lifted, targets.ravel(), side="left").reshape(rows, -1)
    g = np.minimum(g, offsets * n + (n - 1))  # boundary 0 of an empty prefix stays in its row
    row_start = offsets * n
    has_prev = g > row_start
    flat_cum = cum.ravel()
    prev_cum = np.where(has_prev, flat_cum[np.maximum(g - 1, 0)], 0)
    partial = bounds[None, :] - prev_cum  # copies of rank g taken before the boundary
    rank_at = g - row_start

    def prefix(weights: np.ndarray) -> np.ndarray:
        run = np.cumsum(counts * weights[None, :], axis=1).ravel()
        before = np.where(has_prev, run[np.maximum(g - 1, 0)], 0)
        return before + partial * weights[rank_at]

    limb_bins = [np.diff(prefix(limb), axis=1) for limb in sums.limbs]
    correct_bins = np.diff(prefix(c_sorted), axis=1)
    sum_p = sums.to_float(limb_bins)
    total = np.zeros(rows, dtype=np.float64)
    for i, size in enumerate(sizes.tolist()):
        mean_p = sum_p[:, i] / size
        mean_c = correct_bins[:, i] / size
        total = total + size / n * np.abs(mean_p - mean_c)
    return total
