"""Two gradings of one pack's cases, compared item by item: the flip report (--jev-baseline).

Pure: it takes what grade.py made of each recording (the same cases, the same questions) and
returns a FlipReport (formats/flips_json.py). An item is a (case, question) both recordings
answered usably; it is both right, both wrong, fixed (baseline wrong, now right) or regressed
(baseline right, now wrong). A case only one recording has a line for is named in
`only_current` / `only_baseline`; an item only one answered usably in a case both have is
counted in `unpaired_items`: nothing is dropped without a count.

The statistics are stats.py's: the exact McNemar p-value on the discordant items, the paired
bootstrap over cases for the difference's interval, and the power of the comparison at this
size (the smallest difference it finds 80% of the time) from the discordance observed here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .formats.flips_json import FlipItem, FlipReport, Power, Side
from .grade import Graded, Items
from .packs.model import Case, Pack
from .stats import (
    ALPHA,
    DEFAULT_DISCORDANCE,
    POWER,
    design_effect,
    detectable_difference,
    effective_pairs,
    mcnemar_exact,
    paired_bootstrap,
)

STATE_EXCERPT = 120  # characters of a case's state shown beside a flipped item (as beside a mismatch)


def excerpt(state: Mapping[str, Any]) -> str:
    text = json.dumps(dict(state), ensure_ascii=False)
    return text if len(text) <= STATE_EXCERPT else text[: STATE_EXCERPT - 3] + "..."


def _positions(items: Items, n_keys: int, n_questions: int) -> np.ndarray:
    """For each (case, question) key, the index of its graded item (-1: not answered usably)."""
    pos = np.full(n_keys, -1, dtype=np.int64)
    keys = items.case.astype(np.int64) * n_questions + items.question.astype(np.int64)
    pos[keys] = np.arange(items.n, dtype=np.int64)
    return pos


def _decision(items: Items, i: int, kind: str) -> Any:
    """An item's decision as the mismatch list shows it: a boolean for a yes/no question."""
    label = items.got_label[i]
    return label == "true" if kind == "noul" else label


