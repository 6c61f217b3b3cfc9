"""Every number knows what it depends on: a run's identity, computed once per (pack, split,
protocol settings) from the loaded pack, and `compare`, the one function that says whether two
numbers are comparable or a published one is current.

The identity (formats/identity_json.py) hashes:
- the pack's id and version, and the split graded;
- `content_sha256`: what pack.yaml says the numbers depend on, as canonical JSON: each question
  exactly as a backend receives it (wording, options with their meanings, levels with their
  descriptions), its labels (options sorted, levels in order) and the pack's `thresholds`;
  not its description, license or other prose;
- `rubric`: the rubric fingerprint (rubric.py), the questions' wording alone, so that a
  difference can say "the wording changed" rather than "something in pack.yaml";
- `data`: the sha256 of every case or split file's bytes (all of a pack's splits: held-out
  numbers are read at thresholds fitted on the tune split);
- `protocol`: the protocol version and its settings (target precision, fewest decided samples,
  grid) for a protocol run; none for a plain run.

Not in it: who answered (backend, mode, served models: compared beside it where they matter,
as `facts`), the bootstrap seed (it moves intervals, not numbers: a results file compares those
itself), and the dataset's manifest (Dataset: the sha256 of pack.yaml's bytes too, so a typo
fixed in a description would make every number stale; it is recorded, not compared).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .fileio import json_sha256
from .formats.identity_json import GRID, PROTOCOL_VERSION, Dataset, Identity, ProtocolSettings
from .packs.model import Pack
from .rubric import rubric_fingerprint

# what each component of an identity is, for the lines that say which one differs
MEANING = {
    "pack": "the pack",
    "pack_version": "the pack version",
    "split": "the split",
    "content_sha256": "what pack.yaml says the numbers depend on (questions, options, levels, thresholds)",
    "rubric": "the questions' wording (rubric fingerprint)",
    "protocol.version": "the protocol version",
    "protocol.target_precision": "the target precision (--jev-target-precision)",
    "protocol.min_covered": "the fewest decided samples (--jev-min-covered)",
    "protocol.grid": "the threshold grid",
    "protocol": "whether the numbers come from a protocol run",
    "sha256": "the hash of the identity's components",
}


def content_sha256(pack: Pack) -> str:
    """sha256 of what pack.yaml says the numbers depend on (see the module docstring)."""
    questions = {qid: {"as_sent": q.as_sent(), "labels": list(q.levels) if q.type == "score" else sorted(q.labels)}
                 for qid, q in pack.questions.items()}
    thresholds = {qid: dict(floors) for qid, floors in pack.thresholds.items()}
    return json_sha256({"questions": questions, "thresholds": thresholds})


def data_files(pack: Pack) -> dict[str, str]:
    """Each case or split file's name and the sha256 of its bytes as loaded."""
    return {split.file.name: split.sha256 for split in pack.splits.values()}


def tuned_settings(target_precision: float, min_covered: int) -> ProtocolSettings:
    """The settings of thresholds tuned on a tune split (protocol 1: a fixed grid)."""
    return ProtocolSettings(PROTOCOL_VERSION, target_precision, min_covered, GRID)


def pack_settings() -> ProtocolSettings:
    """The settings of a protocol run whose thresholds are pack.yaml's (no tune split)."""
    return ProtocolSettings(PROTOCOL_VERSION)


def of(pack: Pack, split: str, protocol: ProtocolSettings | None = None, *, content: str | None = None) -> Identity:
    """The identity of a run of `pack`'s `split` (computed once per run: `content` may pass
    content_sha256(pack) when it is already known)."""
    body = Identity(None, pack.id, pack.version, split, content or content_sha256(pack),
                    rubric_fingerprint(pack.questions_as_sent()), data_files(pack), protocol)
    return Identity(json_sha256(body.hashed()), *_fields(body)[1:])


def _fields(identity: Identity) -> tuple[Any, ...]:
    return (identity.sha256, identity.pack, identity.pack_version, identity.split, identity.content_sha256,
            identity.rubric, identity.data, identity.protocol)


def dataset_of(pack: Pack) -> Dataset:
    """The dataset's version and manifest: pack.yaml's and every case or split file's sha256, and the
    sha256 of their `sha256sum` listing (`<hex>  <name>` lines sorted by name)."""
    files = {"pack.yaml": pack.file_sha256, **data_files(pack)}
    listing = "".join(f"{files[name]}  {name}\n" for name in sorted(files))
    return Dataset(pack.version, "sha256:" + hashlib.sha256(listing.encode("utf-8")).hexdigest(), files)


