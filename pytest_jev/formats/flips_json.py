"""A flip report: two recordings of one pack graded on the same cases and questions, item by
item (`--jev-baseline`, `jev-packs flips`, results/flips/<current>/<pack>[.<split>].json).

Per (case, question) both recordings answered, the item is both right, both wrong, fixed
(baseline wrong, now right) or regressed (baseline right, now wrong). The report holds the
counts, the paired accuracy difference with its case-resampled bootstrap interval, the exact
McNemar p-value, the cases only one recording has (named, never dropped), every regressed and
fixed item, and the power: the smallest difference a pack of this size can find (stats.py).
The same object is the `flips` key of a --jev-json run and the whole of a results/flips file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..fileio import atomic_write
from . import values as v
from .schemas import JsonFile

KIND = "jev-packs flips"
KEYS = ("kind", "pack", "version", "split", "rubric", "current", "baseline", "items", "both_right", "both_wrong",
        "fixed", "regressed", "regression_rate", "current_accuracy", "baseline_accuracy", "accuracy_delta",
        "accuracy_delta_ci", "bootstrap_resamples", "seed", "mcnemar_p", "only_current", "only_baseline",
        "unpaired_items", "power", "regressed_items", "fixed_items")


@dataclass(frozen=True, slots=True)
class Side:
    """One of the two recordings: its name (the backend, or the recording as given), the
    recording as the user reads it, and its sha256."""

    name: str
    recording: str
    sha256: str

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Side:
        return cls(v.string(doc.get("name")) or "", v.string(doc.get("recording")) or "",
                   v.string(doc.get("sha256")) or "")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "recording": self.recording, "sha256": self.sha256}


@dataclass(frozen=True, slots=True)
class FlipItem:
    """One item whose verdict changed: the gold label, each recording's decision and its
    decision probability, and an excerpt of the case's state."""

    case: str
    question: str
    expected: Any
    baseline: Any
    baseline_probability: float
    current: Any
    current_probability: float
    state: str

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> FlipItem:
        return cls(v.string(doc.get("case")) or "", v.string(doc.get("question")) or "", doc.get("expected"),
                   doc.get("baseline"), v.number(doc.get("baseline_probability")) or 0.0, doc.get("current"),
                   v.number(doc.get("current_probability")) or 0.0, v.string(doc.get("state")) or "")

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case, "question": self.question, "expected": self.expected, "baseline": self.baseline,
                "baseline_probability": self.baseline_probability, "current": self.current,
                "current_probability": self.current_probability, "state": self.state}


@dataclass(frozen=True, slots=True)
class Power:
    """How big an accuracy difference the comparison could find (stats.py): at `power` (0.8),
    two-sided `alpha` (0.05), the exact McNemar test on the effective items, which are the
    paired items over the design effect (items of a case flip together). `source` says where
    the discordance comes from: `observed` (these two recordings), or `default` (assumed)."""

    cases: int
    items_per_case: float
    discordance: float
    design_effect: float
    effective_items: int
    detectable_difference: float | None  # None: no difference up to the discordance is found that often
    power: float
    alpha: float
    source: str

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Power:
        return cls(v.integer(doc.get("cases")) or 0, v.number(doc.get("items_per_case")) or 0.0,
                   v.number(doc.get("discordance")) or 0.0, v.number(doc.get("design_effect")) or 1.0,
                   v.integer(doc.get("effective_items")) or 0, v.number(doc.get("detectable_difference")),
                   v.number(doc.get("power")) or 0.0, v.number(doc.get("alpha")) or 0.0,
                   v.string(doc.get("source")) or "")

    def to_json(self) -> dict[str, Any]:
        return {"cases": self.cases, "items_per_case": self.items_per_case, "discordance": self.discordance,
                "design_effect": self.design_effect, "effective_items": self.effective_items,
                "detectable_difference": self.detectable_difference, "power": self.power, "alpha": self.alpha,
                "source": self.source}


