"""The pack as immutable data: what the loader returns and everything else reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..contract import AnswerSpec

ABSTAIN = "unknown"
QUESTION_TYPES = ("noul", "choice", "score")
DEFAULT_MODEL = "jev-latest"


def frozen_map(data: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(data or {}))


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    type: str  # noul | choice | score
    instructions: str
    options: Mapping[str, str] = field(default_factory=frozen_map)  # choice: label -> meaning
    levels: tuple[str, ...] = ()  # score: low -> high
    level_descriptions: Mapping[str, str] = field(default_factory=frozen_map)
    # what an answer may hold (contract.py): its type and the keys of its `probabilities`
    answer_spec: AnswerSpec = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        keys = (list(self.options) if self.type == "choice" else
                [str(i) for i in range(len(self.levels))] if self.type == "score" else [])
        object.__setattr__(self, "answer_spec", AnswerSpec.make(self.id, self.type, keys))

    @property
    def labels(self) -> tuple[str, ...]:
        """Every label an answer may carry, as strings ("true"/"false" for noul)."""
        if self.type == "noul":
            return ("true", "false")
        if self.type == "choice":
            return tuple(self.options)
        return self.levels

    def as_sent(self) -> dict[str, Any]:
        """The question exactly as a System One request carries it.

        The single source of the wire form: request bodies, request fingerprints
        and (later) rubric fingerprints all come from here, so they cannot disagree.
        Score levels go as an ordered list of their descriptions (the label when a
        level has none), lowest first, as SPEC rule 5 and jevassert do.
        """
        if self.type == "noul":
            return {"type": "noul", "instructions": self.instructions}
        if self.type == "choice":
            return {"type": "choice", "instructions": self.instructions,
                    "criteria": dict(self.options)}
        return {"type": "score", "instructions": self.instructions,
                "criteria": [self.level_descriptions.get(level, level) for level in self.levels]}


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    state: Mapping[str, Any]
    expect: Mapping[str, Any]  # question id -> gold label, in the order of the JSON line
    line: int  # 1-based line in its case file
    locale: str | None = None  # BCP 47 (spec 1)
    tags: tuple[str, ...] = ()  # kebab-case words (spec 1)


@dataclass(frozen=True, slots=True)
class Split:
    """A case file: a frozen split pack.yaml declares (sha256 and line count), or the one
    implicit split of a pack without splits (name "", file cases.jsonl, nothing declared)."""

    name: str
    file: Path
    cases: tuple[Case, ...]
    declared_sha256: str | None
    declared_lines: int | None
    sha256: str  # of the file's bytes as read
    lines: int

    @property
    def shown(self) -> str:
        return self.name or self.file.name

    def frozen_problem(self) -> str | None:
        """Why this split is not the file that was frozen (None when it is, or nothing is declared)."""
        if self.declared_sha256 is None:
            return None
        if self.sha256 == self.declared_sha256 and self.lines == self.declared_lines:
            return None
        return (f"{self.file}: frozen split '{self.name}' changed: Expected sha256 {self.declared_sha256} "
                f"({self.declared_lines} lines), Got {self.sha256} ({self.lines} lines); a frozen split is "
                "never edited: publish a new pack version with a new split file (and its sha256 and line "
                "count in pack.yaml)")


@dataclass(frozen=True, slots=True)
class Gates:
    """gates.yaml as declared; `declared` keeps the file's order for item names."""

    values: Mapping[str, Any] = field(default_factory=frozen_map)
    lines: Mapping[str, int] = field(default_factory=frozen_map)  # gate name -> line in gates.yaml

    def names(self) -> tuple[str, ...]:
        """One name per gate check, e.g. min_accuracy, per_question.queue.max_ece."""
        out: list[str] = []
        for key, value in self.values.items():
            if key == "per_question":
                for qid, spec in value.items():
                    out.extend(f"per_question.{qid}.{name}" for name in spec)
            else:
                out.append(key)
        return tuple(out)


@dataclass(frozen=True, slots=True)
class Pack:
    path: Path
    id: str
    version: str
    license: str
    tested: str | None
    description: str
    state_description: str
    state_fields: tuple[str, ...]
    questions: Mapping[str, Question]
    thresholds: Mapping[str, Mapping[str, float]]
    gates: Gates
    cases: tuple[Case, ...]
    warnings: tuple[str, ...] = ()
    spec: int = 0
    splits: Mapping[str, Split] = field(default_factory=frozen_map)  # "" alone: no declared splits
    rubric_pin: str | None = None  # pack.yaml `rubric:`, the expected rubric fingerprint
    file_sha256: str = ""  # sha256 of pack.yaml's bytes as loaded (the dataset's manifest)
    case_ids: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "case_ids", frozenset(case.id for case in self.cases))

    @property
    def record_model(self) -> str:
        """Model to ask for when recording: the pinned version, else the alias."""
        return self.tested or DEFAULT_MODEL

    @property
    def pack_file(self) -> Path:
        return self.path / "pack.yaml"

    @property
    def gates_file(self) -> Path:
        return self.path / "gates.yaml"

    def questions_as_sent(self) -> dict[str, dict[str, Any]]:
        return {qid: q.as_sent() for qid, q in self.questions.items()}

    @property
    def declares_splits(self) -> bool:
        return "" not in self.splits

    @property
    def locales(self) -> tuple[str, ...]:
        return tuple(sorted({case.locale for case in self.cases if case.locale}))
