"""What the registry shows beyond jevassert's numbers, computed once per run from its graded
items as a Detail (formats/run_json.py: its JSON travels from xdist workers and into
results/<backend>/<pack>.json):

- `reliability`: 10 equal-width bins of decision probability, each with its count, mean
  probability and accuracy (the reliability diagram);
- `curve`: coverage and precision when accepting items at p >= t, t = 0.50 ... 0.99
  (the coverage-precision curve);
- `locales`: accuracy per locale with its Wilson 95% interval, for packs whose cases carry one;
- `correct`: per case, one character per question in pack order (`1` right, `0` wrong,
  `-` no usable answer), so two backends can be paired item by item (McNemar) without the
  recordings.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .formats.run_json import CurvePoint, Detail, LocaleNumbers, ReliabilityBin
from .grade import Items
from .metrics import coverage_rows, suggest_threshold
from .packs.model import Case, Pack
from .stats import wilson

BINS = 10
CURVE = tuple(step / 100 for step in range(50, 100))


def reliability(prob: np.ndarray, correct: np.ndarray, bins: int = BINS) -> list[ReliabilityBin]:
    """Equal-width bins over [0, 1] (p = 1.0 falls in the last); empty bins are left out."""
    index = np.minimum((prob * bins).astype(np.int64), bins - 1) if prob.size else prob.astype(np.int64)
    out = []
    for b in range(bins):
        mask = index == b
        n = int(mask.sum())
        if n:
            out.append(ReliabilityBin(b / bins, (b + 1) / bins, n, float(prob[mask].mean()),
                                      float(correct[mask].mean())))
    return out


def curve(prob: np.ndarray, correct: np.ndarray, thresholds: Sequence[float] = CURVE) -> list[CurvePoint]:
    """Coverage (share of items with p >= t) and precision (accuracy among them) at each t."""
    return [CurvePoint(t, c, pr) for t, c, pr in coverage_rows(prob, correct, tuple(thresholds))]


def item_locales(cases: Sequence[Case], items: Items) -> np.ndarray | None:
    """Each item's locale (`all` for a case without one); None when no case has a locale."""
    if not any(case.locale for case in cases):
        return None
    case_locale = np.asarray([case.locale or "all" for case in cases], dtype=object)
    return case_locale[items.case] if items.n else np.asarray([], dtype=object)


def locales(cases: Sequence[Case], items: Items) -> dict[str, LocaleNumbers]:
    """Accuracy per locale (items of cases without one count as `all`), when any case has one."""
    item_locale = item_locales(cases, items)
    if item_locale is None:
        return {}
    out = {}
    for locale in sorted({case.locale or "all" for case in cases}):
        mask = item_locale == locale
        n, k = int(mask.sum()), int(items.correct[mask].sum())
        ci = wilson(k, n)
        out[locale] = LocaleNumbers(n, k, k / n if n else None, ci,
                                    sum(1 for case in cases if (case.locale or "all") == locale))
    return out


def locale_suggestions(cases: Sequence[Case], items: Items, target: float
                       ) -> dict[str, tuple[float, float, float, int] | None]:
    """--jev-target-precision's suggestion (metrics.suggest_threshold) per locale, for a pack whose
    cases carry one: a threshold never pools locales, as the protocol's never does."""
    item_locale = item_locales(cases, items)
    if item_locale is None:
        return {}
    return {locale: suggest_threshold(items.prob[item_locale == locale], items.correct[item_locale == locale], target)
            for locale in sorted({case.locale or "all" for case in cases})}


def correct_strings(pack: Pack, cases: Sequence[Case], items: Items) -> dict[str, str]:
    """Case id -> one character per pack question: 1 right, 0 wrong, - no usable answer."""
    qids = items.qids
    grid = np.full((len(cases), len(qids)), ord("-"), dtype=np.uint8)
    if items.n:
        grid[items.case, items.question] = np.where(items.correct, ord("1"), ord("0"))
    order = [qids.index(qid) for qid in pack.questions]
    return {case.id: bytes(grid[k, order]).decode("ascii") for k, case in enumerate(cases)}


def run_detail(pack: Pack, cases: Sequence[Case], items: Items) -> Detail:
    return Detail(tuple(reliability(items.prob, items.correct)), tuple(curve(items.prob, items.correct)),
                  locales(cases, items), tuple(pack.questions), correct_strings(pack, cases, items))
