"""Metrics over graded items: pure numpy functions with no I/O and no pytest.

The definitions are jevassert 0.2.1's (written out in ../shared metrics contract and
SPEC.md "Reading the numbers"), reproduced to the last bit:

* jevassert's published figures come from Python >= 3.12, whose ``sum()`` of floats
  is compensated (Neumaier). Point estimates use that very algorithm (`py_sum`), on any
  Python. Inside the bootstrap, bin sums are computed exactly in integer limbs and
  rounded once: that equals Neumaier's result unless the exact sum sits within about
  n^2 * 2^-104 of a rounding midpoint, and those rare sums are redone with `py_sum`.
  Probabilities that are NaN or infinite (answers that break their contract) follow
  jevassert's item-by-item loop instead. Both checked against a literal reference.
* Bootstrap draws are Python's ``random.Random(seed).randrange(n)`` stream, produced
  in bulk from numpy's MT19937 set to the same state (32-bit words, top k bits,
  rejection of values >= n).
"""

from __future__ import annotations

import math
import queue
import random
import threading
from collections.abc import Generator, Iterator, Sequence

import numpy as np

COVERAGE_THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
ECE_BINS = 10
CONFIDENCE = 0.95


# -- point statistics ------------------------------------------------------------------

def py_sum(values: list[float]) -> float:
    """CPython >= 3.12's sum() of floats (Neumaier compensation), on any Python version."""
    total = 0.0  # sum() starts from 0, so a lone -0.0 sums to 0.0
    comp = 0.0
    for x in values:
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
    if prob.shape[0] == 0:
        return 0.0
    if not np.isfinite(prob).all():  # NaN has no place in numpy's sort order: sort as Python does
        return _ece_of_sorted(sorted(zip(prob.tolist(), correct.tolist())), bins)
    order = np.lexsort((correct, prob))
    return _ece_of_sorted(list(zip(prob[order].tolist(), correct[order].tolist())), bins)


