"""The statistics of a flip report (stats.py), each against an independent computation: the exact
McNemar p-value against scipy's binomial test, the paired bootstrap over cases against a plain
loop (tests/reference.py), the exact power against an enumeration of every outcome and against
seeded simulations (of independent items, and of cases whose items flip together)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import reference
from scipy.stats import binomtest, chi2

from pytest_jev.stats import (
    case_pairs,
    cases_needed,
    design_effect,
    detectable_difference,
    effective_pairs,
    mcnemar_exact,
    mcnemar_power,
    pair_counts,
    paired_bootstrap,
)


@pytest.mark.parametrize(("b", "c"), [(0, 0), (1, 0), (3, 9), (14, 31), (31, 14), (50, 50), (51, 50), (207, 265),
                                      (246, 398), (0, 12), (1000, 900)])
def test_mcnemar_is_scipys_two_sided_binomial_test_on_the_discordant_items(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else binomtest(min(b, c), b + c, 0.5, alternative="two-sided").pvalue
    assert mcnemar_exact(b, c) == pytest.approx(min(1.0, expected), abs=1e-12)


# -- the paired bootstrap ----------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 7])
def test_paired_bootstrap_resamples_cases_exactly_as_a_plain_loop_does(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = rng.integers(1, 4, size=137).tolist()
    gained = [int(rng.integers(-m, m + 1)) for m in items]
    assert paired_bootstrap(gained, items, 400, seed) == reference.paired_bootstrap(gained, items, 400, seed)


def test_paired_bootstrap_is_reproducible_and_moves_with_the_seed() -> None:
    items = [3] * 200
    gained = [(i % 7) - 3 for i in range(200)]
    first = paired_bootstrap(gained, items, 500, 0)
    assert first == paired_bootstrap(gained, items, 500, 0)
    assert first != paired_bootstrap(gained, items, 500, 1)


def test_paired_bootstrap_resamples_cases_not_items() -> None:
    """Cases whose items always flip together: the interval over cases is wider than one that
    treats the same items as independent (each its own case)."""
    gained = [3, -3, 3, 0, 0, 3, -3, 0, 3, 0] * 20  # every case's 3 items move together
    by_case = paired_bootstrap(gained, [3] * len(gained), 1000, 0)
    flat = [g // 3 for g in gained for _ in range(3)]
    by_item = paired_bootstrap(flat, [1] * len(flat), 1000, 0)
    assert by_case is not None and by_item is not None
    assert by_case[1] - by_case[0] > 1.4 * (by_item[1] - by_item[0])


def test_paired_bootstrap_without_cases_or_resamples_is_none() -> None:
    assert paired_bootstrap([], [], 1000, 0) is None
    assert paired_bootstrap([1], [1], 0, 0) is None
    with pytest.raises(ValueError):
        paired_bootstrap([0], [0], 10, 0)


# -- power -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("n", "discordance", "difference"), [(30, 0.4, 0.2), (50, 0.3, 0.1), (60, 0.5, 0.0),
                                                              (25, 0.9, 0.5), (40, 0.2, 0.2)])
def test_exact_power_is_the_enumerated_probability_of_a_scipy_rejection(n: int, discordance: float,
                                                                        difference: float) -> None:
    def p_value(b: int, c: int) -> float:
        return 1.0 if b + c == 0 else binomtest(min(b, c), b + c, 0.5).pvalue

    expected = reference.mcnemar_power_by_enumeration(n, discordance, difference, p_value)
    assert mcnemar_power(n, discordance, difference) == pytest.approx(expected, abs=1e-9)
    assert mcnemar_power(n, discordance, -difference) == mcnemar_power(n, discordance, difference)


def _rejection_rate(counts: np.ndarray) -> float:
    """Share of simulated (b, c) outcomes scipy's exact binomial test rejects at 0.05 (cached:
    the same counts come up again and again)."""
    seen: dict[tuple[int, int], bool] = {}
    rejected = 0
    for b, c in counts.tolist():
        key = (min(b, c), b + c)
        if key not in seen:
            seen[key] = key[1] > 0 and binomtest(key[0], key[1], 0.5).pvalue < 0.05
        rejected += seen[key]
    return rejected / len(counts)


@pytest.mark.parametrize(("n", "discordance"), [(500, 0.35), (200, 0.5), (1500, 0.15)])
def test_the_detectable_difference_is_found_80_percent_of_the_time_in_a_seeded_simulation(
        n: int, discordance: float) -> None:
    difference = detectable_difference(n, discordance)
    assert difference is not None and 0 < difference < discordance
    rng = np.random.default_rng(20)
    runs = 4000  # standard error of a simulated 0.8: 0.0063
    counts = rng.multinomial(n, [(discordance - difference) / 2, (discordance + difference) / 2,
                                 1 - discordance], size=runs)[:, :2]
    assert abs(_rejection_rate(counts) - 0.80) < 0.025
    assert 0.80 <= mcnemar_power(n, discordance, difference) < 0.8001  # the smallest reaching 80%
    assert mcnemar_power(n, discordance, difference * 0.9) < 0.80  # and no smaller difference is


def test_a_pack_too_small_for_any_difference_says_so() -> None:
    assert detectable_difference(5, 0.2) is None
    assert detectable_difference(0, 0.3) is None and mcnemar_power(0, 0.3, 0.1) == 0.0
    with pytest.raises(ValueError):
        mcnemar_power(100, 0.1, 0.2)  # a difference larger than the discordance cannot happen


def test_design_effect_is_durkalskis_variance_ratio() -> None:
    assert design_effect([(1, 0), (0, 1), (0, 0)]) == 1.0  # one item per case: no clustering
    assert design_effect([(3, 0), (0, 3)]) == 3.0  # three items that always flip together
    assert design_effect([(1, 1), (1, 1)]) == 1.0  # floored at 1: never worth more than its items
    assert design_effect([]) == 1.0
    assert effective_pairs(400, 3, 1.5) == 800


def test_case_pairs_are_pair_counts_case_by_case() -> None:
    first = {"x": "10-", "y": "01", "z": "11"}
    second = {"x": "011", "y": "-1", "w": "00"}
    assert case_pairs(first, second) == [(1, 1, 2), (0, 0, 1)]
    assert pair_counts(first, second) == (1, 1, 3)


def test_power_over_cases_holds_for_items_that_flip_together_in_a_seeded_simulation() -> None:
    """Cases of three items; with probability 0.3 all three take one discordance draw. The
    design effect from a pilot sample gives the effective items; at the detectable difference
    they give, Durkalski et al.'s McNemar test for clustered data (chi-square, 1 df) rejects
    about 80% of the time. It is asymptotic, a little less conservative than the exact test."""
    rng = np.random.default_rng(3)
    m, discordance, together = 3, 0.3, 0.3

    def cases(n: int, difference: float, runs: int) -> tuple[np.ndarray, np.ndarray]:
        p = [(discordance - difference) / 2, (discordance + difference) / 2, 1 - discordance]
        shared = rng.random((runs, n)) < together
        one = rng.choice(3, size=(runs, n, 1), p=p)
        each = rng.choice(3, size=(runs, n, m), p=p)
        draws = np.where(shared[..., None], one, each)
        return (draws == 0).sum(axis=2), (draws == 1).sum(axis=2)

    worse, better = cases(20_000, 0.0, 1)
    deff = design_effect(list(zip(worse[0].tolist(), better[0].tolist())))
    assert deff == pytest.approx(1 + (m - 1) * together, abs=0.1)  # Kish's 1 + (m - 1) rho
    n_cases = 400
    difference = detectable_difference(effective_pairs(n_cases, m, deff), discordance)
    assert difference is not None
    worse, better = cases(n_cases, difference, 3000)
    spread = ((worse - better) ** 2).sum(axis=1)
    statistic = (worse.sum(axis=1) - better.sum(axis=1)) ** 2 / np.maximum(spread, 1)
    rejected = float(np.mean(chi2.sf(statistic, 1) < 0.05))
    assert abs(rejected - 0.80) < 0.05
    # treating the same items as independent would promise a smaller difference than the pack can see
    naive = detectable_difference(n_cases * m, discordance)
    assert naive is not None and naive < difference * 0.85


def test_cases_needed_is_the_first_size_whose_power_reaches_80_percent() -> None:
    n = cases_needed(0.05, 0.3, 3, 1.2)
    assert n is not None
    reach = mcnemar_power(effective_pairs(n, 3, 1.2), 0.3, 0.05)
    below = mcnemar_power(effective_pairs(n - 1, 3, 1.2), 0.3, 0.05)
    assert reach >= 0.80 > below
    # and the round trip: a pack of that size detects about that difference
    found = detectable_difference(effective_pairs(n, 3, 1.2), 0.3)
    assert found is not None and math.isclose(found, 0.05, abs_tol=0.002)
    assert cases_needed(0.0, 0.3, 3, 1.0) is None and cases_needed(0.4, 0.3, 3, 1.0) is None


def test_the_scoreboards_power_of_each_committed_pack_is_its_pairs_discordance_and_design_effect() -> None:
    """Recomputed from the committed results files' per-case marks in plain Python: the share of
    items the two embedded backends answer differently, and Durkalski's variance ratio."""
    import json
    from pathlib import Path

    from pytest_jev.registry.board import build

    root = Path(__file__).resolve().parents[1]
    board = build(root)
    checked = 0
    for pack in board.packs:
        for split in pack.splits:
            ranked = [c for c in split.columns if c.group == "ranked"]
            if len(ranked) != 2 or split.power is None:
                continue
            name = f"{pack.id}.{split.split}.json" if split.split else f"{pack.id}.json"
            marks = [json.loads((root / "results" / c.backend.folder / name).read_text())["detail"]["correct"]
                     for c in ranked]
            discordant = paired = spread = 0
            for case, first in marks[0].items():
                diff = 0
                for x, y in zip(first, marks[1][case]):
                    if x in "01" and y in "01":
                        paired += 1
                        if x != y:
                            discordant += 1
                            diff += 1 if x == "1" else -1
                spread += diff * diff
            power = split.power
            assert power.discordance == pytest.approx(discordant / paired, abs=1e-12)
            assert power.design_effect == pytest.approx(max(1.0, spread / discordant), abs=1e-12)
            n_items = split.n_cases * len(pack.questions)
            assert power.effective_items == int(n_items / power.design_effect + 1e-9)
            assert power.detectable_difference == detectable_difference(power.effective_items, power.discordance)
            checked += 1
    assert checked == 9  # 7 packs, editorial-review's two splits and semantic-drift's held-out one


@pytest.mark.parametrize(("n", "discordance", "connor_says"), [(68, 0.456, 0.84), (300, 0.35, 0.82)])
def test_connors_formula_claims_more_power_than_the_exact_test_has(n: int, discordance: float,
                                                                   connor_says: float) -> None:
    """Why the power is exact (METHODOLOGY.md): Connor's (1987) normal approximation, at the
    difference the exact test finds 80% of the time, claims more."""
    from statistics import NormalDist

    difference = detectable_difference(n, discordance)
    assert difference is not None
    z = NormalDist().inv_cdf(0.975)
    connor = NormalDist().cdf((difference * math.sqrt(n) - z * math.sqrt(discordance))
                              / math.sqrt(discordance - difference**2))
    assert round(connor, 2) == connor_says and mcnemar_power(n, discordance, difference) < connor
