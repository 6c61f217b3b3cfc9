"""The files of the evaluation protocol (tune, then held-out), and its part of --jev-json:

    results/<backend>/<pack>.thresholds.json      Thresholds: frozen by a tune run
    results/<backend>/<pack>.report.<split>.json  ProtocolReport: one per tune / held-out run
    results/<backend>/<pack>.results.<split>.jsonl SampleLine: one line per sample, no state
    results/comparisons/<pack>.<split>.json       Comparison: `jev-packs merge` of held-out reports

Thresholds, reports and comparisons are written with sorted keys; inside --jev-json's run
object (`protocol`) the same objects keep the order they were built in, which is each model's
own key order below.

Kept as one module because the four files are one protocol's: a comparison is made of a report's
slices, a report and the thresholds share the run's identity, and ProtocolRun holds all of them;
apart, each module would import the others' small value types back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..errors import JevError
from ..fileio import atomic_write, write_json
from . import values as v
from .identity_json import Dataset, dataset_or_none, identity_or_none
from .identity_json import Identity as RunIdentity
from .schemas import FormatError, JsonFile, read_lines

# The fields that say what a protocol run measured: a held-out run checks them in the frozen
# thresholds, and `jev-packs merge` in every report.
IDENTITY = ("pack", "pack_version", "split", "mode", "backend", "served_models", "dataset_sha256", "rubric", "seed",
            "identity", "dataset")


@dataclass(frozen=True, slots=True)
class Rate:
    """k of n, its value and Wilson 95% interval (value and interval None when n is 0)."""

    value: float | None
    k: int | None
    n: int | None
    ci: tuple[float, float] | None

    @classmethod
    def from_json(cls, doc: Any) -> Rate:
        doc = v.mapping(doc)
        return cls(v.number(doc.get("value")), v.integer(doc.get("k")), v.integer(doc.get("n")), v.pair(doc.get("ci")))

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "k": self.k, "n": self.n, "ci": v.listed(self.ci)}


@dataclass(frozen=True, slots=True)
class SliceSamples:
    total: int | None
    answered: int | None
    decided: int | None
    failed: int | None
    unknown_answers: int | None

    @classmethod
    def from_json(cls, doc: Any) -> SliceSamples:
        doc = v.mapping(doc)
        return cls(*(v.integer(doc.get(key)) for key in ("total", "answered", "decided", "failed", "unknown_answers")))

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "answered": self.answered, "decided": self.decided, "failed": self.failed,
                "unknown_answers": self.unknown_answers}


@dataclass(frozen=True, slots=True)
class LabelRates:
    precision: Rate
    recall: Rate

    @classmethod
    def from_json(cls, doc: Any) -> LabelRates:
        doc = v.mapping(doc)
        return cls(Rate.from_json(doc.get("precision")), Rate.from_json(doc.get("recall")))

    def to_json(self) -> dict[str, Any]:
        return {"precision": self.precision.to_json(), "recall": self.recall.to_json()}


OUTCOMES = ("tp", "fp", "tn", "fn", "abstained", "failed")


@dataclass(frozen=True)
class ReportSlice:
    """Selective metrics of one question over one locale (or one tag within it) at its threshold."""

    threshold: float | None  # None: no cut (pack thresholds), or tuning reached no target
    rule: str | None
    samples: SliceSamples
    coverage: Rate
    selective_precision: Rate
    per_label: Mapping[str, LabelRates]
    brier: float | None
    ece_10_equal_width: float | None
    failures_by_code: Mapping[str, int]
    latency_ms: Mapping[str, float | None]  # p50, p95
    tokens: Mapping[str, int | None]  # input, output
    cost_usd: float | None
    outcomes: Mapping[str, int] | None = None  # noul only: tp fp tn fn abstained failed
    flagged_true: Rate | None = None  # noul only
    tags: Mapping[str, ReportSlice] | None = None  # per tag within the locale (not inside a tag's slice)

    @classmethod
    def from_json(cls, doc: Any) -> ReportSlice:
        doc = v.mapping(doc)
        outcomes, flagged, tags = doc.get("outcomes"), doc.get("flagged_true"), doc.get("tags")
        return cls(
            threshold=v.number(doc.get("threshold")), rule=v.string(doc.get("rule")),
            samples=SliceSamples.from_json(doc.get("samples")), coverage=Rate.from_json(doc.get("coverage")),
            selective_precision=Rate.from_json(doc.get("selective_precision")),
            per_label={label: LabelRates.from_json(r) for label, r in v.mapping(doc.get("per_label")).items()},
            brier=v.number(doc.get("brier")), ece_10_equal_width=v.number(doc.get("ece_10_equal_width")),
            failures_by_code=_counts(doc.get("failures_by_code")),
            latency_ms={key: v.number(value) for key, value in v.mapping(doc.get("latency_ms")).items()},
            tokens={key: v.integer(value) for key, value in v.mapping(doc.get("tokens")).items()},
            cost_usd=v.number(doc.get("cost_usd")),
            outcomes=_counts(outcomes) if isinstance(outcomes, Mapping) else None,
            flagged_true=Rate.from_json(flagged) if isinstance(flagged, Mapping) else None,
            tags=({tag: ReportSlice.from_json(s) for tag, s in tags.items()} if isinstance(tags, Mapping) else None))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "threshold": self.threshold, "rule": self.rule, "samples": self.samples.to_json(),
            "coverage": self.coverage.to_json(), "selective_precision": self.selective_precision.to_json(),
            "per_label": {label: r.to_json() for label, r in self.per_label.items()}, "brier": self.brier,
            "ece_10_equal_width": self.ece_10_equal_width, "failures_by_code": dict(self.failures_by_code),
            "latency_ms": dict(self.latency_ms), "tokens": dict(self.tokens), "cost_usd": self.cost_usd}
        if self.outcomes is not None:
            out["outcomes"] = dict(self.outcomes)
        if self.flagged_true is not None:
            out["flagged_true"] = self.flagged_true.to_json()
        if self.tags is not None:
            out["tags"] = {tag: s.to_json() for tag, s in self.tags.items()}
        return out


def _counts(value: Any) -> dict[str, int]:
    return {key: n for key, count in v.mapping(value).items() if (n := v.integer(count)) is not None}


@dataclass(frozen=True)
class ReportQuestion:
    type: str | None  # noul | choice | score
    labels: tuple[str, ...]
    locales: Mapping[str, ReportSlice]  # never blended: one slice per locale

    @classmethod
    def from_json(cls, doc: Any) -> ReportQuestion:
        doc = v.mapping(doc)
        return cls(v.string(doc.get("type")), v.strings(doc.get("labels")),
                   {locale: ReportSlice.from_json(s) for locale, s in v.mapping(doc.get("locales")).items()})

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "labels": list(self.labels),
                "locales": {locale: s.to_json() for locale, s in self.locales.items()}}


@dataclass(frozen=True, slots=True)
class ReportSamples:
    total: int | None
    failed: int | None
    answered: int | None
    locales: Mapping[str, int]  # samples per locale

    @classmethod
    def from_json(cls, doc: Any) -> ReportSamples:
        doc = v.mapping(doc)
        return cls(v.integer(doc.get("total")), v.integer(doc.get("failed")), v.integer(doc.get("answered")),
                   _counts(doc.get("locales")))

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "failed": self.failed, "answered": self.answered, "locales": dict(self.locales)}


@dataclass(frozen=True, slots=True)
class Seeds:
    """What each seed of a protocol run is. `bootstrap` is --jev-seed: the seed of the summary's
    bootstrap intervals, which this report's numbers do not use (they draw no random numbers:
    Wilson intervals, a fixed grid). `backend` is the seed of a seeded backend (the mock's answers
    and injected failures, from its backend.json), None for any other."""

    bootstrap: int | None
    backend: int | None

    @classmethod
    def from_json(cls, doc: Any) -> Seeds:
        doc = v.mapping(doc)
        return cls(v.integer(doc.get("bootstrap")), v.integer(doc.get("backend")))

    def to_json(self) -> dict[str, Any]:
        return {"bootstrap": self.bootstrap, "backend": self.backend}


@dataclass(frozen=True)
class Identity:
    """What a protocol run measured (the fields of IDENTITY)."""

    pack: str | None = None
    pack_version: str | None = None
    split: str | None = None
    mode: str | None = None
    backend: str | None = None
    served_models: tuple[str, ...] = ()
    dataset_sha256: str | None = None
    rubric: str | None = None
    seed: int | None = None
    identity: RunIdentity | None = None  # what the numbers depend on, hashed (None: written before identities)
    dataset: Dataset | None = None  # the dataset's version and manifest

    @staticmethod
    def identity_of(doc: Mapping[str, Any]) -> dict[str, Any]:
        return {"pack": v.string(doc.get("pack")), "pack_version": v.string(doc.get("pack_version")),
                "split": v.string(doc.get("split")), "mode": v.string(doc.get("mode")),
                "backend": v.string(doc.get("backend")), "served_models": v.strings(doc.get("served_models")),
                "dataset_sha256": v.string(doc.get("dataset_sha256")), "rubric": v.string(doc.get("rubric")),
                "seed": v.integer(doc.get("seed")), "identity": identity_or_none(doc.get("identity")),
                "dataset": dataset_or_none(doc.get("dataset"))}

    def identity_json(self) -> dict[str, Any]:
        """The identity fields, `identity` and `dataset` left out when the file has none."""
        out: dict[str, Any] = {
            "pack": self.pack, "pack_version": self.pack_version, "split": self.split, "mode": self.mode,
            "backend": self.backend, "served_models": list(self.served_models),
            "dataset_sha256": self.dataset_sha256, "rubric": self.rubric, "seed": self.seed}
        if self.identity is not None:
            out["identity"] = self.identity.to_json()
        if self.dataset is not None:
            out["dataset"] = self.dataset.to_json()
        return out


@dataclass(frozen=True)
class ProtocolReport(Identity, JsonFile):
    """results/<backend>/<pack>.report.<split>.json: the run's identity, sample counts, and per
    question and locale (and tag) the selective metrics at the thresholds applied."""

    READ_FIX: ClassVar[str] = "re-run the protocol run that wrote it"

    KIND: ClassVar[str] = "jev-packs protocol report"
    KEYS: ClassVar[tuple[str, ...]] = ("kind", *IDENTITY, "protocol_version", "thresholds_source", "samples",
                                       "questions", "note", "generator", "backend_kind", "recording_sha256",
                                       "price_source", "seeds", "thresholds_identity")

    kind: str | None = None
    protocol_version: int | None = None
    thresholds_source: str | None = None  # tuned on this split | frozen thresholds.json ... | pack.yaml thresholds
    generator: str | None = None  # "jev-packs <version>": the tool that wrote it
    backend_kind: tuple[str, ...] = ()  # the backend kinds of the split's lines (mock, jev, sparrow, ...)
    recording_sha256: str | None = None  # the recording it graded
    price_source: str | None = None  # "given" when --jev-price-* priced the cost; None: no prices, no cost
    seeds: Seeds | None = None  # what each seed is (the protocol's own numbers draw none)
    thresholds_identity: str | None = None  # held-out: identity.sha256 of the frozen thresholds applied
    samples: ReportSamples = field(default_factory=lambda: ReportSamples(None, None, None, {}))
    questions: Mapping[str, ReportQuestion] = field(default_factory=dict)
    note: str | None = None  # mock runs: what the numbers do not say
    order: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ProtocolReport:
        return cls(**cls.identity_of(doc), kind=v.string(doc.get("kind")),
                   protocol_version=v.integer(doc.get("protocol_version")),
                   thresholds_source=v.string(doc.get("thresholds_source")),
                   samples=ReportSamples.from_json(doc.get("samples")),
                   questions={qid: ReportQuestion.from_json(q) for qid, q in v.mapping(doc.get("questions")).items()},
                   note=v.string(doc.get("note")), generator=v.string(doc.get("generator")),
                   backend_kind=v.strings(doc.get("backend_kind")),
                   recording_sha256=v.string(doc.get("recording_sha256")),
                   price_source=v.string(doc.get("price_source")),
                   seeds=Seeds.from_json(doc.get("seeds")) if isinstance(doc.get("seeds"), Mapping) else None,
                   thresholds_identity=v.string(doc.get("thresholds_identity")),
                   order=tuple(doc), extra=v.extra_keys(doc, cls.KEYS))

    def to_json(self) -> dict[str, Any]:
        known = {"kind": self.kind, **self.identity_json(), "protocol_version": self.protocol_version,
                 "thresholds_source": self.thresholds_source,
                 "samples": self.samples.to_json(),
                 "questions": {qid: q.to_json() for qid, q in self.questions.items()}}
        if self.note is not None:
            known["note"] = self.note
        if self.generator is not None:  # the fields below came with identities: an older report has none
            known.update(generator=self.generator, backend_kind=list(self.backend_kind),
                         recording_sha256=self.recording_sha256, price_source=self.price_source,
                         seeds=self.seeds.to_json() if self.seeds is not None else None,
                         thresholds_identity=self.thresholds_identity)
        return v.emit(known, self.order, self.extra)

    def write(self, path: Path) -> Path:
        write_json(path, self.to_json())
        return path


@dataclass(frozen=True, slots=True)
class TunedThreshold:
    """The tune split's result for one question and locale: the lowest grid threshold reaching
    the target precision with enough decided samples, or none (status target-not-reached)."""

    threshold: float | None
    status: str | None  # ok | target-not-reached
    decided: int | None
    precision: float | None
    coverage: float | None

    @classmethod
    def from_json(cls, doc: Any) -> TunedThreshold:
        doc = v.mapping(doc)
        return cls(v.number(doc.get("threshold")), v.string(doc.get("status")), v.integer(doc.get("decided")),
                   v.number(doc.get("precision")), v.number(doc.get("coverage")))

    def to_json(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "status": self.status, "decided": self.decided,
                "precision": self.precision, "coverage": self.coverage}


@dataclass(frozen=True, slots=True)
class Freeze:
    """The freeze a held-out run records in the thresholds it applied: from then on tuning again
    into that backend folder is refused (the file says so itself, whatever other files are named)."""

    by: str | None  # "--jev-heldout"
    report: str | None  # the held-out report's file name
    heldout_identity: str | None  # identity.sha256 of the held-out run that froze them

    @classmethod
    def from_json(cls, doc: Any) -> Freeze:
        doc = v.mapping(doc)
        return cls(v.string(doc.get("by")), v.string(doc.get("report")), v.string(doc.get("heldout_identity")))

    def to_json(self) -> dict[str, Any]:
        return {"by": self.by, "report": self.report, "heldout_identity": self.heldout_identity}


@dataclass(frozen=True)
class Thresholds(Identity, JsonFile):
    """results/<backend>/<pack>.thresholds.json: the thresholds a tune run froze, with the
    conditions they were tuned under (a held-out run checks every one before using them)."""

    READ_FIX: ClassVar[str] = "re-run --jev-tune to write it again"

    KIND: ClassVar[str] = "jev-packs thresholds"
    KEYS: ClassVar[tuple[str, ...]] = ("kind", "protocol_version", "split", "pack", "pack_version", "mode", "backend",
                                       "served_models", "dataset_sha256", "rubric", "seed", "target_precision",
                                       "min_covered", "grid", "thresholds", "identity", "dataset", "frozen")

    kind: str | None = None
    protocol_version: int | None = None
    target_precision: float | None = None
    min_covered: int | None = None
    grid: tuple[float, ...] = ()  # first, last, step
    thresholds: Mapping[str, Mapping[str, TunedThreshold]] = field(default_factory=dict)  # qid -> locale -> ...
    frozen: Freeze | None = None  # set by the first held-out run: tuning again into this folder is refused
    order: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Thresholds:
        grid = doc.get("grid")
        return cls(**cls.identity_of(doc), kind=v.string(doc.get("kind")),
                   protocol_version=v.integer(doc.get("protocol_version")),
                   target_precision=v.number(doc.get("target_precision")),
                   min_covered=v.integer(doc.get("min_covered")),
                   grid=tuple(g for g in grid if v.number(g) is not None) if isinstance(grid, list) else (),
                   thresholds={qid: {locale: TunedThreshold.from_json(t) for locale, t in v.mapping(per).items()}
                               for qid, per in v.mapping(doc.get("thresholds")).items()},
                   frozen=Freeze.from_json(doc["frozen"]) if isinstance(doc.get("frozen"), Mapping) else None,
                   order=tuple(doc), extra=v.extra_keys(doc, cls.KEYS))

    def to_json(self) -> dict[str, Any]:
        identity = self.identity_json()
        known = {"kind": self.kind, "protocol_version": self.protocol_version, "split": identity.pop("split"),
                 **identity, "target_precision": self.target_precision, "min_covered": self.min_covered,
                 "grid": list(self.grid),
                 "thresholds": {qid: {locale: t.to_json() for locale, t in per.items()}
                                for qid, per in self.thresholds.items()}}
        if self.frozen is not None:
            known["frozen"] = self.frozen.to_json()
        return v.emit(known, self.order, self.extra)

    def threshold(self, qid: str, locale: str) -> TunedThreshold | None:
        return self.thresholds.get(qid, {}).get(locale)

    def write(self, path: Path) -> Path:
        write_json(path, self.to_json())
        return path


@dataclass(frozen=True, slots=True)
class SampleAnswer:
    """One question of one sample: the gold label, and the decision (None: no usable answer)."""

    gold: str | None
    decision: str | None
    probability: float | None = None
    probabilities: Mapping[str, float] | None = None  # label -> probability ("true"/"false" for a noul)
    correct: bool | None = None

    @classmethod
    def from_json(cls, doc: Any) -> SampleAnswer:
        doc = v.mapping(doc)
        probabilities = doc.get("probabilities")
        return cls(v.string(doc.get("gold")), v.string(doc.get("decision")), v.number(doc.get("probability")),
                   ({label: p for label, p in probabilities.items() if v.number(p) is not None}
                    if isinstance(probabilities, Mapping) else None),
                   v.flag(doc.get("correct")))

    def to_json(self) -> dict[str, Any]:
        if self.decision is None:
            return {"gold": self.gold, "decision": None}
        return {"gold": self.gold, "decision": self.decision, "probability": self.probability,
                "probabilities": dict(self.probabilities or {}), "correct": self.correct}


@dataclass(frozen=True)
class SampleLine:
    """A line of results/<backend>/<pack>.results.<split>.jsonl: one sample's answers, no state."""

    id: str | None
    locale: str | None  # "all" for a case without a locale
    tags: tuple[str, ...]
    error: str | None  # the failed call's code (HTTP 500, timeout, misfit, ...); None when answered
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    answers: Mapping[str, SampleAnswer]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SampleLine:
        return cls(v.string(doc.get("id")), v.string(doc.get("locale")), v.strings(doc.get("tags")),
                   v.string(doc.get("error")), v.number(doc.get("latency_ms")), v.integer(doc.get("input_tokens")),
                   v.integer(doc.get("output_tokens")),
                   {qid: SampleAnswer.from_json(a) for qid, a in v.mapping(doc.get("answers")).items()})

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "locale": self.locale, "tags": list(self.tags), "error": self.error,
                "latency_ms": self.latency_ms, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "answers": {qid: a.to_json() for qid, a in self.answers.items()}}

    def dumps(self) -> str:
        """The line as the file holds it: sorted keys, UTF-8 as is, a final newline."""
        return json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True) + "\n"


