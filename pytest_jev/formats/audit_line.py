"""The files of a label audit (`jev-packs audit-sample`, `jev-packs audit-kappa`):

    <out>/blind.jsonl   BlindLine: a sampled case's id and state, never its gold labels
    <labels>.jsonl      LabelsLine: the annotator's labels, one line per case they labelled
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import values as v


@dataclass(frozen=True)
class BlindLine:
    """What the annotator sees of a case."""

    id: str
    state: Mapping[str, Any]  # the case's state fields, as the pack holds them

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> BlindLine:
        return cls(str(doc.get("id")), v.mapping(doc.get("state")))

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "state": dict(self.state)}

    def dumps(self) -> str:
        """The line without its line break: UTF-8 as is, keys as written."""
        return json.dumps(self.to_json(), ensure_ascii=False)


@dataclass(frozen=True)
class LabelsLine:
    """The labels an annotator gave one case: question id -> label (a boolean for a noul question)."""

    id: str
    labels: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> LabelsLine | None:
        """The line, or None when it is not {"id": ..., "labels": {...}}."""
        labels = doc.get("labels")
        if not isinstance(labels, dict):
            return None
        return cls(str(doc.get("id")), labels)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "labels": dict(self.labels)}