def compare(pack: Pack, cases: Sequence[Case], now: Graded, then: Graded, *, current: Side, baseline: Side,
            split: str = "", resamples: int = 1000, seed: int = 0, rubric: str = "") -> FlipReport:
    """The flip report of `now` (the current recording) against `then` (the baseline), both
    graded on `cases` of `pack` (grade.grade with the same cases)."""
    qids = tuple(pack.questions)
    nq = len(qids)
    n_keys = len(cases) * nq
    pos_now = _positions(now.items, n_keys, nq)
    pos_then = _positions(then.items, n_keys, nq)
    has_now = np.asarray([now.outcomes[c.id].line is not None for c in cases], dtype=bool)
    has_then = np.asarray([then.outcomes[c.id].line is not None for c in cases], dtype=bool)
    answered_now, answered_then = pos_now >= 0, pos_then >= 0
    both_cases = np.repeat(has_now & has_then, nq)
    unpaired = int(np.count_nonzero((answered_now ^ answered_then) & both_cases))
    keys = np.flatnonzero(answered_now & answered_then)
    right_now = now.items.correct[pos_now[keys]]
    right_then = then.items.correct[pos_then[keys]]
    fixed, regressed = right_now & ~right_then, ~right_now & right_then
    case_of = keys // nq
    m = np.bincount(case_of, minlength=len(cases))
    fixed_k = np.bincount(case_of, weights=fixed, minlength=len(cases)).astype(np.int64)
    regressed_k = np.bincount(case_of, weights=regressed, minlength=len(cases)).astype(np.int64)
    paired_cases = np.flatnonzero(m)
    n_items = int(keys.shape[0])
    n_fixed, n_regressed = int(np.count_nonzero(fixed)), int(np.count_nonzero(regressed))
    n_right_then = int(np.count_nonzero(right_then))
    interval = paired_bootstrap((fixed_k - regressed_k)[paired_cases].tolist(), m[paired_cases].tolist(),
                                resamples, seed)
    kinds = [pack.questions[qid].type for qid in qids]

    def flipped(mask: np.ndarray) -> tuple[FlipItem, ...]:
        out = []
        for key in keys[mask].tolist():
            case, qi = cases[key // nq], key % nq
            i, j = int(pos_then[key]), int(pos_now[key])
            out.append(FlipItem(case.id, qids[qi], case.expect[qids[qi]], _decision(then.items, i, kinds[qi]),
                                float(then.items.prob[i]), _decision(now.items, j, kinds[qi]),
                                float(now.items.prob[j]), excerpt(case.state)))
        return tuple(out)

    return FlipReport(
        pack=pack.id, version=pack.version, split=split, rubric=rubric, current=current, baseline=baseline,
        items=n_items, both_right=int(np.count_nonzero(right_now & right_then)),
        both_wrong=int(np.count_nonzero(~right_now & ~right_then)), fixed=n_fixed, regressed=n_regressed,
        regression_rate=n_regressed / n_right_then if n_right_then else None,
        current_accuracy=float(np.count_nonzero(right_now)) / n_items if n_items else None,
        baseline_accuracy=n_right_then / n_items if n_items else None,
        accuracy_delta=(n_fixed - n_regressed) / n_items if n_items else None, accuracy_delta_ci=interval,
        bootstrap_resamples=resamples, seed=seed, mcnemar_p=mcnemar_exact(n_regressed, n_fixed),
        only_current=tuple(c.id for c, a, b in zip(cases, has_now, has_then) if a and not b),
        only_baseline=tuple(c.id for c, a, b in zip(cases, has_now, has_then) if b and not a),
        unpaired_items=unpaired,
        power=observed_power(len(paired_cases), n_items, list(zip(fixed_k[paired_cases].tolist(),
                                                                   regressed_k[paired_cases].tolist()))),
        regressed_items=flipped(regressed), fixed_items=flipped(fixed))


def observed_power(cases: int, items: int, per_case: Sequence[tuple[int, int]]) -> Power:
    """The comparison's power from its own discordance: (fixed, regressed) of each paired case."""
    discordant = sum(f + r for f, r in per_case)
    discordance = discordant / items if items else 0.0
    deff = design_effect(per_case)
    per = items / cases if cases else 0.0
    effective = effective_pairs(cases, per, deff)
    return Power(cases=cases, items_per_case=per, discordance=discordance, design_effect=deff,
                 effective_items=effective,
                 detectable_difference=detectable_difference(effective, discordance) if discordant else None,
                 power=POWER, alpha=ALPHA, source="observed")


def pack_power(cases: int, items_per_case: float, pairs: Sequence[Sequence[tuple[int, int, int]]]) -> Power:
    """What a pack of `cases` cases of `items_per_case` items can find, from the discordance
    observed between its recorded backends: `pairs` holds, for each pair of backends, the
    (b, c, n) of each case both answered (stats.case_pairs). With several pairs the discordance
    and the design effect are their means; with none (one backend recorded) the discordance is
    DEFAULT_DISCORDANCE and the items are taken as independent (design effect 1), `source`
    "default"."""
    used = [pair for pair in pairs if sum(n for _, _, n in pair)]
    if used:
        discordance = sum(sum(b + c for b, c, _ in p) / sum(n for _, _, n in p) for p in used) / len(used)
        deff = sum(design_effect([(b, c) for b, c, _ in p]) for p in used) / len(used)
        source = "observed"
    else:
        discordance, deff, source = DEFAULT_DISCORDANCE, 1.0, "default"
    effective = effective_pairs(cases, items_per_case, deff)
    return Power(cases=cases, items_per_case=items_per_case, discordance=discordance, design_effect=deff,
                 effective_items=effective,
                 detectable_difference=detectable_difference(effective, discordance) if discordance else None,
                 power=POWER, alpha=ALPHA, source=source)