def _ece_of_sorted(pairs: list[tuple[float, bool]], bins: int) -> float:
    n = len(pairs)
    k = min(bins, n)
    total = 0.0
    for i in range(k):
        chunk = pairs[i * n // k:(i + 1) * n // k]
        if not chunk:
            continue
        size = len(chunk)
        mean_p = py_sum([p for p, _ in chunk]) / size
        mean_c = sum(1 for _, c in chunk if c) / size
        total += size / n * abs(mean_p - mean_c)
    return total


def brier(p_decision: np.ndarray, got_true: np.ndarray, gold_true: np.ndarray) -> float:
    """Mean of (p_yes - gold)^2 with Python's own float ops (`**` follows the platform libm)."""
    n = int(p_decision.shape[0])
    if n == 0:
        return 0.0
    terms = [((p if g else 1.0 - p) - (1.0 if t else 0.0)) ** 2
             for p, g, t in zip(p_decision.tolist(), got_true.tolist(), gold_true.tolist())]
    return py_sum(terms) / n


def coverage_rows(prob: np.ndarray, correct: np.ndarray, thresholds: tuple[float, ...] = COVERAGE_THRESHOLDS
                  ) -> list[tuple[float, float, float | None]]:
    """(threshold, coverage, precision) for each threshold: items with p >= t, and how many
    of those are correct (precision None when none is accepted)."""
    n = prob.shape[0]
    rows = []
    for t in thresholds:
        accepted = prob >= t
        k = int(np.count_nonzero(accepted))
        rows.append((t, k / n if n else 0.0, int(np.count_nonzero(correct & accepted)) / k if k else None))
    return rows


def suggest_threshold(prob: np.ndarray, correct: np.ndarray, target: float,
                      min_accepted: int = 10) -> tuple[float, float, float, int] | None:
    """(threshold, coverage, precision, n accepted) of the highest-coverage cut on 0.50..0.99
    whose precision reaches `target` (first on ties); None when no cut does."""
    n = prob.shape[0]
    best: tuple[float, float, float, int] | None = None
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
        if best is None or coverage > best[1]:
            best = (t, coverage, precision, k)
    return best


# -- bootstrap -------------------------------------------------------------------------

def _mt19937_like_python(seed: int) -> np.random.MT19937:
    state = random.Random(seed).getstate()[1]
    generator = np.random.MT19937()
    generator.state = {"bit_generator": "MT19937",
                       "state": {"key": np.asarray(state[:624], dtype=np.uint32), "pos": state[624]}}
    return generator


def randrange_stream(n: int, seed: int) -> Iterator[np.ndarray]:
    """Blocks of `random.Random(seed).randrange(n)` results (uint32), in order, for n < 2**32.

    The same 32-bit Mersenne Twister words Python draws (Generator.integers over the full
    uint32 range returns them unchanged), top k bits kept, values >= n rejected. Words are
    generated on a second thread (numpy releases the GIL while filling), so generation and
    the caller's work overlap on two cores.
    """
    if not 0 < n < 2**32:
        raise ValueError("n must be in [1, 2**32)")
    shift = np.uint32(32 - n.bit_length())
    limit = np.uint32(n)
    accept = n / float(1 << n.bit_length())
    block = max(4096, min(1 << 23, int(4 * n / accept)))
    words = _word_blocks(seed, block)
    try:
        while True:
            chunk = next(words)
            chunk >>= shift
            yield chunk[chunk < limit]
    finally:
        words.close()


def _word_blocks(seed: int, block: int) -> Generator[np.ndarray, None, None]:
    """Raw 32-bit words of Python's generator for `seed`, produced ahead on a worker thread."""
    generator = np.random.Generator(_mt19937_like_python(seed))
    ready: queue.Queue[np.ndarray | None] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def produce() -> None:
        while not stop.is_set():
            chunk = generator.integers(0, 1 << 32, size=block, dtype=np.uint32)
            while not stop.is_set():
                try:
                    ready.put(chunk, timeout=0.1)
                    break
                except queue.Full:
                    continue

    worker = threading.Thread(target=produce, name="jev-bootstrap-words", daemon=True)
    worker.start()
    try:
        while True:
            chunk = ready.get()
            if chunk is not None:
                yield chunk
    finally:
        stop.set()
        worker.join()


def resamples(n: int, count: int, seed: int, rows_per_block: int) -> Iterator[np.ndarray]:
    """`count` resamples of n indices each, as (rows, n) uint32 blocks, in draw order."""
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
        yield flat[:need].reshape(rows, n)
        rest = flat[need:]
        pending, have = ([rest], rest.shape[0]) if rest.shape[0] else ([], 0)
        done += rows


def percentile_interval(ordered: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Percentile interval of already sorted statistics."""
    b = len(ordered)
    low = max(0, int((1 - CONFIDENCE) / 2 * b))  # jevassert's own expression, bit for bit
    high = min(b - 1, int((1 + CONFIDENCE) / 2 * b))
    return float(ordered[low]), float(ordered[high])


class _ExactSums:
    """Sums of sorted probabilities over position ranges of a resample, exactly.

    Each finite float is an integer multiple of 2**-scale (scale: the largest power of two
    in any value's denominator, up to 1074 for subnormals). The integers are split into
    31-bit limbs so prefix sums stay exact in int64, negative values in limbs of their
    own. A bin's sum is put back together as a Python int and divided by 2**scale, which
    Python rounds correctly: one rounding, like a compensated Python sum.
    """

    LIMB = 31

    def __init__(self, p_sorted: np.ndarray) -> None:
        self.values = p_sorted
        ratios = [v.as_integer_ratio() for v in p_sorted.tolist()]  # finite values only
        self.scale = scale = max((den.bit_length() - 1 for _, den in ratios), default=0)
        ints = [num << (scale - den.bit_length() + 1) for num, den in ratios]
        mask = (1 << self.LIMB) - 1

        def split(values: list[int]) -> list[np.ndarray]:
            n_limbs = max(1, -(-max(values, default=0).bit_length() // self.LIMB))
            return [np.asarray([(x >> (self.LIMB * i)) & mask for x in values], dtype=np.int64)
                    for i in range(n_limbs)]

        self.limbs = split([max(x, 0) for x in ints])
        self.n_positive = len(self.limbs)
        if any(x < 0 for x in ints):
            self.limbs += split([max(-x, 0) for x in ints])

    def to_float(self, limb_sums: list[np.ndarray], sizes: list[int]) -> tuple[np.ndarray, list[int]]:
        """Each bin's sum rounded once, and the flat indices of sums too close to a rounding
        midpoint to be sure a compensated sum rounds the same way.

        Neumaier's sum lands within n^2 * 2^-104 * sum(|x|) of the exact value before its
        last rounding (a loose bound), so both round alike unless the exact value is that
        close to a midpoint between two doubles. The caller redoes those few sums literally.
        """
        flat = [s.ravel().tolist() for s in limb_sums]
        out = np.empty(limb_sums[0].size, dtype=np.float64)
        scale, width = self.scale, len(sizes)
        unit = 1 << scale
        positive, negative = flat[:self.n_positive], flat[self.n_positive:]
        near: list[int] = []
        for j in range(out.size):
            plus = minus = 0
            for i, s in enumerate(positive):
                plus += s[j] << (self.LIMB * i)
            for i, s in enumerate(negative):
                minus += s[j] << (self.LIMB * i)
            total = plus - minus
            rounded = out[j] = total / unit
            # 2 * |exact - midpoint| and the bound, both in units of 2**-(scale + 1)
            at = _scaled(rounded, scale)
            toward = math.nextafter(rounded, math.inf if total > at else -math.inf)
            gap = abs(2 * total - at - _scaled(toward, scale))
            if gap * (1 << 104) <= 2 * sizes[j % width] ** 2 * (plus + minus):
                near.append(j)
        return out.reshape(limb_sums[0].shape), near


def _scaled(value: float, scale: int) -> int:
    """value * 2**scale as an exact integer (value a finite multiple of 2**-scale: bootstrap
    routes sums that could reach infinity to its literal loop)."""
    num, den = value.as_integer_ratio()
    return num << scale >> (den.bit_length() - 1)


def bootstrap(prob: np.ndarray, correct: np.ndarray, n_resamples: int, seed: int = 0,
              bins: int = ECE_BINS, memory_budget: int = 3_000_000
              ) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """Percentile intervals (accuracy, ECE) from the same resamples, as jevassert draws them.

    Items with equal (p, correct) are interchangeable in both statistics, so each resample
    is reduced to how many draws fell in each such group (sorted as the ECE sorts them);
    recordings round probabilities, so there are far fewer groups than items.
    """
    n = prob.shape[0]
    if n == 0 or n_resamples <= 0:
        return None, None
    if not np.isfinite(prob).all() or float(np.abs(prob).max()) * n >= 2.0**1023:  # sums may overflow
        return _bootstrap_literal(prob, correct, n_resamples, seed, bins)
    order = np.lexsort((correct, prob))
    p_sorted, c_sorted = prob[order], correct[order]
    starts = np.ones(n, dtype=bool)
    starts[1:] = (p_sorted[1:] != p_sorted[:-1]) | (c_sorted[1:] != c_sorted[:-1])
    groups = int(np.count_nonzero(starts))
    group = np.empty(n, dtype=np.int16 if groups < 2**15 else np.int32 if groups < 2**31 else np.int64)
    group[order] = np.cumsum(starts) - 1
    sums = _ExactSums(p_sorted[starts])
    g_correct = c_sorted[starts].astype(np.int64)
    k = min(bins, n)
    bounds = np.asarray([i * n // k for i in range(k + 1)], dtype=np.int64)
    sizes = np.diff(bounds)
    acc_stats = np.empty(n_resamples, dtype=np.float64)
    ece_stats = np.empty(n_resamples, dtype=np.float64)
    rows_per_block = max(1, min(n_resamples, memory_budget // max(n, groups)))
    start = 0
    for idx in resamples(n, n_resamples, seed, rows_per_block):
        rows = idx.shape[0]
        counts = np.stack([np.bincount(row, minlength=groups) for row in group[idx]])
        acc_stats[start:start + rows] = (counts @ g_correct) / n
        ece_stats[start:start + rows] = _ece_rows(counts, n, sums, g_correct, bounds, sizes)
        start += rows
    return percentile_interval(np.sort(acc_stats)), percentile_interval(np.sort(ece_stats))


def _bootstrap_literal(prob: np.ndarray, correct: np.ndarray, n_resamples: int, seed: int, bins: int
                       ) -> tuple[tuple[float, float], tuple[float, float]]:
    """jevassert's own resampling loop, item by item, for probabilities that are not all
    finite or whose sums could overflow. Only answers that break their contract carry
    those; their sums follow Python's float rules (inf, NaN), which integer sums cannot
    express. Slow: n x resamples in Python."""
    rng = random.Random(seed)
    pairs = list(zip(prob.tolist(), correct.tolist()))  # one float object per item, as jevassert has
    n = len(pairs)
    acc_stats, ece_stats = [], []
    for _ in range(n_resamples):
        sample = [pairs[rng.randrange(n)] for _ in range(n)]
        acc_stats.append(sum(1 for _, c in sample if c) / n)
        ece_stats.append(_ece_of_sorted(sorted(sample), bins))
    # Python's sort, NaN included
    return percentile_interval(sorted(acc_stats)), percentile_interval(sorted(ece_stats))


def _ece_rows(counts: np.ndarray, n: int, sums: _ExactSums, g_correct: np.ndarray,
              bounds: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """ECE of each resample in a block, from its draw counts per (p, correct) group.

    A resample sorted by (p, correct) is the groups in order, each repeated by its count;
    bin i covers sorted positions [bounds[i], bounds[i+1]). g is the group holding each
    boundary and `partial` how many of its copies fall before it, so a prefix sum up to a
    boundary is exact in integers: the full groups before g plus `partial` copies of g.
    """
    rows, groups = counts.shape
    offsets = np.arange(rows, dtype=np.int64)[:, None]
    cum = np.cumsum(counts, axis=1)
    # first group whose cumulative count reaches each boundary, searched row by row at once
    lifted = (cum + offsets * (n + 1)).ravel()
    targets = (bounds[None, :] + offsets * (n + 1))
    g = np.searchsorted(lifted, targets.ravel(), side="left").reshape(rows, -1)
    g = np.minimum(g, offsets * groups + (groups - 1))
    row_start = offsets * groups
    has_prev = g > row_start
    flat_cum = cum.ravel()
    prev_cum = np.where(has_prev, flat_cum[np.maximum(g - 1, 0)], 0)
    partial = bounds[None, :] - prev_cum  # copies of group g taken before the boundary
    group_at = g - row_start

    def prefix(weights: np.ndarray) -> np.ndarray:
        run = np.cumsum(counts * weights[None, :], axis=1).ravel()
        before = np.where(has_prev, run[np.maximum(g - 1, 0)], 0)
        out: np.ndarray = before + partial * weights[group_at]
        return out

    limb_bins = [np.diff(prefix(limb), axis=1) for limb in sums.limbs]
    correct_bins = np.diff(prefix(g_correct), axis=1)
    sum_p, near = sums.to_float(limb_bins, sizes.tolist())
    for j in near:  # rare: add this bin's probabilities up as Python's sum() would, in order
        row, i = divmod(j, sizes.shape[0])
        sequence = np.repeat(sums.values, counts[row])[bounds[i]:bounds[i + 1]]
        sum_p[row, i] = py_sum(sequence.tolist())
    total = np.zeros(rows, dtype=np.float64)
    for i, size in enumerate(sizes.tolist()):
        mean_p = sum_p[:, i] / size
        mean_c = correct_bins[:, i] / size
        total = total + size / n * np.abs(mean_p - mean_c)
    return total
