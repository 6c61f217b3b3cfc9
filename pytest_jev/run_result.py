"""The result of grading one (pack, split, recording): frozen, typed, plain data.

A RunResult is what the gates read, what the terminal summary and --jev-json render,
and what xdist workers ship to the controller (from_json(to_json()) gives back every
number exactly, floats travelling as JSON's shortest repr; a gate keeps jevassert's
gate, ok and detail only). `to_json()` is the --jev-json run object:
every key `jevassert check --json` writes, with jevassert's meaning, plus ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the file models cost ~30 ms to define; a session without packs never needs them
    from .formats.flips_json import FlipReport
    from .formats.identity_json import Dataset, Identity
    from .formats.protocol_json import ProtocolRun
    from .formats.run_json import Detail, LocaleNumbers

Interval = tuple[float, float]
PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"  # a gate's outcome


def _interval(value: Any) -> Interval | None:
    return (value[0], value[1]) if value else None


def _listed(ci: Interval | None) -> list[float] | None:
    return list(ci) if ci is not None else None


@dataclass(frozen=True)
class GateResult:
    gate: str  # e.g. min_accuracy, per_question.queue.max_ece
    outcome: str  # passed | failed | skipped (not computable: never a pass)
    detail: str  # jevassert's wording, e.g. "accuracy 0.953 >= 0.900"
    metric: str = ""
    value: float | None = None
    interval: tuple[float, float] | None = None
    threshold: float | None = None
    line: int | None = None  # line of the gate in gates.yaml
    verdict: str = ""  # ours, what holds or what is wrong: "ece 0.312, above the 0.150 allowed" (not in JSON)

    @property
    def ok(self) -> bool | None:
        """jevassert's tri-state: True pass, False fail, None not computable."""
        return None if self.outcome == SKIPPED else self.outcome == PASSED

    def to_json(self) -> dict[str, Any]:
        """jevassert's gate object, exactly: gate, ok, detail."""
        return {"gate": self.gate, "ok": self.ok, "detail": self.detail}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], verdict: str = "") -> GateResult:
        ok = doc["ok"]
        return cls(doc["gate"], SKIPPED if ok is None else PASSED if ok else FAILED, doc["detail"], verdict=verdict)


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """One question's items in one run."""

    qid: str
    type: str
    n: int
    missing: int
    accuracy: float
    mean_decision_prob: float
    ece: float
    brier: float | None  # noul questions with items only

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "n": self.n, "missing": self.missing, "accuracy": self.accuracy,
                "mean_decision_prob": self.mean_decision_prob, "ece": self.ece, "brier": self.brier}

    @classmethod
    def from_json(cls, qid: str, doc: dict[str, Any]) -> QuestionResult:
        return cls(qid, doc["type"], doc["n"], doc["missing"], doc["accuracy"], doc["mean_decision_prob"],
                   doc["ece"], doc["brier"])


@dataclass(frozen=True, slots=True)
class CoverageRow:
    """Items accepted at decision probability >= threshold, and their precision."""

    threshold: float
    coverage: float
    precision: float | None  # None when nothing is accepted

    def to_json(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "coverage": self.coverage, "precision": self.precision}


@dataclass(frozen=True, slots=True)
class AuthorCoverage:
    """Items auto-accepted under the pack's own `thresholds` floors."""

    n_total: int
    n_auto: int
    coverage: float
    precision: float | None

    def to_json(self) -> dict[str, Any]:
        return {"n_total": self.n_total, "n_auto": self.n_auto, "coverage": self.coverage,
                "precision": self.precision}


@dataclass(frozen=True, slots=True)
class Suggestion:
    """The highest-coverage threshold on the grid reaching --jev-target-precision."""

    threshold: float
    coverage: float
    precision: float
    n_accepted: int

    def to_json(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "coverage": self.coverage, "precision": self.precision,
                "n_accepted": self.n_accepted}


@dataclass(frozen=True, slots=True)
class Cost:
    """Tokens of every pack case's line (error lines included), priced per million tokens."""

    input_tokens: int | None  # None: no line reported usage
    output_tokens: int | None
    total_usd: float | None  # None: no usage, or no price known
    per_case_usd: float | None
    price_input: float | None  # USD per million tokens; None: unknown
    price_output: float | None


@dataclass(frozen=True, slots=True)
class Latency:
    """Nearest-rank percentiles of latency_ms over the pack's lines (None: not recorded)."""

    p50_ms: float | None
    p95_ms: float | None


@dataclass(frozen=True, slots=True)
class Mismatch:
    """An answered question whose decision differs from the gold label."""

    case: str
    question: str
    expected: Any
    got: Any
    probability: float

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case, "question": self.question, "expected": self.expected, "got": self.got,
                "probability": self.probability}


