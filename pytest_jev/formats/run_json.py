"""A run's numbers as files hold them: the run object of `--jev-json` (RunObject), a registry
results file (ResultsFile, results/<backend>/<pack>[.<split>].json), and the parts they share.

Both carry every key `jevassert check --json` writes, with jevassert's meaning, and ours after
them; a results file drops what only this run's reader needs (the recording path as given, the
mismatches, the protocol run, unknown case ids, gates_skipped) and adds its provenance (kind,
pack_version, predictions, predictions_sha256, report, recorded_at). Every field may be absent
(None) when read: the scoreboard also reads jevassert's results files and older ones of ours.

Kept as one module because RunObject and ResultsFile are one set of numbers (RunNumbers and its
~15 value types) under two sets of keys; the --jev-json file around the run objects (JevJson,
with --jev-repeat's StabilityEntry) is the rest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..fileio import atomic_write
from . import values as v
from .backend_json import Pricing
from .identity_json import Dataset, Identity, dataset_or_none, identity_or_none
from .protocol_json import ProtocolRun
from .schemas import JsonFile

if TYPE_CHECKING:  # a flip report's model loads with the first one read (a run with --jev-baseline)
    from .flips_json import FlipReport


@dataclass(frozen=True, slots=True)
class QuestionNumbers:
    """One question's numbers in a run (`per_question.<qid>`)."""

    type: str | None
    n: int | None
    missing: int | None
    accuracy: float | None
    mean_decision_prob: float | None
    ece: float | None
    brier: float | None  # noul questions with items only

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> QuestionNumbers:
        return cls(v.string(doc.get("type")), v.integer(doc.get("n")), v.integer(doc.get("missing")),
                   v.number(doc.get("accuracy")), v.number(doc.get("mean_decision_prob")), v.number(doc.get("ece")),
                   v.number(doc.get("brier")))

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "n": self.n, "missing": self.missing, "accuracy": self.accuracy,
                "mean_decision_prob": self.mean_decision_prob, "ece": self.ece, "brier": self.brier}


@dataclass(frozen=True, slots=True)
class CoverageRow:
    """Items accepted at decision probability >= threshold (`coverage[]`)."""

    threshold: float | None
    coverage: float | None
    precision: float | None  # None when nothing is accepted

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> CoverageRow:
        return cls(v.number(doc.get("threshold")), v.number(doc.get("coverage")), v.number(doc.get("precision")))

    def to_json(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "coverage": self.coverage, "precision": self.precision}


@dataclass(frozen=True, slots=True)
class ThresholdCoverage:
    """Items auto-accepted under the pack's own threshold floors (`threshold_coverage`)."""

    n_total: int | None
    n_auto: int | None
    coverage: float | None
    precision: float | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ThresholdCoverage:
        return cls(v.integer(doc.get("n_total")), v.integer(doc.get("n_auto")), v.number(doc.get("coverage")),
                   v.number(doc.get("precision")))

    def to_json(self) -> dict[str, Any]:
        return {"n_total": self.n_total, "n_auto": self.n_auto, "coverage": self.coverage,
                "precision": self.precision}


@dataclass(frozen=True, slots=True)
class Suggestion:
    """The highest-coverage threshold reaching --jev-target-precision (`suggestion`)."""

    threshold: float | None
    coverage: float | None
    precision: float | None
    n_accepted: int | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Suggestion:
        return cls(v.number(doc.get("threshold")), v.number(doc.get("coverage")), v.number(doc.get("precision")),
                   v.integer(doc.get("n_accepted")))

    def to_json(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "coverage": self.coverage, "precision": self.precision,
                "n_accepted": self.n_accepted}


@dataclass(frozen=True, slots=True)
class GateEntry:
    """jevassert's gate object: name, tri-state ok (None: not computable), its wording."""

    gate: str | None
    ok: bool | None
    detail: str | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> GateEntry:
        return cls(v.string(doc.get("gate")), v.flag(doc.get("ok")), v.string(doc.get("detail")))

    def to_json(self) -> dict[str, Any]:
        return {"gate": self.gate, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class MismatchEntry:
    """An answered question whose decision differs from the gold label (--jev-json only)."""

    case: str | None
    question: str | None
    expected: Any  # a gold label: a boolean (noul) or a label string
    got: Any
    probability: float | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> MismatchEntry:
        return cls(v.string(doc.get("case")), v.string(doc.get("question")), doc.get("expected"), doc.get("got"),
                   v.number(doc.get("probability")))

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case, "question": self.question, "expected": self.expected, "got": self.got,
                "probability": self.probability}


