"""index.json: the registry's list of packs (RegistryIndex), derived from packs/ and results/.

Ours: `spec`, `kind`, `updated` (the newest recording's day), and per pack its id, version,
path, license, status (verified | provisional), evidence, pinned model, spec version, splits,
locales, number of cases, question types and the backend folders with results for it.
jevassert's index has the first six keys of each pack only; both read alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..fileio import atomic_write
from . import values as v
from .identity_json import Dataset, dataset_or_none
from .run_json import dumps
from .schemas import JsonFile


@dataclass(frozen=True, slots=True)
class IndexBackend:
    """A backend folder with results for a pack."""

    id: str | None
    models: tuple[str, ...]  # the models its results name
    pack_versions: tuple[str, ...]  # the pack versions they were recorded on
    mode: str | None  # live | mock | mixed
    current: bool | None  # every results file's identity is the pack's as it is (identity.compare)

    @classmethod
    def from_json(cls, doc: Any) -> IndexBackend:
        doc = v.mapping(doc)
        return cls(v.string(doc.get("id")), v.strings(doc.get("models")), v.strings(doc.get("pack_versions")),
                   v.string(doc.get("mode")), v.flag(doc.get("current")))

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "models": list(self.models), "pack_versions": list(self.pack_versions),
                "mode": self.mode, "current": self.current}


@dataclass(frozen=True)
class IndexEntry:
    """One pack of the registry."""

    KEYS: ClassVar[tuple[str, ...]] = ("id", "version", "path", "license", "status", "evidence", "tested", "spec",
                                       "splits", "locales", "cases", "questions", "backends", "identities", "dataset")

    id: str | None = None
    version: str | None = None
    path: str | None = None
    license: str | None = None
    status: str | None = None  # verified | provisional
    evidence: str | None = None  # evidence.md of the pinned model, when it exists
    tested: str | None = None  # the pinned model
    spec: int | None = None
    splits: tuple[str, ...] = ()  # declared splits, in pack order
    locales: tuple[str, ...] = ()
    cases: int | None = None
    questions: Mapping[str, str] = field(default_factory=dict)  # question id -> type, in pack order
    backends: tuple[IndexBackend, ...] = ()
    identities: Mapping[str, str] | None = None  # split ("" without splits) -> identity.sha256 of a plain run
    dataset: Dataset | None = None  # the dataset's version and manifest
    order: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> IndexEntry:
        backends = doc.get("backends")
        return cls(v.string(doc.get("id")), v.string(doc.get("version")), v.string(doc.get("path")),
                   v.string(doc.get("license")), v.string(doc.get("status")), v.string(doc.get("evidence")),
                   v.string(doc.get("tested")), v.integer(doc.get("spec")), v.strings(doc.get("splits")),
                   v.strings(doc.get("locales")), v.integer(doc.get("cases")),
                   {qid: str(kind) for qid, kind in v.mapping(doc.get("questions")).items()},
                   tuple(IndexBackend.from_json(b) for b in backends) if isinstance(backends, list) else (),
                   ({split: sha for split, sha in doc["identities"].items() if isinstance(sha, str)}
                    if isinstance(doc.get("identities"), Mapping) else None),
                   dataset_or_none(doc.get("dataset")), tuple(doc), v.extra_keys(doc, cls.KEYS))

    def to_json(self) -> dict[str, Any]:
        known: dict[str, Any] = {
            "id": self.id, "version": self.version, "path": self.path, "license": self.license,
            "status": self.status, "evidence": self.evidence, "tested": self.tested, "spec": self.spec,
            "splits": list(self.splits), "locales": list(self.locales), "cases": self.cases,
            "questions": dict(self.questions), "backends": [b.to_json() for b in self.backends]}
        if self.identities is not None:  # jevassert's index has neither
            known["identities"] = dict(self.identities)
        if self.dataset is not None:
            known["dataset"] = self.dataset.to_json()
        return v.emit(known, self.order, self.extra)


@dataclass(frozen=True)
class RegistryIndex(JsonFile):
    """index.json."""

    READ_FIX: ClassVar[str] = "regenerate it with `jev-packs refresh` (or `jev-packs index`)"

    KEYS: ClassVar[tuple[str, ...]] = ("spec", "kind", "updated", "packs")
    KIND: ClassVar[str] = "jev-packs registry"

    spec: int | None = 0
    kind: str | None = KIND
    updated: str | None = None  # the newest results file's recorded_at
    packs: tuple[IndexEntry, ...] = ()
    order: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> RegistryIndex:
        packs = doc.get("packs")
        return cls(v.integer(doc.get("spec")), v.string(doc.get("kind")), v.string(doc.get("updated")),
                   tuple(IndexEntry.from_json(p) for p in packs if isinstance(p, Mapping))
                   if isinstance(packs, list) else (),
                   tuple(doc), v.extra_keys(doc, cls.KEYS))

    def to_json(self) -> dict[str, Any]:
        return v.emit({"spec": self.spec, "kind": self.kind, "updated": self.updated,
                       "packs": [p.to_json() for p in self.packs]}, self.order, self.extra)

    def dumps(self) -> str:
        return dumps(self.to_json())

    def entry(self, pack_id: str) -> IndexEntry | None:
        return next((p for p in self.packs if p.id == pack_id), None)

    def write(self, path: Path) -> Path:
        atomic_write(path, self.dumps().encode("utf-8"))
        return path
