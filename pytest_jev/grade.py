"""Grade a recording against a pack's cases: per-case outcomes plus the item arrays metrics need.

Two separate readings of each answer, on purpose:
- the *decision* (jevassert 0.2.1's rules, see "How answers are graded" in SPEC.md):
  what the metrics count, so numbers match jevassert to the digit;
- the *contract* (contract.py, shared with the recorder): what a case item asserts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .contract import AnswerSpec, problems
from .packs.model import Case, Pack, Question
from .recording_file import Recording
from .rubric import StateWitness
from .wire import state_fingerprint

OK, MISMATCH, INVALID, ERROR, STALE = "ok", "mismatch", "invalid", "error", "stale"
STALE_PROBLEM = "stale: its state changed after this line was recorded"


@dataclass(frozen=True, slots=True)
class Miss:
    """One answered question whose decision differs from the gold label."""

    question: str
    expected: Any
    got: Any
    probability: float


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    case_id: str
    status: str  # ok | mismatch | invalid | error | stale (an answer to a state the case no longer has)
    problems: tuple[str, ...] = ()  # contract breaches (invalid), the error (error), why it is stale
    misses: tuple[Miss, ...] = ()
    line: int | None = None  # the case's line in the recording (None: not in it)


@dataclass(frozen=True)
class Items:
    """Graded items in jevassert order: cases in file order, questions in each line's order."""

    question: np.ndarray  # int16 index into `qids`
    case: np.ndarray  # int32 index of the item's case in the graded cases (per locale, paired tests)
    correct: np.ndarray  # bool
    prob: np.ndarray  # float64 decision probability
    got_true: np.ndarray  # bool: the noul decision (False for other types)
    gold_true: np.ndarray  # bool: the noul gold label (False for other types)
    got_label: list[str]  # the answered label ("true"/"false" for noul), for author thresholds
    qids: tuple[str, ...]
    case_errors: int
    missing: int
    missing_by_question: dict[str, int] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.prob.shape[0])


@dataclass(frozen=True)
class Graded:
    outcomes: Mapping[str, CaseOutcome]  # case id -> outcome, in case order
    items: Items
    unknown_case_ids: tuple[str, ...]  # in the recording but not in the pack
    state_unchecked: int = 0  # graded lines nothing ties to their case's state (jevassert's: no fingerprints)