@dataclass(frozen=True, slots=True)
class ReliabilityBin:
    """One equal-width bin of decision probability: its items, mean probability and accuracy."""

    lo: float
    hi: float
    n: int
    mean_p: float
    accuracy: float

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ReliabilityBin | None:
        lo, hi, n = v.number(doc.get("lo")), v.number(doc.get("hi")), v.integer(doc.get("n"))
        mean_p, accuracy = v.number(doc.get("mean_p")), v.number(doc.get("accuracy"))
        if lo is None or hi is None or n is None or mean_p is None or accuracy is None:
            return None
        return cls(lo, hi, n, mean_p, accuracy)

    def to_json(self) -> dict[str, Any]:
        return {"lo": self.lo, "hi": self.hi, "n": self.n, "mean_p": self.mean_p, "accuracy": self.accuracy}


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """Coverage and precision when accepting items at p >= t."""

    t: float
    coverage: float
    precision: float | None  # None: nothing accepted

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> CurvePoint | None:
        t, coverage = v.number(doc.get("t")), v.number(doc.get("coverage"))
        if t is None or coverage is None:
            return None
        return cls(t, coverage, v.number(doc.get("precision")))

    def to_json(self) -> dict[str, Any]:
        return {"t": self.t, "coverage": self.coverage, "precision": self.precision}


@dataclass(frozen=True, slots=True)
class LocaleNumbers:
    """Accuracy over one locale's items, with its Wilson 95% interval."""

    n_items: int | None
    correct: int | None
    accuracy: float | None
    accuracy_ci: tuple[float, float] | None
    n_cases: int | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> LocaleNumbers:
        return cls(v.integer(doc.get("n_items")), v.integer(doc.get("correct")), v.number(doc.get("accuracy")),
                   v.pair(doc.get("accuracy_ci")), v.integer(doc.get("n_cases")))

    def to_json(self) -> dict[str, Any]:
        return {"n_items": self.n_items, "correct": self.correct, "accuracy": self.accuracy,
                "accuracy_ci": v.listed(self.accuracy_ci), "n_cases": self.n_cases}


@dataclass(frozen=True)
class Detail:
    """What the registry shows beyond jevassert's numbers (`detail`): the reliability bins, the
    coverage-precision curve, accuracy per locale, and per case one mark per question in pack
    order (`1` right, `0` wrong, `-` no usable answer), so two backends pair item by item."""

    reliability: tuple[ReliabilityBin, ...] = ()
    curve: tuple[CurvePoint, ...] = ()
    locales: Mapping[str, LocaleNumbers] = field(default_factory=dict)
    questions: tuple[str, ...] | None = None  # None: not given
    correct: Mapping[str, str] | None = None  # case id -> marks; None: not given

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Detail:
        bins = (ReliabilityBin.from_json(b) for b in _objects(doc.get("reliability")))
        points = (CurvePoint.from_json(p) for p in _objects(doc.get("curve")))
        questions, correct = doc.get("questions"), doc.get("correct")
        return cls(tuple(b for b in bins if b is not None), tuple(p for p in points if p is not None),
                   {name: LocaleNumbers.from_json(n) for name, n in v.mapping(doc.get("locales")).items()
                    if isinstance(n, Mapping)},
                   v.strings(questions) if isinstance(questions, list) else None,
                   {cid: str(marks) for cid, marks in correct.items()} if isinstance(correct, Mapping) else None)

    def to_json(self) -> dict[str, Any]:
        return {"reliability": [b.to_json() for b in self.reliability], "curve": [p.to_json() for p in self.curve],
                "locales": {name: n.to_json() for name, n in self.locales.items()},
                "questions": list(self.questions) if self.questions is not None else None,
                "correct": dict(self.correct) if self.correct is not None else None}


