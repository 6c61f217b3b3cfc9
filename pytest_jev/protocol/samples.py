"""Per-sample results of a protocol run: what each case's answers were, without its state.

Built from the graded outcomes and the recording while its lines are still decoded; the
protocol's selective metrics, thresholds and `results.<split>.jsonl` all read these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..formats.recording_line import RecordingLine
from ..grade import Graded, decide
from ..packs.model import Case, Pack, Question
from ..recording_file import Recording

if TYPE_CHECKING:
    from ..formats.protocol_json import SampleLine


@dataclass(frozen=True, slots=True)
class Answered:
    """One question of one sample that got a usable answer."""

    gold: str  # the gold label ("true"/"false" for a noul)
    decision: str  # the answered label
    probability: float  # the decision probability
    probabilities: Mapping[str, float]  # label -> probability ("true"/"false" for a noul)

    @property
    def correct(self) -> bool:
        return self.decision == self.gold


@dataclass(frozen=True, slots=True)
class Sample:
    case_id: str
    locale: str  # "all" for a case without a locale
    tags: tuple[str, ...]
    gold: Mapping[str, str]  # every question's gold label
    error: str | None  # the failed call's code (HTTP 500, timeout, misfit, ...), None when answered
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    answers: Mapping[str, Answered] = field(default_factory=dict)  # questions with a usable answer

    def to_line(self) -> SampleLine:
        """The sample as a line of results.<split>.jsonl (a protocol run's: the file models are
        not loaded by a plain replay)."""
        from ..formats.protocol_json import SampleLine

        return SampleLine.from_json(self.to_json())

    def to_json(self) -> dict[str, Any]:
        """A line of results.<split>.jsonl (no state content)."""
        return {"id": self.case_id, "locale": self.locale, "tags": list(self.tags), "error": self.error,
                "latency_ms": self.latency_ms, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "answers": {qid: {"gold": self.gold[qid],
                                  **({"decision": a.decision, "probability": a.probability,
                                      "probabilities": dict(a.probabilities), "correct": a.correct}
                                     if (a := self.answers.get(qid)) else {"decision": None})}
                            for qid in self.gold}}


def _label(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _probabilities(question: Question, answer: Mapping[str, Any]) -> dict[str, float]:
    if question.type == "noul":
        p = float(answer["noul"])
        return {"true": p, "false": 1.0 - p}
    probs = {str(k): float(v) for k, v in answer["probabilities"].items()}
    if question.type == "score":
        return {question.levels[int(k)]: v for k, v in probs.items()}
    return probs


def error_code(line: RecordingLine | None) -> str:
    """A failed call's code: the HTTP status, else the kind of failure (timeout, misfit, ...)."""
    if line is None:
        return "not recorded"
    detail = line.error_detail
    if detail is not None:
        if detail.status is not None and detail.status != 200:
            return f"HTTP {detail.status}"
        if detail.type is not None:
            return detail.type
    error = line.error
    text = str(error) if error else "no answers"
    return text.split(":", 1)[0].strip()[:40] or "error"


def build(pack: Pack, cases: Sequence[Case], recording: Recording, graded: Graded) -> tuple[Sample, ...]:
    out = []
    for case in cases:
        line = recording.lines.get(case.id)
        outcome = graded.outcomes[case.id]
        gold = {qid: _label(label) for qid, label in case.expect.items()}
        failed = outcome.status in ("error", "stale")
        answers: dict[str, Answered] = {}
        recorded = line.answers if line is not None else None
        if not failed and recorded is not None:
            for qid in case.expect:
                question = pack.questions[qid]
                answer = recorded.get(qid)
                if not isinstance(answer, dict):
                    continue  # no answer object: not an answer
                decided = decide(question, answer)
                if decided is None or any(p.startswith(f"{qid}:") for p in outcome.problems):
                    continue  # unusable or breaking its contract: not an answer
                answers[qid] = Answered(gold[qid], _label(decided[0]), float(decided[1]),
                                        _probabilities(question, answer))
        latency = line.latency_ms if line is not None else None
        out.append(Sample(
            case_id=case.id, locale=case.locale or "all", tags=case.tags, gold=gold,
            error=("stale" if outcome.status == "stale" else error_code(line)) if failed else None,
            latency_ms=float(latency) if latency is not None else None,
            input_tokens=line.input_tokens if line is not None else None,
            output_tokens=line.output_tokens if line is not None else None, answers=answers))
    return tuple(out)