def _float_map(raw: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(raw, dict):
        for key, value in raw.items():
            try:
                out[str(key)] = float(value)
            except (TypeError, ValueError, OverflowError):
                continue
    return out


def decide(question: Question, answer: dict[str, Any]) -> tuple[Any, float] | None:
    """jevassert's decision and decision probability, or None when unusable."""
    try:
        if question.type == "noul":
            if "noul" not in answer:
                return None
            p = float(answer["noul"])
            return p >= 0.5, max(p, 1.0 - p)
        probs = _float_map(answer.get("probabilities"))
        if not probs:
            return None
        best = max(probs, key=probs.__getitem__)
        if question.type == "choice":
            decision = answer.get("choice") or best
            return decision, probs.get(decision, max(probs.values()))
        return question.levels[int(best)], probs[best]
    except (TypeError, ValueError, IndexError, OverflowError):  # OverflowError: float(10**400)
        return None


def _decide_valid(question: Question, answer: dict[str, Any]) -> tuple[Any, float]:
    """decide() for a choice or score answer that honours its contract (numbers in [0, 1],
    declared keys): the same decision and probability without converting every value again."""
    probs = answer["probabilities"]
    best = max(probs, key=probs.__getitem__)
    if question.type == "choice":
        decision = answer.get("choice") or best
        return decision, float(probs[decision] if decision in probs else probs[best])
    return question.levels[int(best)], float(probs[best])


def answer_specs(pack: Pack) -> dict[str, AnswerSpec]:
    return {qid: q.answer_spec for qid, q in pack.questions.items()}


def grade(pack: Pack, recording: Recording, cases: Sequence[Case] | None = None) -> Graded:
    """Grade `cases` (default: every case of the pack) against the recording's lines. A line whose
    state fingerprint is not the case's state's is stale: refused, its items missing. A line
    without one (older lines of ours) is checked through its request fingerprint (StateWitness);
    one that neither can check (jevassert's) is graded and counted in `state_unchecked`."""
    cases = pack.cases if cases is None else cases
    qids = tuple(pack.questions)
    qindex = {qid: i for i, qid in enumerate(qids)}
    question = pack.questions
    specs = answer_specs(pack)
    q_list: list[int] = []
    k_list: list[int] = []
    c_list: list[bool] = []
    p_list: list[float] = []
    got_list: list[bool] = []
    gold_list: list[bool] = []
    label_list: list[str] = []
    outcomes: dict[str, CaseOutcome] = {}
    case_errors = 0
    missing = 0
    state_unchecked = 0
    items_by_q = [0] * len(qids)
    expected_by_q = [0] * len(qids)
    lines = recording.lines
    numbers = recording.line_numbers
    witness = StateWitness(pack)
    for k, case in enumerate(cases):
        for qid in case.expect:
            expected_by_q[qindex[qid]] += 1
        rec = lines.get(case.id)
        line = numbers.get(case.id)
        if rec is not None:
            recorded_state = rec.state_fingerprint
            if recorded_state is None:
                same_state = witness.verdict(rec, case)  # an older line of ours: its request fingerprint
                if same_state is None:
                    state_unchecked += 1
            else:
                same_state = recorded_state == state_fingerprint(dict(case.state))
            if same_state is False:  # refused: never graded
                case_errors += 1
                missing += len(case.expect)
                outcomes[case.id] = CaseOutcome(case.id, STALE, (STALE_PROBLEM,), line=line)
                continue
        answers = rec.answers if rec is not None else None
        if rec is None or rec.error or answers is None:
            case_errors += 1
            missing += len(case.expect)
            why = ("not in the recording" if rec is None else
                   f"recorded error: {str(rec.error)[:200]}" if rec.error else "answers is null")
            outcomes[case.id] = CaseOutcome(case.id, ERROR, (why,), line=line)
            continue
        found: list[str] = []
        misses: list[Miss] = []
        for qid, gold in case.expect.items():
            q = question[qid]
            answer = answers.get(qid)
            wrong = problems(specs[qid], answer)
            if wrong or q.type == "noul" or not isinstance(answer, dict):  # decide() reads a noul cheaply
                found.extend(wrong)
                decided = decide(q, answer) if isinstance(answer, dict) else None
            else:
                decided = _decide_valid(q, answer)
            if decided is None:
                missing += 1
                continue
            decision, prob = decided
            correct = decision == gold
            qi = qindex[qid]
            items_by_q[qi] += 1
            q_list.append(qi)
            k_list.append(k)
            c_list.append(correct)
            p_list.append(prob)
            is_noul = q.type == "noul"
            got_list.append(bool(decision) if is_noul else False)
            gold_list.append(bool(gold) if is_noul else False)
            label_list.append(("true" if decision else "false") if is_noul else str(decision))
            if not correct:
                misses.append(Miss(qid, gold, decision, prob))
        status = INVALID if found else (MISMATCH if misses else OK)
        outcomes[case.id] = CaseOutcome(case.id, status, tuple(found), tuple(misses), line)
    known = pack.case_ids
    unknown = tuple(cid for cid in lines if cid not in known)
    items = Items(
        question=np.asarray(q_list, dtype=np.int16), case=np.asarray(k_list, dtype=np.int32),
        correct=np.asarray(c_list, dtype=bool),
        prob=np.asarray(p_list, dtype=np.float64), got_true=np.asarray(got_list, dtype=bool),
        gold_true=np.asarray(gold_list, dtype=bool), got_label=label_list, qids=qids, case_errors=case_errors,
        missing=missing, missing_by_question={qid: expected_by_q[i] - items_by_q[i] for i, qid in enumerate(qids)},
    )
    return Graded(outcomes, items, unknown, state_unchecked)