def write_samples(path: Path, lines: tuple[SampleLine, ...] | list[SampleLine]) -> Path:
    atomic_write(path, "".join(line.dumps() for line in lines).encode("utf-8"))
    return path


def read_samples(path: Path, error: type[JevError] = FormatError,
                 fix: str = "re-run the protocol run that wrote it") -> list[SampleLine]:
    return [SampleLine.from_json(doc) for _, doc in read_lines(path, error, fix)]


COMPARED = ("threshold", "coverage", "selective_precision", "brier", "ece_10_equal_width", "samples",
            "failures_by_code")


@dataclass(frozen=True)
class ComparedSlice:
    """The part of a report's slice a comparison keeps."""

    threshold: float | None
    coverage: Rate
    selective_precision: Rate
    brier: float | None
    ece_10_equal_width: float | None
    samples: SliceSamples
    failures_by_code: Mapping[str, int]

    @classmethod
    def of(cls, s: ReportSlice) -> ComparedSlice:
        return cls(s.threshold, s.coverage, s.selective_precision, s.brier, s.ece_10_equal_width, s.samples,
                   s.failures_by_code)

    @classmethod
    def from_json(cls, doc: Any) -> ComparedSlice:
        return cls.of(ReportSlice.from_json(doc))

    def to_json(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "coverage": self.coverage.to_json(),
                "selective_precision": self.selective_precision.to_json(), "brier": self.brier,
                "ece_10_equal_width": self.ece_10_equal_width, "samples": self.samples.to_json(),
                "failures_by_code": dict(self.failures_by_code)}


