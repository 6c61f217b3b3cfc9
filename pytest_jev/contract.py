"""The answer contract, written once: what a valid answer to one typed question is.

The grader (a case item fails when its answer breaks the contract) and the recorder (an
answer that breaks it is recorded as an error, so the next --jev-record asks again) both
call `problems()`, so a line the recorder keeps is a line replay accepts, and the other
way round. SPEC.md states the same rules:

- the answer is an object whose `type` is the question's type;
- noul: `noul` is a number in [0, 1] (a JSON boolean is not a probability);
- choice and score: `probabilities` is a non-empty object whose keys are declared
  (option labels; level indices "0".."n-1" for a score), whose values are numbers in
  [0, 1] summing to 1 within rounding: |sum - 1| <= min(0.1, max(0.01, 0.005 x number of
  keys)) (`sum_tolerance`);
- choice: a `choice` field, when present, names a declared option (a string: a list or an
  object there is a broken answer, not a crash).

`confidence`, `score` and `legend` are not read by grading, so they are not part of it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_NUMBERS = (int, float)  # exact types: JSON booleans are not probabilities
_NUMBER_TYPES = frozenset(_NUMBERS)


@dataclass(frozen=True, slots=True)
class AnswerSpec:
    """What an answer to one question may hold: its type and the keys of its probabilities."""

    qid: str
    type: str  # noul | choice | score
    keys: tuple[str, ...] = ()  # choice: option labels; score: "0".."n-1"; noul: none
    key_set: frozenset[str] = frozenset()

    @classmethod
    def make(cls, qid: str, kind: str, keys: Sequence[str] = ()) -> AnswerSpec:
        return cls(qid, kind, tuple(keys), frozenset(keys))

    @classmethod
    def of_sent(cls, qid: str, question: Mapping[str, Any]) -> AnswerSpec:
        """From a question as a System One request carries it (`criteria` a map or a list)."""
        kind = str(question.get("type"))
        criteria = question.get("criteria")
        if kind == "choice" and isinstance(criteria, Mapping):
            return cls.make(qid, kind, [str(k) for k in criteria])
        if kind == "score" and isinstance(criteria, Sequence) and not isinstance(criteria, str):
            return cls.make(qid, kind, [str(i) for i in range(len(criteria))])
        return cls.make(qid, kind)


def specs_of(questions: Mapping[str, Mapping[str, Any]]) -> dict[str, AnswerSpec]:
    """The contract of each question of a request, as it was sent."""
    return {qid: AnswerSpec.of_sent(qid, q) for qid, q in questions.items()}


def problems(spec: AnswerSpec, answer: Any) -> list[str]:
    """Why `answer` breaks its question's contract; empty when it honours it."""
    qid = spec.qid
    if not isinstance(answer, dict):
        return [f"{qid}: no answer" if answer is None else f"{qid}: answer is not an object"]
    kind = answer.get("type")
    if kind != spec.type:
        return [f"{qid}: answer type {_shown(kind)} but the question is {spec.type}"]
    if spec.type == "noul":
        p = answer.get("noul")
        if not isinstance(p, _NUMBERS) or isinstance(p, bool):
            return [f"{qid}: noul must be a probability, got {_shown(p)}"]
        return [] if 0.0 <= p <= 1.0 else [f"{qid}: noul {_shown(p)} outside [0, 1]"]
    probs = answer.get("probabilities")
    if not isinstance(probs, dict) or not probs:
        return [f"{qid}: {spec.type} answer has no probabilities"]
    out = []
    if not spec.key_set.issuperset(probs):
        strays = [k for k in probs if k not in spec.key_set]
        out.append(f"{qid}: undeclared label(s) {strays[:3]} (allowed: {list(spec.keys)})")
    values = list(probs.values())
    total = _fsum(values)  # NaN unless every value is an int or a float
    # a NaN value makes the total NaN, and NaN fails every comparison; min/max run at C speed
    if not (total == total and 0.0 <= min(values) and max(values) <= 1.0):
        out.append(f"{qid}: probabilities must be numbers in [0, 1]")
    elif abs(total - 1.0) > sum_tolerance(len(values)):
        out.append(f"{qid}: probabilities sum to {total:.4f}, not 1")
    if spec.type == "choice" and "choice" in answer:
        choice = answer["choice"]
        if not isinstance(choice, str) or choice not in spec.key_set:  # a list is no label (and unhashable)
            out.append(f"{qid}: choice {_shown(choice)} is not a declared option")
    return out


SUM_TOLERANCE_CAP = 0.1


def sum_tolerance(n_values: int) -> float:
    """How far from 1 a distribution over n labels may sum: providers round each value.

    Rounded to two decimals (what System One sends), each value may be off by 0.005, so the
    tolerance grows by 0.005 a label, from 0.01, up to 0.1 (reached at 20 labels): no rounding
    explains a distribution off by more than a tenth (500 labels summing to 3.4 are not one).
    jevassert checks no sum (its decision takes the largest probability), so an answer refused
    here is graded as jevassert grades it and only its case item fails (SPEC.md)."""
    return min(SUM_TOLERANCE_CAP, max(0.01, 0.005 * n_values)) + 1e-9


def answers_problems(specs: Mapping[str, AnswerSpec], answers: Any) -> list[str]:
    """Every contract problem of a whole answers object against the questions asked."""
    if not isinstance(answers, dict):
        return ["answers is not an object"]
    out: list[str] = []
    for qid, spec in specs.items():
        out.extend(problems(spec, answers.get(qid)))
    return out


def _fsum(values: list[Any]) -> float:
    if not _NUMBER_TYPES.issuperset(map(type, values)):
        return math.nan
    try:
        return math.fsum(values)
    except OverflowError:  # a huge integer: not a probability anyway
        return math.nan


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