@dataclass(frozen=True)
class FlipReport(JsonFile):
    """Two recordings of one pack (split), compared item by item (see the module docstring)."""

    READ_FIX: ClassVar[str] = "regenerate it (jev-packs refresh)"

    pack: str
    version: str
    split: str  # "" for a pack without splits (null in the file)
    rubric: str  # the pack's rubric fingerprint: both recordings were made for this wording
    current: Side
    baseline: Side
    items: int  # items both recordings answered
    both_right: int
    both_wrong: int
    fixed: int  # baseline wrong, now right
    regressed: int  # baseline right, now wrong
    regression_rate: float | None  # regressed / items the baseline had right
    current_accuracy: float | None  # on the paired items
    baseline_accuracy: float | None
    accuracy_delta: float | None  # current - baseline, on the paired items
    accuracy_delta_ci: tuple[float, float] | None  # paired bootstrap over cases (None: bootstrap off)
    bootstrap_resamples: int
    seed: int
    mcnemar_p: float  # exact, two-sided, on the items (fixed vs regressed)
    only_current: tuple[str, ...]  # cases with a line in the current recording only
    only_baseline: tuple[str, ...]  # cases with a line in the baseline only
    unpaired_items: int  # items of cases both have that only one recording answered usably
    power: Power
    regressed_items: tuple[FlipItem, ...] = ()
    fixed_items: tuple[FlipItem, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys this model does not name, as read

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> FlipReport:
        def items(key: str) -> tuple[FlipItem, ...]:
            found = doc.get(key)
            return tuple(FlipItem.from_json(x) for x in found if isinstance(x, Mapping)) if isinstance(
                found, list) else ()

        count = {key: v.integer(doc.get(key)) or 0 for key in ("items", "both_right", "both_wrong", "fixed",
                                                               "regressed", "bootstrap_resamples", "seed",
                                                               "unpaired_items")}
        return cls(
            pack=v.string(doc.get("pack")) or "", version=v.string(doc.get("version")) or "",
            split=v.string(doc.get("split")) or "", rubric=v.string(doc.get("rubric")) or "",
            current=Side.from_json(v.mapping(doc.get("current"))),
            baseline=Side.from_json(v.mapping(doc.get("baseline"))),
            regression_rate=v.number(doc.get("regression_rate")),
            current_accuracy=v.number(doc.get("current_accuracy")),
            baseline_accuracy=v.number(doc.get("baseline_accuracy")),
            accuracy_delta=v.number(doc.get("accuracy_delta")), accuracy_delta_ci=v.pair(doc.get("accuracy_delta_ci")),
            mcnemar_p=v.number(doc.get("mcnemar_p")) or 0.0, only_current=v.strings(doc.get("only_current")),
            only_baseline=v.strings(doc.get("only_baseline")), power=Power.from_json(v.mapping(doc.get("power"))),
            regressed_items=items("regressed_items"), fixed_items=items("fixed_items"),
            extra=v.extra_keys(doc, KEYS), **count)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": KIND, "pack": self.pack, "version": self.version, "split": self.split or None,
            "rubric": self.rubric, "current": self.current.to_json(), "baseline": self.baseline.to_json(),
            "items": self.items, "both_right": self.both_right, "both_wrong": self.both_wrong, "fixed": self.fixed,
            "regressed": self.regressed, "regression_rate": self.regression_rate,
            "current_accuracy": self.current_accuracy, "baseline_accuracy": self.baseline_accuracy,
            "accuracy_delta": self.accuracy_delta, "accuracy_delta_ci": v.listed(self.accuracy_delta_ci),
            "bootstrap_resamples": self.bootstrap_resamples, "seed": self.seed, "mcnemar_p": self.mcnemar_p,
            "only_current": list(self.only_current), "only_baseline": list(self.only_baseline),
            "unpaired_items": self.unpaired_items, "power": self.power.to_json(),
            "regressed_items": [x.to_json() for x in self.regressed_items],
            "fixed_items": [x.to_json() for x in self.fixed_items], **self.extra,
        }

    def dumps(self) -> str:
        """The results/flips file's text: the format's key order, two-space indent, UTF-8 as is,
        a final newline."""
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"

    def write(self, path: Path) -> Path:
        atomic_write(path, self.dumps().encode("utf-8"))
        return path