def _objects(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


# Keys of the --jev-json run object, in the order it is written: jevassert's first, then ours.
RUN_KEYS = (
    "pack", "version", "record_model", "tested", "n_cases", "n_items", "case_errors", "missing_items", "accuracy",
    "accuracy_ci", "ece", "ece_ci", "suggestion", "mean_decision_prob", "cost_per_case_usd", "total_cost_usd",
    "p50_latency_ms", "p95_latency_ms", "input_tokens", "output_tokens", "per_question", "coverage",
    "threshold_coverage", "gates", "gates_skipped", "recorded_models", "pricing", "backend", "recording",
    "recording_sha256", "split", "target_precision", "bootstrap_resamples", "seed", "mismatched_cases",
    "invalid_cases", "unknown_case_ids", "mode", "mismatches", "rubric", "rubric_status", "state_unchecked",
    "price_source", "identity", "dataset", "locales", "suggestion_by_locale", "protocol", "detail", "flips")
# The run keys a results file leaves out (its detail holds the locales), and the provenance it adds after them.
NOT_IN_RESULTS = ("recording", "mismatches", "protocol", "unknown_case_ids", "gates_skipped", "state_unchecked",
                  "locales", "suggestion_by_locale", "flips")
PROVENANCE = ("kind", "pack_version", "predictions", "predictions_sha256", "report", "recorded_at")
RESULTS_KEYS = tuple(key for key in RUN_KEYS if key not in NOT_IN_RESULTS) + PROVENANCE
OPTIONAL = ("protocol", "detail", "flips")  # left out, not null, when a run has none
_SCALARS: dict[str, Any] = {
    **dict.fromkeys(("pack", "version", "record_model", "tested", "backend", "recording_sha256", "split", "mode",
                     "rubric", "rubric_status", "price_source"), v.string),
    **dict.fromkeys(("n_cases", "n_items", "case_errors", "missing_items", "input_tokens", "output_tokens",
                     "bootstrap_resamples", "seed", "mismatched_cases", "invalid_cases"), v.integer),
    **dict.fromkeys(("accuracy", "ece", "mean_decision_prob", "cost_per_case_usd", "total_cost_usd", "p50_latency_ms",
                     "p95_latency_ms", "target_precision"), v.number),
    "accuracy_ci": v.pair, "ece_ci": v.pair, "recorded_models": v.strings,
}


@dataclass(frozen=True)
class RunNumbers:
    """The numbers a run object and a results file share (jevassert's keys and ours)."""

    KEYS: ClassVar[tuple[str, ...]] = ()

    pack: str | None = None
    version: str | None = None  # the pack version (jevassert writes pack_version in results files)
    record_model: str | None = None
    tested: str | None = None
    n_cases: int | None = None
    n_items: int | None = None
    case_errors: int | None = None
    missing_items: int | None = None
    accuracy: float | None = None
    accuracy_ci: tuple[float, float] | None = None
    ece: float | None = None
    ece_ci: tuple[float, float] | None = None
    suggestion: Suggestion | None = None
    mean_decision_prob: float | None = None
    cost_per_case_usd: float | None = None
    total_cost_usd: float | None = None
    p50_latency_ms: float | None = None
    p95_latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    per_question: Mapping[str, QuestionNumbers] = field(default_factory=dict)
    coverage: tuple[CoverageRow, ...] = ()
    threshold_coverage: ThresholdCoverage | None = None
    gates: tuple[GateEntry, ...] = ()
    recorded_models: tuple[str, ...] = ()
    pricing: Pricing | None = None
    backend: str | None = None
    recording_sha256: str | None = None
    split: str | None = None  # None for a pack without splits
    target_precision: float | None = None
    bootstrap_resamples: int | None = None
    seed: int | None = None
    mismatched_cases: int | None = None
    invalid_cases: int | None = None
    mode: str | None = None  # live | mock
    rubric: str | None = None
    rubric_status: str | None = None  # ok | drift | unchecked
    price_source: str | None = None  # where the prices of the cost come from (pricing.PRICE_SOURCES)
    identity: Identity | None = None  # what the numbers depend on (identity_json.py); None: written before
    dataset: Dataset | None = None  # the dataset's version and manifest
    detail: Detail | None = None
    order: tuple[str, ...] = ()  # the keys as read, in file order (() for a model built in memory)
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys this model does not name, as read

    @staticmethod
    def numbers_of(doc: Mapping[str, Any]) -> dict[str, Any]:
        """The shared fields of a JSON object, parsed (a value of the wrong type reads as None)."""
        out: dict[str, Any] = {key: parse(doc.get(key)) for key, parse in _SCALARS.items()}
        suggestion, threshold_coverage = doc.get("suggestion"), doc.get("threshold_coverage")
        pricing, detail = doc.get("pricing"), doc.get("detail")
        out.update(
            suggestion=Suggestion.from_json(suggestion) if isinstance(suggestion, Mapping) else None,
            per_question={qid: QuestionNumbers.from_json(q) for qid, q in v.mapping(doc.get("per_question")).items()
                          if isinstance(q, Mapping)},
            coverage=tuple(CoverageRow.from_json(row) for row in _objects(doc.get("coverage"))),
            threshold_coverage=(ThresholdCoverage.from_json(threshold_coverage)
                                if isinstance(threshold_coverage, Mapping) else None),
            gates=tuple(GateEntry.from_json(g) for g in _objects(doc.get("gates"))),
            pricing=Pricing.from_json(pricing) if isinstance(pricing, Mapping) else None,
            identity=identity_or_none(doc.get("identity")), dataset=dataset_or_none(doc.get("dataset")),
            detail=Detail.from_json(detail) if isinstance(detail, Mapping) and detail else None)  # {}: none
        return out

    def numbers_json(self) -> dict[str, Any]:
        """The shared fields as JSON values, by key."""
        return {
            "pack": self.pack, "version": self.version, "record_model": self.record_model, "tested": self.tested,
            "n_cases": self.n_cases, "n_items": self.n_items, "case_errors": self.case_errors,
            "missing_items": self.missing_items, "accuracy": self.accuracy, "accuracy_ci": v.listed(self.accuracy_ci),
            "ece": self.ece, "ece_ci": v.listed(self.ece_ci),
            "suggestion": self.suggestion.to_json() if self.suggestion else None,
            "mean_decision_prob": self.mean_decision_prob, "cost_per_case_usd": self.cost_per_case_usd,
            "total_cost_usd": self.total_cost_usd, "p50_latency_ms": self.p50_latency_ms,
            "p95_latency_ms": self.p95_latency_ms, "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "per_question": {qid: q.to_json() for qid, q in self.per_question.items()},
            "coverage": [row.to_json() for row in self.coverage],
            "threshold_coverage": self.threshold_coverage.to_json() if self.threshold_coverage else None,
            "gates": [g.to_json() for g in self.gates], "recorded_models": list(self.recorded_models),
            "pricing": self.pricing.to_json() if self.pricing else None, "backend": self.backend,
            "recording_sha256": self.recording_sha256, "split": self.split, "target_precision": self.target_precision,
            "bootstrap_resamples": self.bootstrap_resamples, "seed": self.seed,
            "mismatched_cases": self.mismatched_cases, "invalid_cases": self.invalid_cases, "mode": self.mode,
            "rubric": self.rubric, "rubric_status": self.rubric_status, "price_source": self.price_source,
            "identity": self.identity.to_json() if self.identity else None,
            "dataset": self.dataset.to_json() if self.dataset else None,
            "detail": self.detail.to_json() if self.detail else None,
        }

    def has(self, key: str) -> bool:
        """Whether the file this was read from holds `key` (a model built in memory holds them all)."""
        return key in self.order if self.order else True

    def _emit(self, known: dict[str, Any]) -> dict[str, Any]:
        ordered = {key: known[key] for key in self.KEYS if not (key in OPTIONAL and known[key] is None)}
        return v.emit(ordered, self.order, self.extra)


@dataclass(frozen=True)
class ResultsFile(RunNumbers, JsonFile):
    """results/<backend>/<pack>.json (a pack with splits: <pack>.<split>.json): a run's numbers beside
    the recording they come from, with its provenance. Written by `--jev-write-results`."""

    READ_FIX: ClassVar[str] = "refresh it (jev-packs refresh)"

    KEYS: ClassVar[tuple[str, ...]] = RESULTS_KEYS
    KIND: ClassVar[str] = "jev-packs results"

    kind: str | None = None  # "jev-packs results" (jevassert's files have none)
    pack_version: str | None = None
    predictions: str | None = None  # the recording's path from the registry's root
    predictions_sha256: str | None = None
    report: str | None = None  # the human report beside it (<pack>.md), or the pack's evidence.md
    recorded_at: str | None = None  # the day the recording was made (YYYY-MM-DD)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ResultsFile:
        return cls(**cls.numbers_of(doc), kind=v.string(doc.get("kind")),
                   pack_version=v.string(doc.get("pack_version")), predictions=v.string(doc.get("predictions")),
                   predictions_sha256=v.string(doc.get("predictions_sha256")), report=v.string(doc.get("report")),
                   recorded_at=v.string(doc.get("recorded_at")), order=tuple(doc),
                   extra=v.extra_keys(doc, RESULTS_KEYS))

    def to_json(self) -> dict[str, Any]:
        return self._emit({**self.numbers_json(), "kind": self.kind, "pack_version": self.pack_version,
                           "predictions": self.predictions, "predictions_sha256": self.predictions_sha256,
                           "report": self.report, "recorded_at": self.recorded_at})

    def dumps(self) -> str:
        """The file's text: in the run's key order (jevassert's keys first, questions in pack
        order), two-space indent, UTF-8, a final newline."""
        return dumps(self.to_json())

    def write(self, path: Path) -> Path:
        atomic_write(path, self.dumps().encode("utf-8"))
        return path

    @property
    def sha256(self) -> str | None:
        """The recording's sha256 the file names: `predictions_sha256`, else `recording_sha256`."""
        return v.text(self.predictions_sha256) or v.text(self.recording_sha256)

    @property
    def numbers_version(self) -> str | None:
        """The pack version the numbers are for: `pack_version`, else the run's `version`."""
        return self.pack_version or self.version


@dataclass(frozen=True)
class RunObject(RunNumbers):
    """One run of `--jev-json`'s `runs`: jevassert check --json's object, plus ours."""

    KEYS: ClassVar[tuple[str, ...]] = RUN_KEYS

    gates_skipped: bool | None = None
    state_unchecked: int | None = None  # graded lines without a state fingerprint
    locales: Mapping[str, LocaleNumbers] | None = None  # a pack with locales: accuracy per locale
    suggestion_by_locale: Mapping[str, Suggestion | None] | None = None  # and --jev-target-precision's, per locale
    recording: str | None = None  # the recording as the user reads it (relative to the rootdir)
    unknown_case_ids: tuple[str, ...] = ()
    mismatches: tuple[MismatchEntry, ...] = ()
    protocol: ProtocolRun | None = None  # a tune or held-out run (--jev-tune, --jev-heldout)
    flips: FlipReport | None = None  # against --jev-baseline

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> RunObject:
        protocol, flips = doc.get("protocol"), doc.get("flips")
        if isinstance(flips, Mapping):
            from .flips_json import FlipReport  # see the imports above
        return cls(**cls.numbers_of(doc), gates_skipped=v.flag(doc.get("gates_skipped")),
                   state_unchecked=v.integer(doc.get("state_unchecked")),
                   locales=({loc: LocaleNumbers.from_json(n) for loc, n in doc["locales"].items()
                             if isinstance(n, Mapping)} if isinstance(doc.get("locales"), Mapping) else None),
                   suggestion_by_locale=({loc: Suggestion.from_json(s) if isinstance(s, Mapping) else None
                                          for loc, s in doc["suggestion_by_locale"].items()}
                                         if isinstance(doc.get("suggestion_by_locale"), Mapping) else None),
                   recording=v.string(doc.get("recording")), unknown_case_ids=v.strings(doc.get("unknown_case_ids")),
                   mismatches=tuple(MismatchEntry.from_json(m) for m in _objects(doc.get("mismatches"))),
                   protocol=ProtocolRun.from_json(protocol) if isinstance(protocol, Mapping) else None,
                   flips=FlipReport.from_json(flips) if isinstance(flips, Mapping) else None,
                   order=tuple(doc), extra=v.extra_keys(doc, RUN_KEYS))

    def to_json(self) -> dict[str, Any]:
        return self._emit({**self.numbers_json(), "gates_skipped": self.gates_skipped,
                           "state_unchecked": self.state_unchecked, "recording": self.recording,
                           "locales": ({loc: n.to_json() for loc, n in self.locales.items()}
                                       if self.locales is not None else None),
                           "suggestion_by_locale": ({loc: s.to_json() if s is not None else None
                                                     for loc, s in self.suggestion_by_locale.items()}
                                                    if self.suggestion_by_locale is not None else None),
                           "unknown_case_ids": list(self.unknown_case_ids),
                           "mismatches": [m.to_json() for m in self.mismatches],
                           "protocol": self.protocol.to_json() if self.protocol else None,
                           "flips": self.flips.to_json() if self.flips else None})


@dataclass(frozen=True, slots=True)
class QuestionStability:
    items: int | None
    flipped: int | None
    flip_rate: float | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> QuestionStability:
        return cls(v.integer(doc.get("items")), v.integer(doc.get("flipped")), v.number(doc.get("flip_rate")))

    def to_json(self) -> dict[str, Any]:
        return {"items": self.items, "flipped": self.flipped, "flip_rate": self.flip_rate}


@dataclass(frozen=True)
class StabilityEntry:
    """One pack of `--jev-json`'s `stability` (--jev-repeat): how often decisions flip between rounds."""

    pack: str | None
    rounds: int | None
    items: int | None
    flipped: int | None
    flip_rate: float | None
    discordant: int | None
    by_question: Mapping[str, QuestionStability] = field(default_factory=dict)
    flipped_cases: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> StabilityEntry:
        return cls(v.string(doc.get("pack")), v.integer(doc.get("rounds")), v.integer(doc.get("items")),
                   v.integer(doc.get("flipped")), v.number(doc.get("flip_rate")), v.integer(doc.get("discordant")),
                   {qid: QuestionStability.from_json(q) for qid, q in v.mapping(doc.get("by_question")).items()
                    if isinstance(q, Mapping)},
                   v.strings(doc.get("flipped_cases")))

    def to_json(self) -> dict[str, Any]:
        return {"pack": self.pack, "rounds": self.rounds, "items": self.items, "flipped": self.flipped,
                "flip_rate": self.flip_rate, "discordant": self.discordant,
                "by_question": {qid: q.to_json() for qid, q in self.by_question.items()},
                "flipped_cases": list(self.flipped_cases)}


@dataclass(frozen=True)
class JevJson(JsonFile):
    """The file `--jev-json PATH` writes: {"runs": [...]}, and {"stability": [...]} after --jev-repeat."""

    READ_FIX: ClassVar[str] = "write it again with --jev-json"

    runs: tuple[RunObject, ...] = ()
    stability: tuple[StabilityEntry, ...] = ()  # left out of the file when empty

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> JevJson:
        return cls(tuple(RunObject.from_json(run) for run in _objects(doc.get("runs"))),
                   tuple(StabilityEntry.from_json(s) for s in _objects(doc.get("stability"))))

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"runs": [run.to_json() for run in self.runs]}
        if self.stability:
            doc["stability"] = [s.to_json() for s in self.stability]
        return doc

    def dumps(self) -> bytes:
        return jev_json_bytes(self.to_json())


def dumps(doc: Mapping[str, Any]) -> str:
    """A JSON document as the registry writes it: in its own key order, two-space indent, UTF-8
    as is, a final newline (results files, index.json)."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def jev_json_bytes(doc: Mapping[str, Any]) -> bytes:
    """--jev-json's bytes: UTF-8 as is; a lone surrogate (a legal JSON escape, e.g. in a case
    id, that UTF-8 cannot hold) makes the whole file ASCII with escapes instead."""
    try:
        return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(doc, indent=2) + "\n").encode("ascii")