@dataclass(frozen=True)
class ComparedBackend:
    backend: str | None
    served_models: tuple[str, ...]
    report: str | None  # the merged report's path, as given to merge
    thresholds_source: str | None
    samples: ReportSamples
    questions: Mapping[str, Mapping[str, ComparedSlice]]  # qid -> locale -> slice

    @classmethod
    def of(cls, report: ProtocolReport, path: str) -> ComparedBackend:
        return cls(report.backend, report.served_models, path, report.thresholds_source,
                   report.samples,
                   {qid: {locale: ComparedSlice.of(s) for locale, s in q.locales.items()}
                    for qid, q in report.questions.items()})

    @classmethod
    def from_json(cls, doc: Any) -> ComparedBackend:
        doc = v.mapping(doc)
        return cls(v.string(doc.get("backend")), v.strings(doc.get("served_models")), v.string(doc.get("report")),
                   v.string(doc.get("thresholds_source")), ReportSamples.from_json(doc.get("samples")),
                   {qid: {locale: ComparedSlice.from_json(s) for locale, s in v.mapping(per).items()}
                    for qid, per in v.mapping(doc.get("questions")).items()})

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "served_models": list(self.served_models), "report": self.report,
                "thresholds_source": self.thresholds_source, "samples": self.samples.to_json(),
                "questions": {qid: {locale: s.to_json() for locale, s in per.items()}
                              for qid, per in self.questions.items()}}


