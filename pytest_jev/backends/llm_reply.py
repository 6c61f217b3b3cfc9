"""An LLM's reply read as System One answers: the JSON inside (fences stripped), every question and
allowed label present, probabilities in [0, 1] (float noise clamped), distributions normalised
and shaped (system_one.py). Every problem is listed in one Malformed, shown to the model on a
corrective retry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .system_one import labels_of, noul_answer, shape

PROBABILITY_SLACK = 1e-6  # a value this far outside [0, 1] is float noise, clamped rather than refused


class Malformed(ValueError):
    """A reply that cannot be turned into answers; the message is shown to the model on a retry."""


_FENCED = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?[ \t]*```", re.S)


def strip_fences(text: str) -> str:
    """The JSON inside the first ``` fence when there is one, else the text itself."""
    match = _FENCED.search(text)
    return match.group(1).strip() if match else text.strip()


def _probability(value: Any, where: str, errors: list[str]) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        errors.append(f"{where} must be a number between 0 and 1, got {json.dumps(value)[:40]}")
        return None
    if value < -PROBABILITY_SLACK or value > 1 + PROBABILITY_SLACK:
        errors.append(f"{where} must be between 0 and 1, got {value}")
        return None
    return min(1.0, max(0.0, float(value)))


def parse_reply(text: str | None, questions: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Answers in System One shapes plus {original_probabilities, max_error}; Malformed lists every problem."""
    if not text or not text.strip():
        raise Malformed("the reply was empty")
    try:
        doc = json.loads(strip_fences(text))
    except json.JSONDecodeError as exc:
        raise Malformed(f"the reply is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("answers"), dict):
        raise Malformed('the reply must be one JSON object of the form {"answers": {...}}')
    given = doc["answers"]
    errors: list[str] = []
    _key_problems("answers", list(questions), given, "that are not questions", errors)
    answers: dict[str, Any] = {}
    originals: dict[str, dict[str, float]] = {}
    max_error = 0.0
    for qid, question in questions.items():
        if qid not in given:
            continue
        if question["type"] == "noul":
            p = _probability(given[qid], f"answers.{qid}", errors)
            if p is not None:
                answers[qid] = noul_answer(p)
            continue
        dist = _distribution(qid, question, given[qid], errors)
        if dist is None:
            continue
        total = sum(dist.values())
        max_error = max(max_error, abs(total - 1))
        if abs(total - 1) > 1e-9:
            originals[qid] = dist
        answers[qid] = shape(question, list(dist.values()))
    if errors:
        raise Malformed("; ".join(errors))
    return answers, {"original_probabilities": originals, "max_error": round(max_error, 6)}


def _key_problems(where: str, wanted: list[str], given: Mapping[str, Any], extra_means: str,
                  errors: list[str]) -> None:
    """Report keys missing from `given` and keys it has beyond `wanted`."""
    absent = [key for key in wanted if key not in given]
    extra = [key for key in given if key not in wanted]
    if absent:
        errors.append(f"{where} is missing {', '.join(map(repr, absent))}")
    if extra:
        errors.append(f"{where} has keys {extra_means}: {', '.join(map(repr, extra))}")


def _distribution(qid: str, question: Mapping[str, Any], value: Any, errors: list[str]) -> dict[str, float] | None:
    labels = labels_of(question)
    if not isinstance(value, dict):
        errors.append(f"answers.{qid} must be an object with the keys {', '.join(map(repr, labels))}")
        return None
    bad = len(errors)
    _key_problems(f"answers.{qid}", labels, value, "that are not allowed", errors)
    dist = {label: _probability(value[label], f"answers.{qid}.{label}", errors)
            for label in labels if label in value}
    if len(errors) > bad:
        return None
    if sum(dist.values()) <= 0:  # type: ignore[arg-type]
        errors.append(f"answers.{qid}: the probabilities sum to 0")
        return None
    return dist  # type: ignore[return-value]
