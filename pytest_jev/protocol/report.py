"""The report of a protocol run (report.<split>.json): selective metrics per question and
locale, per tag within a locale, with the run's identity, as a ProtocolReport.

Its shape is pytest_jev/formats/schema/protocol-report.schema.json, which `jev-packs merge`
validates every input against before it merges anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..formats.identity_json import PROTOCOL_VERSION
from ..formats.protocol_json import ProtocolReport, Thresholds, TunedThreshold
from ..packs.model import Pack
from .samples import Sample
from .selective import NEVER, metrics, tune
from .thresholds import HELDOUT, TUNE

KIND = ProtocolReport.KIND
MOCK_NOTE = ("mock: a seeded oracle answered from the gold labels; these numbers only show that the harness "
             "works and say nothing about any model")


def _applied(entry: TunedThreshold | None) -> float:
    """The cut a tuned entry sets: its threshold, or NEVER when tuning reached no target (or the
    tune split had no sample of that locale): a threshold nobody tuned is never applied."""
    if entry is None or entry.threshold is None:
        return NEVER
    return float(entry.threshold)


def by_locale(samples: Sequence[Sample]) -> dict[str, list[Sample]]:
    out: dict[str, list[Sample]] = {}
    for sample in samples:
        out.setdefault(sample.locale, []).append(sample)
    return dict(sorted(out.items()))


def tune_all(pack: Pack, samples: Sequence[Sample], target: float, min_covered: int
             ) -> dict[str, dict[str, TunedThreshold]]:
    """Thresholds per question and locale, fitted on these (tune) samples."""
    groups = by_locale(samples)
    return {qid: {locale: tune(group, qid, target, min_covered) for locale, group in groups.items()}
            for qid in pack.questions}


def pack_thresholds(pack: Pack) -> dict[str, float | None]:
    """A question's threshold that belongs to the pack (pack.yaml `thresholds`): for a yes/no
    question the lower of its two floors (the cut is symmetric), else the lowest label floor."""
    out: dict[str, float | None] = {}
    for qid in pack.questions:
        floors = list(pack.thresholds.get(qid, {}).values())
        out[qid] = min(floors) if floors else None
    return out


def build(identity: Mapping[str, Any], pack: Pack, samples: Sequence[Sample],
          thresholds: Mapping[str, Mapping[str, float | None]], source: str,
          price: tuple[float | None, float | None]) -> ProtocolReport:
    """The report: identity, sample counts, and per question x locale (and tag) selective metrics at
    the thresholds applied (question -> locale -> threshold; a locale missing uses no cut)."""
    groups = by_locale(samples)
    tagged = {locale: {tag: [s for s in group if tag in s.tags] for tag in sorted({t for s in group for t in s.tags})}
              for locale, group in groups.items()}  # locale -> tag -> its samples, the same for every question
    questions: dict[str, Any] = {}
    for qid, question in pack.questions.items():
        labels = list(question.labels)
        locales = {}
        for locale, group in groups.items():
            t = thresholds.get(qid, {}).get(locale)
            entry = metrics(group, qid, question.type, labels, t, price)
            entry["tags"] = {tag: metrics(subset, qid, question.type, labels, t, price)
                             for tag, subset in tagged[locale].items()}
            locales[locale] = entry
        questions[qid] = {"type": question.type, "labels": labels, "locales": locales}
    failed = sum(1 for s in samples if s.error is not None)
    doc = {"kind": KIND, **identity, "protocol_version": PROTOCOL_VERSION, "thresholds_source": source,
           "samples": {"total": len(samples), "failed": failed, "answered": len(samples) - failed,
                       "locales": {loc: len(group) for loc, group in groups.items()}},
           "questions": questions}
    if identity.get("mode") == "mock":
        doc["note"] = MOCK_NOTE
    return ProtocolReport.from_json(doc)


def thresholds_for(role: str, pack: Pack, samples: Sequence[Sample], frozen: Thresholds | None,
                   tuned: Mapping[str, Mapping[str, TunedThreshold]] | None
                   ) -> tuple[dict[str, dict[str, float | None]], str]:
    """(question -> locale -> threshold, where they come from) for a run of this role."""
    locales = sorted({s.locale for s in samples})
    if role == TUNE and tuned is not None:
        return ({qid: {loc: _applied(entry) for loc, entry in per.items()} for qid, per in tuned.items()},
                "tuned on this split")
    if role == HELDOUT and frozen is not None:
        return ({qid: {loc: _applied(frozen.threshold(qid, loc)) for loc in locales} for qid in pack.questions},
                "frozen thresholds.json of the tune run")
    own = pack_thresholds(pack)
    return {qid: dict.fromkeys(locales, own[qid]) for qid in pack.questions}, "pack.yaml thresholds"