@dataclass(frozen=True, slots=True)
class RunKey:
    """Runs are keyed by pack, split and recording: tune and held-out runs of one recording,
    or two recordings of one pack, never overwrite each other."""

    pack: str
    split: str  # "" for a pack without splits (its cases.jsonl)
    recording: str  # as the user reads it (relative to the rootdir)


@dataclass(frozen=True)
class RunResult:
    pack: str
    version: str
    record_model: str
    tested: str | None
    split: str  # "" for a pack without splits
    backend: str | None
    recording: str
    recording_sha256: str
    mode: str  # "live" or "mock"
    n_cases: int
    n_items: int
    case_errors: int
    missing_items: int
    accuracy: float
    accuracy_ci: Interval | None
    ece: float
    ece_ci: Interval | None
    mean_decision_prob: float
    suggestion: Suggestion | None
    target_precision: float | None
    bootstrap_resamples: int
    seed: int
    cost: Cost
    latency: Latency
    per_question: tuple[QuestionResult, ...]
    coverage: tuple[CoverageRow, ...]
    author_coverage: AuthorCoverage | None
    recorded_models: tuple[str, ...]
    mismatched_cases: int
    invalid_cases: int
    unknown_case_ids: tuple[str, ...]
    mismatches: tuple[Mismatch, ...]
    gates: tuple[GateResult, ...] = ()
    gates_skipped: bool = False
    rubric: str = ""  # the pack's rubric fingerprint (sha256 of its questions as sent)
    rubric_status: str = "unchecked"  # ok | drift | unchecked: the recording's wording against it
    state_unchecked: int = 0  # graded lines without a state fingerprint (jevassert's, older ones of ours)
    price_source: str | None = None  # where the prices of the cost come from (pricing.PRICE_SOURCES)
    identity: Identity | None = None  # what the numbers depend on (identity.py)
    dataset: Dataset | None = None  # the dataset's version and manifest
    # a pack whose cases carry a locale: accuracy per locale (Wilson 95%), and the suggestion per locale
    # (`suggestion` is then None: a threshold never pools locales)
    locales: Mapping[str, LocaleNumbers] | None = None
    suggestion_by_locale: Mapping[str, Suggestion | None] | None = None
    protocol: ProtocolRun | None = None  # a tune or held-out run: report, thresholds, per-sample results
    detail: Detail | None = None  # for the registry: reliability bins, curve, locales, per-case marks
    majority_baseline: float | None = None  # majority-label accuracy of the run's cases (the terminal's; not in JSON)
    flips: FlipReport | None = None  # against --jev-baseline: regressed and fixed items, paired interval, power

    @property
    def key(self) -> RunKey:
        return RunKey(self.pack, self.split, self.recording)

    def question(self, qid: str) -> QuestionResult | None:
        return next((q for q in self.per_question if q.qid == qid), None)

    @property
    def failed_gates(self) -> list[GateResult]:
        return [g for g in self.gates if g.outcome == "failed"]

    def to_json(self) -> dict[str, Any]:
        """The --jev-json run object: jevassert's keys first, with its meaning, then ours."""
        return {
            "pack": self.pack, "version": self.version, "record_model": self.record_model, "tested": self.tested,
            "n_cases": self.n_cases, "n_items": self.n_items, "case_errors": self.case_errors,
            "missing_items": self.missing_items,
            "accuracy": self.accuracy, "accuracy_ci": _listed(self.accuracy_ci),
            "ece": self.ece, "ece_ci": _listed(self.ece_ci),
            "suggestion": self.suggestion.to_json() if self.suggestion else None,
            "mean_decision_prob": self.mean_decision_prob,
            "cost_per_case_usd": self.cost.per_case_usd, "total_cost_usd": self.cost.total_usd,
            "p50_latency_ms": self.latency.p50_ms, "p95_latency_ms": self.latency.p95_ms,
            "input_tokens": self.cost.input_tokens, "output_tokens": self.cost.output_tokens,
            "per_question": {q.qid: q.to_json() for q in self.per_question},
            "coverage": [row.to_json() for row in self.coverage],
            "threshold_coverage": self.author_coverage.to_json() if self.author_coverage else None,
            "gates": [g.to_json() for g in self.gates],
            "gates_skipped": self.gates_skipped,
            "recorded_models": list(self.recorded_models),
            "pricing": {"input_usd_per_mtok": self.cost.price_input, "output_usd_per_mtok": self.cost.price_output},
            "backend": self.backend, "recording": self.recording, "recording_sha256": self.recording_sha256,
            "split": self.split or None,
            "target_precision": self.target_precision, "bootstrap_resamples": self.bootstrap_resamples,
            "seed": self.seed, "mismatched_cases": self.mismatched_cases, "invalid_cases": self.invalid_cases,
            "unknown_case_ids": list(self.unknown_case_ids), "mode": self.mode,
            "mismatches": [m.to_json() for m in self.mismatches],
            "rubric": self.rubric, "rubric_status": self.rubric_status, "state_unchecked": self.state_unchecked,
            "price_source": self.price_source,
            "identity": self.identity.to_json() if self.identity is not None else None,
            "dataset": self.dataset.to_json() if self.dataset is not None else None,
            "locales": ({loc: n.to_json() for loc, n in self.locales.items()} if self.locales is not None else None),
            "suggestion_by_locale": ({loc: s.to_json() if s is not None else None
                                      for loc, s in self.suggestion_by_locale.items()}
                                     if self.suggestion_by_locale is not None else None),
            **({"protocol": self.protocol.to_json()} if self.protocol is not None else {}),
            **({"detail": self.detail.to_json()} if self.detail is not None else {}),
            **({"flips": self.flips.to_json()} if self.flips is not None else {}),
        }

    def shipped(self) -> dict[str, Any]:
        """What an xdist worker sends the controller: to_json, the gates' verdicts and the
        majority-label baseline (ours, which --jev-json leaves out)."""
        return {**self.to_json(), "gate_verdicts": [g.verdict for g in self.gates],
                "majority_baseline": self.majority_baseline}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RunResult:
        """The inverse of to_json and of shipped (xdist workers ship their runs to the controller this way)."""
        from .formats.flips_json import FlipReport
        from .formats.identity_json import dataset_or_none, identity_or_none
        from .formats.protocol_json import ProtocolRun
        from .formats.run_json import Detail, LocaleNumbers

        suggestion = doc["suggestion"]
        author = doc["threshold_coverage"]
        pricing = doc["pricing"]
        return cls(
            pack=doc["pack"], version=doc["version"], record_model=doc["record_model"], tested=doc["tested"],
            split=doc.get("split") or "", backend=doc["backend"], recording=doc["recording"],
            recording_sha256=doc["recording_sha256"], mode=doc["mode"], n_cases=doc["n_cases"],
            n_items=doc["n_items"], case_errors=doc["case_errors"], missing_items=doc["missing_items"],
            accuracy=doc["accuracy"], accuracy_ci=_interval(doc["accuracy_ci"]), ece=doc["ece"],
            ece_ci=_interval(doc["ece_ci"]), mean_decision_prob=doc["mean_decision_prob"],
            suggestion=Suggestion(**suggestion) if suggestion else None,
            target_precision=doc["target_precision"], bootstrap_resamples=doc["bootstrap_resamples"],
            seed=doc["seed"],
            cost=Cost(doc["input_tokens"], doc["output_tokens"], doc["total_cost_usd"], doc["cost_per_case_usd"],
                      pricing["input_usd_per_mtok"], pricing["output_usd_per_mtok"]),
            latency=Latency(doc["p50_latency_ms"], doc["p95_latency_ms"]),
            per_question=tuple(QuestionResult.from_json(qid, q) for qid, q in doc["per_question"].items()),
            coverage=tuple(CoverageRow(**row) for row in doc["coverage"]),
            author_coverage=AuthorCoverage(**author) if author else None,
            recorded_models=tuple(doc["recorded_models"]), mismatched_cases=doc["mismatched_cases"],
            invalid_cases=doc["invalid_cases"], unknown_case_ids=tuple(doc["unknown_case_ids"]),
            mismatches=tuple(Mismatch(**m) for m in doc["mismatches"]),
            gates=tuple(GateResult.from_json(g, verdict) for g, verdict
                        in zip(doc["gates"], doc.get("gate_verdicts") or [""] * len(doc["gates"]), strict=True)),
            gates_skipped=doc["gates_skipped"],
            rubric=doc.get("rubric", ""), rubric_status=doc.get("rubric_status", "unchecked"),
            state_unchecked=doc.get("state_unchecked", 0), price_source=doc.get("price_source"),
            identity=identity_or_none(doc.get("identity")), dataset=dataset_or_none(doc.get("dataset")),
            locales=({loc: LocaleNumbers.from_json(n) for loc, n in doc["locales"].items()}
                     if doc.get("locales") is not None else None),
            suggestion_by_locale=({loc: Suggestion(**s) if s else None
                                   for loc, s in doc["suggestion_by_locale"].items()}
                                  if doc.get("suggestion_by_locale") is not None else None),
            protocol=ProtocolRun.from_json(doc["protocol"]) if doc.get("protocol") is not None else None,
            detail=Detail.from_json(doc["detail"]) if doc.get("detail") is not None else None,
            majority_baseline=doc.get("majority_baseline"),
            flips=FlipReport.from_json(doc["flips"]) if doc.get("flips") is not None else None,
        )