AGREE = ("pack", "pack_version", "split", "dataset_sha256", "rubric", "protocol_version", "seed", "mode",
         "price_source")


@dataclass(frozen=True)
class Comparison(JsonFile):
    """results/comparisons/<pack>.<split>.json (`jev-packs merge`): held-out reports of several
    backends side by side, which agree on every field of AGREE."""

    READ_FIX: ClassVar[str] = "merge the reports again (jev-packs merge)"

    KIND: ClassVar[str] = "jev-packs comparison"

    kind: str | None = None
    pack: str | None = None
    pack_version: str | None = None
    split: str | None = None
    dataset_sha256: str | None = None
    rubric: str | None = None
    protocol_version: int | None = None
    seed: int | None = None
    mode: str | None = None
    backends: tuple[ComparedBackend, ...] = ()  # by backend name
    identity: RunIdentity | None = None  # the identity every merged report carries
    dataset: Dataset | None = None
    price_source: str | None = None  # every report's (merge never mixes sources)

    @classmethod
    def of(cls, reports: list[tuple[str, ProtocolReport]]) -> Comparison:
        """The comparison of reports that agree on AGREE and their identity (the caller checked)."""
        first = reports[0][1]
        return cls(cls.KIND, first.pack, first.pack_version, first.split, first.dataset_sha256, first.rubric,
                   first.protocol_version, first.seed, first.mode,
                   tuple(sorted((ComparedBackend.of(report, path) for path, report in reports),
                                key=lambda b: b.backend or "")), first.identity, first.dataset, first.price_source)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Comparison:
        backends = doc.get("backends")
        return cls(v.string(doc.get("kind")), v.string(doc.get("pack")), v.string(doc.get("pack_version")),
                   v.string(doc.get("split")), v.string(doc.get("dataset_sha256")), v.string(doc.get("rubric")),
                   v.integer(doc.get("protocol_version")), v.integer(doc.get("seed")), v.string(doc.get("mode")),
                   tuple(ComparedBackend.from_json(b) for b in backends) if isinstance(backends, list) else (),
                   identity_or_none(doc.get("identity")), dataset_or_none(doc.get("dataset")),
                   v.string(doc.get("price_source")))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
               "kind": self.kind, "pack": self.pack, "pack_version": self.pack_version, "split": self.split,
               "dataset_sha256": self.dataset_sha256, "rubric": self.rubric,
               "protocol_version": self.protocol_version, "seed": self.seed, "mode": self.mode,
               "backends": [b.to_json() for b in self.backends]}
        if self.identity is not None:  # a comparison of reports written before identities has none
            out.update(identity=self.identity.to_json(),
                       dataset=self.dataset.to_json() if self.dataset is not None else None,
                       price_source=self.price_source)
        return out

    def write(self, path: Path) -> Path:
        write_json(path, self.to_json())
        return path


