"""A line of `jev-packs harvest`'s <pack>.harvest.jsonl (HarvestRow): one (case, question) where
the backends disagree (`split`) or all agree on a label that is not the gold (`all-wrong`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import values as v

DECIDED = "decided"


@dataclass(frozen=True, slots=True)
class HarvestVote:
    """One backend's reading of the answer: decided (with its label and probability), error, or unusable."""

    status: str | None  # decided | error | unusable
    decision: Any = None  # the decided label (a boolean for a noul question)
    probability: float | None = None  # rounded to 4 digits; None when not a finite number
    top2: tuple[tuple[str, float | None], ...] | None = None  # choice and score: the two most probable labels

    @classmethod
    def from_json(cls, doc: Any) -> HarvestVote:
        doc = v.mapping(doc)
        top2 = doc.get("top2")
        pairs = (tuple((str(p[0]), v.number(p[1])) for p in top2 if isinstance(p, list) and len(p) == 2)
                 if isinstance(top2, list) else None)
        return cls(v.string(doc.get("status")), doc.get("decision"), v.number(doc.get("probability")), pairs)

    def to_json(self) -> dict[str, Any]:
        if self.status != DECIDED:
            return {"status": self.status}
        out: dict[str, Any] = {"status": DECIDED, "decision": self.decision, "probability": self.probability}
        if self.top2:
            out["top2"] = [[label, p] for label, p in self.top2]
        return out


@dataclass(frozen=True)
class HarvestRow:
    kind: str | None  # all-wrong | split
    pack: str | None
    pack_version: str | None
    case_id: str | None
    split: str | None  # None: the pack declares no splits
    locale: str | None
    tags: tuple[str, ...]
    question: str | None
    type: str | None
    gold: Any  # the gold label as the case file holds it
    agreed_probability: float | None  # all-wrong: mean probability of the agreed label
    answers: Mapping[str, HarvestVote] = field(default_factory=dict)  # backend folder -> its vote
    state: Mapping[str, str] = field(default_factory=dict)  # state field -> its first 200 characters

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> HarvestRow:
        return cls(v.string(doc.get("kind")), v.string(doc.get("pack")), v.string(doc.get("pack_version")),
                   v.string(doc.get("case_id")), v.string(doc.get("split")), v.string(doc.get("locale")),
                   v.strings(doc.get("tags")), v.string(doc.get("question")), v.string(doc.get("type")),
                   doc.get("gold"), v.number(doc.get("agreed_probability")),
                   {folder: HarvestVote.from_json(vote) for folder, vote in v.mapping(doc.get("answers")).items()},
                   {name: str(text) for name, text in v.mapping(doc.get("state")).items()})

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "pack": self.pack, "pack_version": self.pack_version, "case_id": self.case_id,
                "split": self.split, "locale": self.locale, "tags": list(self.tags), "question": self.question,
                "type": self.type, "gold": self.gold, "agreed_probability": self.agreed_probability,
                "answers": {folder: vote.to_json() for folder, vote in self.answers.items()},
                "state": dict(self.state)}

    def dumps(self) -> str:
        """The line as the file holds it: in its own key order, UTF-8 as is, a final newline."""
        return json.dumps(self.to_json(), ensure_ascii=False) + "\n"
