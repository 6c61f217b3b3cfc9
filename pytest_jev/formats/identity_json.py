"""The `identity` and `dataset` objects every results file, protocol report, thresholds file,
comparison and index.json entry carries (pytest_jev/identity.py computes them from a loaded pack).

`identity` is what a number depends on, hashed: pack and version, the split graded, what pack.yaml
says the numbers depend on (`content_sha256`: the questions as sent with their labels, and the
thresholds), the rubric fingerprint, the data files' sha256 and the protocol's settings (None for
a run outside the protocol). `sha256` is the hash of all of them: two numbers are comparable,
and a published number current, only when their identities agree (identity.compare says where
they do not). `dataset` is provenance, not part of the hash: the dataset's version (the pack's)
and its manifest (the sha256 of each file of the pack the numbers read, and of that listing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import values as v

PROTOCOL_VERSION = 1  # the evaluation protocol (SPEC.md, "The evaluation protocol")
GRID = (0.5, 0.99, 0.01)  # protocol 1's threshold grid: first, last, step


@dataclass(frozen=True, slots=True)
class ProtocolSettings:
    """How a protocol run chooses its thresholds: the protocol version, the target selective
    precision, the fewest decided samples a threshold needs, and the grid (first, last, step).
    Thresholds that come from pack.yaml (a pack without a tune split) have no target, minimum
    or grid: they are part of the pack's content instead."""

    version: int | None
    target_precision: float | None = None
    min_covered: int | None = None
    grid: tuple[float, ...] | None = None

    @classmethod
    def from_json(cls, doc: Any) -> ProtocolSettings:
        doc = v.mapping(doc)
        grid = doc.get("grid")
        return cls(v.integer(doc.get("version")), v.number(doc.get("target_precision")),
                   v.integer(doc.get("min_covered")),
                   tuple(g for g in grid if v.number(g) is not None) if isinstance(grid, list) else None)

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "target_precision": self.target_precision, "min_covered": self.min_covered,
                "grid": list(self.grid) if self.grid is not None else None}


@dataclass(frozen=True)
class Identity:
    """What a number depends on (see the module docstring); `sha256` hashes every other field."""

    sha256: str | None
    pack: str | None
    pack_version: str | None
    split: str | None  # "" for a pack without splits
    content_sha256: str | None  # pack.yaml's questions as sent, their labels, its thresholds
    rubric: str | None
    data: Mapping[str, str] = field(default_factory=dict)  # data file name -> sha256 of its bytes
    protocol: ProtocolSettings | None = None  # None: a run outside the protocol

    @classmethod
    def from_json(cls, doc: Any) -> Identity:
        doc = v.mapping(doc)
        protocol = doc.get("protocol")
        return cls(v.string(doc.get("sha256")), v.string(doc.get("pack")), v.string(doc.get("pack_version")),
                   v.string(doc.get("split")), v.string(doc.get("content_sha256")), v.string(doc.get("rubric")),
                   {name: sha for name, sha in v.mapping(doc.get("data")).items() if isinstance(sha, str)},
                   ProtocolSettings.from_json(protocol) if isinstance(protocol, Mapping) else None)

    def hashed(self) -> dict[str, Any]:
        """Every field but `sha256`: what `sha256` is the hash of (identity.py)."""
        return {"pack": self.pack, "pack_version": self.pack_version, "split": self.split,
                "content_sha256": self.content_sha256, "rubric": self.rubric, "data": dict(self.data),
                "protocol": self.protocol.to_json() if self.protocol is not None else None}

    def to_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, **self.hashed()}


@dataclass(frozen=True)
class Dataset:
    """The dataset the numbers read (provenance, not hashed into the identity): its version (the
    pack's), each file's sha256 (pack.yaml and the case or split files) and `manifest_sha256`,
    the sha256 of their `sha256sum` listing sorted by file name."""

    version: str | None
    manifest_sha256: str | None
    files: Mapping[str, str] = field(default_factory=dict)  # file name -> sha256 of its bytes

    @classmethod
    def from_json(cls, doc: Any) -> Dataset:
        doc = v.mapping(doc)
        return cls(v.string(doc.get("version")), v.string(doc.get("manifest_sha256")),
                   {name: sha for name, sha in v.mapping(doc.get("files")).items() if isinstance(sha, str)})

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "manifest_sha256": self.manifest_sha256, "files": dict(self.files)}


def identity_or_none(doc: Any) -> Identity | None:
    """The `identity` object of a file, None when it has none (a file written before identities)."""
    return Identity.from_json(doc) if isinstance(doc, Mapping) else None


def dataset_or_none(doc: Any) -> Dataset | None:
    return Dataset.from_json(doc) if isinstance(doc, Mapping) else None