def components(identity: Identity) -> dict[str, Any]:
    """An identity's components by name (data.<file>, protocol.<setting>), as compared."""
    out: dict[str, Any] = {"pack": identity.pack, "pack_version": identity.pack_version, "split": identity.split,
                           "content_sha256": identity.content_sha256, "rubric": identity.rubric}
    out.update({f"data.{name}": digest for name, digest in identity.data.items()})
    protocol = identity.protocol
    out["protocol"] = None if protocol is None else "set"
    if protocol is not None:
        out.update({"protocol.version": protocol.version, "protocol.target_precision": protocol.target_precision,
                    "protocol.min_covered": protocol.min_covered,
                    "protocol.grid": list(protocol.grid) if protocol.grid is not None else None})
    return out


@dataclass(frozen=True)
class Difference:
    """One component (or fact: backend, mode, served models, ...) that differs."""

    field: str
    found: Any
    expected: Any

    @property
    def meaning(self) -> str | None:
        """What an identity component is, in words (None for a fact: its name says it)."""
        part = self.field.removeprefix("identity.")
        if part == self.field:
            return None
        return f"the bytes of {part[5:]}" if part.startswith("data.") else MEANING.get(part)

    def line(self, found_at: str, expected_at: str) -> str:
        """`<field> is <found> <found_at> but <expected> <expected_at>[ (<what it is>)]`, where each
        place says where ("here", "in the frozen thresholds")."""
        meaning = f" ({self.meaning})" if self.meaning else ""
        return (f"{self.field} is {json.dumps(self.found)} {found_at} but {json.dumps(self.expected)} "
                f"{expected_at}{meaning}")


@dataclass(frozen=True)
class Check:
    """What `compare` found: the differences, and the components the other side never recorded
    (a file written before identities: checked on what it holds, the rest said, never passed)."""

    differences: tuple[Difference, ...] = ()
    unrecorded: tuple[str, ...] = ()

    @property
    def same(self) -> bool:
        return not self.differences

    def lines(self, found_at: str, expected_at: str) -> list[str]:
        return [d.line(found_at, expected_at) for d in self.differences]


def compare(expected: Identity, found: Identity | Mapping[str, Any] | None,
            facts: Mapping[str, tuple[Any, Any]] | None = None) -> Check:
    """Whether `found` (a file's identity; or, for a file written before identities, its
    components as `legacy` gives them; or None) is `expected`, component by component, and each
    fact (name -> (found, expected): backend, mode, served models, ...) equal. The one comparison
    of identities: held-out thresholds, `jev-packs merge`, results files and index.json use it."""
    differences: list[Difference] = []
    unrecorded: list[str] = []
    if isinstance(found, Identity) and found.sha256 is not None and found.sha256 == expected.sha256:
        pass  # the same hash: every component is the same
    else:
        want = components(expected)
        have = components(found) if isinstance(found, Identity) else dict(found or {})
        for key in sorted(set(want) | {k for k in have if k.startswith("data.")}):
            if key not in have:
                unrecorded.append(f"identity.{key}")
            elif have[key] != want.get(key):
                differences.append(Difference(f"identity.{key}", have[key], want.get(key)))
        if isinstance(found, Identity) and not differences and found.sha256 != expected.sha256:
            differences.append(Difference("identity.sha256", found.sha256, expected.sha256))  # edited by hand
    for name, (got, wanted) in (facts or {}).items():
        if got != wanted:
            differences.append(Difference(name, got, wanted))
    return Check(tuple(differences), tuple(unrecorded))


def legacy(doc: Mapping[str, Any], data_file: str | None) -> dict[str, Any]:
    """The components a protocol file written before identities holds in its own fields (pack,
    version, rubric, protocol version and settings, and `dataset_sha256`: the sha256 of the split
    file `data_file`), for `compare`."""
    out: dict[str, Any] = {key: doc.get(key) for key in ("pack", "pack_version", "rubric") if key in doc}
    if "split" in doc:
        out["split"] = doc.get("split")
    if data_file is not None and "dataset_sha256" in doc:
        out[f"data.{data_file}"] = doc.get("dataset_sha256")
    if "protocol_version" in doc:
        out["protocol"] = "set"
        out["protocol.version"] = doc.get("protocol_version")
    for key in ("target_precision", "min_covered", "grid"):
        if key in doc:
            out[f"protocol.{key}"] = doc.get(key)
    return out
