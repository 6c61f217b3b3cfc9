"""Rubric fingerprints: the questions exactly as a backend receives them, hashed.

`Question.as_sent()` is the one function that builds a question's wire form (type,
instructions, options or levels with their descriptions); canonical JSON of it (sorted keys,
no spaces) hashed with sha256 is the question's fingerprint, and of all of a pack's questions
the rubric fingerprint. Option order is not part of it (canonical JSON sorts keys): shuffled
options ask the same rubric. Every new recording line carries both, so replay can refuse a
recording made for other wording (rubric drift) and name each question that changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .fileio import canonical_json, json_sha256
from .formats.recording_line import RecordingLine
from .packs.model import Case, Pack
from .recording_file import Recording
from .wire import Request, fingerprint_serialized, fingerprints

FIX = "re-record with --jev-record=all, or restore the wording the recording was made with"


def question_fingerprints(questions: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """sha256 of each question as sent, by question id."""
    return {qid: json_sha256(question) for qid, question in questions.items()}


def rubric_fingerprint(questions: Mapping[str, Mapping[str, Any]]) -> str:
    """sha256 of all questions as sent (question id -> wire form)."""
    return json_sha256(dict(questions))


@dataclass(frozen=True)
class RubricCheck:
    """What replay found comparing a recording's wording with the pack's."""

    outcome: str  # "ok", "drift", or "unchecked" (nothing in the recording to compare with)
    lines: tuple[str, ...] = ()  # the one-line reasons (drift: per question; unchecked: why)
    changed: tuple[str, ...] = ()  # question ids whose wording differs

    @property
    def drift(self) -> bool:
        return self.outcome == "drift"


def check(pack: Pack, cases: Sequence[Case], recording: Recording) -> RubricCheck:
    """Compare the wording a recording was made with against the pack's, for these cases.

    Lines that carry `rubric_fingerprint` (and `question_fingerprints`) are compared directly,
    naming each question whose wording changed. Older lines of ours carry only the request
    fingerprint: it is recomputed from today's questions and the case's state, which tells
    that something changed but not which question. jevassert's lines carry neither: the check
    is then not made (an "unchecked" outcome, reported as skipped, never as passed).
    """
    sent = pack.questions_as_sent()
    expected = rubric_fingerprint(sent)
    per_question = question_fingerprints(sent)
    changed: dict[str, str] = {}  # qid -> first line that shows it
    stale: list[str] = []
    checked = 0
    for case in cases:
        line = recording.lines.get(case.id)
        if line is None:
            continue
        where = f"{recording.path}:{recording.line_numbers[case.id]}"
        recorded = line.rubric_fingerprint
        if recorded is not None:
            checked += 1
            if recorded != expected:
                _changed_questions(line.question_fingerprints, per_question, where, changed)
            continue
        fingerprint = line.request_fingerprint
        if fingerprint is not None and line.backend is not None:
            checked += 1
            if fingerprint != _request_fingerprint(line, case, sent):
                stale.append(where)
    if changed or stale:
        out = [f"rubric drift: question '{qid}' is worded differently from the recording ({where}); {FIX}"
               for qid, where in changed.items()]
        if stale:
            out.append(f"rubric drift: {len(stale)} line(s) were recorded for another request (first: {stale[0]}): "
                       f"the questions or the state changed, and these lines carry no question fingerprints "
                       f"to say which; {FIX}")
        return RubricCheck("drift", tuple(out), tuple(changed))
    if not checked:
        why = (f"{recording.path} carries no rubric or request fingerprint (a jevassert recording, or "
               "older): the wording it was made with cannot be compared")
        return RubricCheck("unchecked", (why,))
    return RubricCheck("ok")


def _changed_questions(recorded: Mapping[str, Any] | None, expected: Mapping[str, str], where: str,
                       out: dict[str, str]) -> None:
    if recorded is None:
        out.setdefault("(all)", where)
        return
    for qid in sorted(set(recorded) | set(expected)):
        if recorded.get(qid) != expected.get(qid):
            out.setdefault(qid, where)


class StateWitness:
    """Whether a recording line without a state fingerprint answered its case's state of today,
    told from its request fingerprint (older lines of ours carry one; jevassert's do not).

    The request fingerprint covers backend, requested model, option order (all in the line),
    the questions as sent and the state: recomputed from today's questions and state, equal
    means the state is the one answered. Unequal means the state changed only when the line's
    rubric fingerprint shows the questions did not; otherwise it cannot tell (rubric drift is
    this module's `check`, which reports it on its own). The questions are serialized once, on
    the first line that needs them (lines we record now carry a state fingerprint)."""

    def __init__(self, pack: Pack) -> None:
        self._pack = pack
        self._sent: dict[str, dict[str, Any]] | None = None
        self._sent_json = ""
        self._rubric = ""

    def verdict(self, line: RecordingLine, case: Case) -> bool | None:
        """True: the line answered this state; False: it answered another; None: cannot tell."""
        if line.request_fingerprint is None or line.backend is None:
            return None
        if self._sent is None:
            self._sent = self._pack.questions_as_sent()
            self._sent_json = canonical_json(self._sent)
            self._rubric = rubric_fingerprint(self._sent)
        request = _request(line, case, self._sent)
        questions = self._sent_json if request.questions is self._sent else canonical_json(request.questions)
        if fingerprint_serialized(request, str(line.backend), questions) == line.request_fingerprint:
            return True
        return False if line.rubric_fingerprint == self._rubric and line.requested_model is not None else None


def _request_fingerprint(line: RecordingLine, case: Case, questions: dict[str, dict[str, Any]]) -> str:
    return fingerprints([_request(line, case, questions)], str(line.backend))[0]


def _request(line: RecordingLine, case: Case, questions: dict[str, dict[str, Any]]) -> Request:
    """The request the line answered, as it would be sent today for this case."""
    order = line.option_order
    if order is not None:  # a shuffled request: its options went in this order
        questions = {qid: ({**q, "criteria": {label: q["criteria"][label] for label in order[qid]
                                              if label in q["criteria"]}}
                           if qid in order and q["type"] == "choice" else q) for qid, q in questions.items()}
    return Request(case.id, dict(case.state), questions, line.requested_model or "",
                   option_order=dict(order) if order is not None else None)


def pin_problem(pack: Pack) -> str | None:
    """Why pack.yaml's pinned `rubric:` is not the fingerprint of its questions (None: no pin, or it is)."""
    if pack.rubric_pin is None:
        return None
    actual = rubric_fingerprint(pack.questions_as_sent())
    if actual == pack.rubric_pin:
        return None
    return (f"{pack.pack_file}: rubric pinned as {pack.rubric_pin}, but the questions as written give {actual}: "
            "their wording changed; restore it, or publish a new pack version with the new fingerprint pinned")