@dataclass(frozen=True)
class ProtocolRun:
    """A protocol run inside --jev-json's run object (`protocol`): its role, folder, the problems
    that refuse it, the report, the thresholds a tune run froze, and the per-sample lines."""

    role: str  # tune | heldout
    folder: str  # where its files are written (the recording's folder)
    problems: tuple[str, ...]  # check[protocol]: why the run is refused (no file is written then)
    report: ProtocolReport
    thresholds: Thresholds | None  # a tune run only
    results: tuple[SampleLine, ...]
    applied: str | None = None  # a held-out run: the sha256 of the frozen thresholds it applied, as read

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ProtocolRun:
        thresholds, results = doc.get("thresholds"), doc.get("results")
        return cls(str(doc.get("role")), str(doc.get("folder")), v.strings(doc.get("problems")),
                   ProtocolReport.from_json(v.mapping(doc.get("report"))),
                   Thresholds.from_json(thresholds) if isinstance(thresholds, Mapping) else None,
                   tuple(SampleLine.from_json(r) for r in results if isinstance(r, Mapping))
                   if isinstance(results, list) else (), v.string(doc.get("applied")))

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "folder": self.folder, "problems": list(self.problems),
                "report": self.report.to_json(),
                "thresholds": self.thresholds.to_json() if self.thresholds is not None else None,
                "results": [r.to_json() for r in self.results], "applied": self.applied}
