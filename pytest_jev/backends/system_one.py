"""System One answer shapes built from probabilities, shared by the embedded and LLM backends.

Jev computes its own fields; every other backend goes through these helpers so
that choice/score answers carry the same derived fields whichever model
produced the distribution (wire-contract §1.3 for the shapes, §2 for the
confidence formulas, which are those of system-one-adapter).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

PLACES = 4  # stored probabilities: 4 decimals, so recordings do not churn on float noise


class BadQuestion(ValueError):
    """A question this backend cannot ask (e.g. a choice with fewer than two options)."""


def labels_of(question: Mapping[str, Any]) -> list[str]:
    """The keys of a choice/score answer's probabilities: option labels, or "0".."n-1" for levels."""
    kind = question.get("type")
    criteria = question.get("criteria")
    if kind == "choice":
        if not isinstance(criteria, Mapping) or len(criteria) < 2:
            raise BadQuestion("a choice question needs criteria with at least 2 options")
        return [str(label) for label in criteria]
    if kind == "score":
        if not isinstance(criteria, Sequence) or isinstance(criteria, str) or len(criteria) < 2:
            raise BadQuestion("a score question needs criteria: a list of at least 2 levels")
        return [str(i) for i in range(len(criteria))]
    if kind == "noul":
        return []
    raise BadQuestion(f"unknown question type {kind!r}")


def check_questions(questions: Mapping[str, Mapping[str, Any]]) -> None:
    """Raise BadQuestion naming the first question that cannot be asked."""
    if not questions:
        raise BadQuestion("no questions to ask")
    for qid, question in questions.items():
        try:
            labels_of(question)
        except BadQuestion as exc:
            raise BadQuestion(f"question {qid!r}: {exc}") from None


def text_of(value: Any) -> str:
    """A criterion or state value as plain text (structured values as compact JSON)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def round_distribution(probs: Sequence[float], places: int = PLACES) -> list[float]:
    """Normalise, then round to `places` decimals so that the rounded values still sum to 1.

    Largest-remainder rounding in units of 10**-places: the integer units sum to
    exactly 10**places, so the floats sum to 1 within one ulp.
    """
    total = float(sum(probs))
    if not math.isfinite(total) or total <= 0:
        raise ValueError("a distribution needs a positive finite sum")
    scale = 10 ** places
    exact = [float(p) / total * scale for p in probs]
    units = [math.floor(x) for x in exact]
    short = scale - sum(units)
    by_remainder = sorted(range(len(exact)), key=lambda i: (units[i] - exact[i], i))
    for i in by_remainder[:short]:
        units[i] += 1
    return [u / scale for u in units]


def choice_confidence(probs: Sequence[float]) -> float:
    """(p_max - 1/n) / (1 - 1/n): 0 for a uniform distribution, 1 for a certain one."""
    n = len(probs)
    return max(0.0, (max(probs) - 1 / n) / (1 - 1 / n))


def score_confidence(probs: Sequence[float]) -> float:
    """1 - (mean distance from the modal level) / (that distance under a uniform distribution), floored at 0."""
    n = len(probs)
    mode = max(range(n), key=lambda i: probs[i])
    spread = sum(p * abs(i - mode) for i, p in enumerate(probs))
    mad_uniform = sum(abs(i - (n - 1) / 2) for i in range(n)) / n
    return max(0.0, 1 - spread / mad_uniform)


def noul_answer(p_true: float) -> dict[str, Any]:
    return {"type": "noul", "noul": round(min(1.0, max(0.0, float(p_true))), PLACES)}


def choice_answer(labels: Sequence[str], probs: Sequence[float]) -> dict[str, Any]:
    """argmax label (first on ties, in the order the options were sent), confidence, probabilities."""
    p = round_distribution(probs)
    best = max(range(len(probs)), key=lambda i: probs[i])  # before rounding, which can make ties
    return {"type": "choice", "choice": labels[best], "confidence": round(choice_confidence(p), PLACES),
            "probabilities": dict(zip(labels, p))}


def score_answer(criteria: Sequence[Any], probs: Sequence[float]) -> dict[str, Any]:
    """score = sum i*p_i; legend maps "0".."n-1" back to the criteria as sent."""
    p = round_distribution(probs)
    keys = [str(i) for i in range(len(p))]
    return {"type": "score", "score": round(sum(i * x for i, x in enumerate(p)), PLACES),
            "confidence": round(score_confidence(p), PLACES),
            "legend": dict(zip(keys, criteria)), "probabilities": dict(zip(keys, p))}


def shape(question: Mapping[str, Any], probs: Sequence[float]) -> dict[str, Any]:
    """The System One answer for one question from its distribution ([P(false), P(true)] for noul)."""
    kind = question["type"]
    if kind == "noul":
        return noul_answer(probs[1] / (probs[0] + probs[1]))
    if kind == "choice":
        return choice_answer(labels_of(question), probs)
    return score_answer(list(question["criteria"]), probs)
