"""Selective metrics of one question over a set of samples, at a decision threshold.

A sample is *decided* at threshold t when it got a usable answer that is not `unknown`
and whose decision probability reaches t (a yes/no question cuts symmetrically: true at
p >= t, false at p <= 1 - t, abstain between; that is the decision probability max(p, 1-p)
reaching t). A failed call and an `unknown` answer are abstentions. Coverage is decided
over all samples; selective precision is correct over decided; per-label recall counts
every abstained or failed sample of that gold label as a miss. Brier and ECE (10
equal-width bins) read the answered samples. Every rate carries its Wilson interval.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..formats.protocol_json import TunedThreshold
from ..packs.model import ABSTAIN
from ..stats import brier_multiclass, ece_equal_width, nearest_rank, rate
from .samples import Answered, Sample

GRID = tuple(step / 100 for step in range(50, 100))  # 0.50 ... 0.99
NEVER = math.inf  # the threshold of a question whose tuning reached no target: it decides nothing


def decided(answer: Answered | None, threshold: float | None) -> bool:
    if answer is None or answer.decision == ABSTAIN:
        return False
    return threshold is None or answer.probability >= threshold


def metrics(samples: Sequence[Sample], qid: str, qtype: str, labels: Sequence[str], threshold: float | None,
            price: tuple[float | None, float | None] = (None, None)) -> dict[str, Any]:
    """Everything the protocol reports for one question over `samples` at `threshold` (None: no cut)."""
    answers = [s.answers.get(qid) for s in samples]
    answered = [a for a in answers if a is not None]
    taken = [a for a in answers if decided(a, threshold)]
    correct = sum(1 for a in taken if a is not None and a.correct)
    failures = Counter(s.error for s in samples if s.error is not None)
    failures.update("unusable answer" for s, a in zip(samples, answers) if s.error is None and a is None)
    out: dict[str, Any] = {
        "threshold": threshold if threshold is None or math.isfinite(threshold) else None,
        "rule": ("no cut: every usable answer but unknown is decided" if threshold is None else
                 "abstain: no threshold reached the target precision on the tune split" if threshold == NEVER else
                 "decided at p >= threshold"),
        "samples": {"total": len(samples), "answered": len(answered), "decided": len(taken),
                    "failed": sum(failures.values()),
                    "unknown_answers": sum(1 for a in answered if a.decision == ABSTAIN)},
        "coverage": rate(len(taken), len(samples)),
        "selective_precision": rate(correct, len(taken)),
        "per_label": _per_label(samples, qid, answers, labels, threshold),
        "brier": brier_multiclass([a.probabilities for a in answered], [a.gold for a in answered]),
        "ece_10_equal_width": ece_equal_width([a.probability for a in answered], [a.correct for a in answered]),
        "failures_by_code": dict(sorted(failures.items())),
        "latency_ms": _latency(samples),
        "tokens": _tokens(samples),
        "cost_usd": _cost(samples, price),
    }
    if qtype == "noul":
        out["outcomes"] = _outcomes(samples, answers, threshold)
        out["flagged_true"] = rate(sum(1 for a in taken if a is not None and a.decision == "true"), len(samples))
    return out


def _per_label(samples: Sequence[Sample], qid: str, answers: Sequence[Answered | None], labels: Sequence[str],
               threshold: float | None) -> dict[str, Any]:
    out = {}
    for label in labels:
        if label == ABSTAIN:
            continue
        said = [a for a in answers if decided(a, threshold) and a is not None and a.decision == label]
        hits = sum(1 for a in said if a.gold == label)
        gold = sum(1 for s in samples if s.gold[qid] == label)
        out[label] = {"precision": rate(hits, len(said)), "recall": rate(hits, gold)}
    return out


def _outcomes(samples: Sequence[Sample], answers: Sequence[Answered | None], threshold: float | None) -> dict[str, int]:
    """Counts of a yes/no question's outcomes; a failed call is never counted as a clean "no"."""
    counts = Counter[str]()
    for sample, answer in zip(samples, answers):
        if sample.error is not None or answer is None:
            counts["failed"] += 1
        elif not decided(answer, threshold):
            counts["abstained"] += 1
        else:
            said, gold = answer.decision == "true", answer.gold == "true"
            counts[("tp" if gold else "fp") if said else ("fn" if gold else "tn")] += 1
    return {key: counts[key] for key in ("tp", "fp", "tn", "fn", "abstained", "failed")}


def _latency(samples: Sequence[Sample]) -> dict[str, float | None]:
    values = [s.latency_ms for s in samples if s.latency_ms is not None]
    return {"p50": nearest_rank(values, 50), "p95": nearest_rank(values, 95)}


def _tokens(samples: Sequence[Sample]) -> dict[str, int | None]:
    seen = [s for s in samples if s.input_tokens is not None]
    return {"input": sum(s.input_tokens or 0 for s in seen) if seen else None,
            "output": sum(s.output_tokens or 0 for s in seen) if seen else None}


def _cost(samples: Sequence[Sample], price: tuple[float | None, float | None]) -> float | None:
    """USD of the calls, only when every successful call reported its usage and prices are known."""
    succeeded = [s for s in samples if s.error is None]
    if not succeeded or any(s.input_tokens is None for s in succeeded) or None in price:
        return None
    price_in, price_out = price
    assert price_in is not None and price_out is not None
    tokens_in = sum(s.input_tokens or 0 for s in samples)
    tokens_out = sum(s.output_tokens or 0 for s in samples)
    return (tokens_in * price_in + tokens_out * price_out) / 1_000_000


def tune(samples: Sequence[Sample], qid: str, target: float, min_covered: int) -> TunedThreshold:
    """The lowest threshold on the grid whose selective precision reaches `target` with at least
    `min_covered` decided samples; null with status target-not-reached when none does."""
    answers = [s.answers.get(qid) for s in samples]
    for t in GRID:
        taken = [a for a in answers if decided(a, t)]
        if len(taken) < min_covered:
            continue
        correct = sum(1 for a in taken if a is not None and a.correct)
        if correct / len(taken) >= target:
            return TunedThreshold(t, "ok", len(taken), correct / len(taken), len(taken) / len(samples))
    return TunedThreshold(None, "target-not-reached", 0, None, None)
