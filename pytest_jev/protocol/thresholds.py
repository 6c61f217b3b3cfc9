"""Tune, then held-out: thresholds are fitted on the tune split only and frozen in a file that
the held-out run checks field by field before it uses a single one.

    results/<backend>/<pack>.thresholds.json      written by a tune run, never by anything else
    results/<backend>/<pack>.report.<split>.json  one per tune / held-out run
    results/<backend>/<pack>.results.<split>.jsonl

The guards, each an error with one line:
- the function that writes thresholds raises LeakageError unless its caller is a tune run;
- once a held-out report exists for the pack and backend (even one that cannot be read),
  tuning again into that folder is refused: its held-out numbers would no longer be held out;
- a held-out run validates the frozen file against the run (mode, backend, served models,
  dataset sha256 of the tune split, rubric, protocol version, seed, pack and version).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import JevError
from ..fileio import exists, loads, read_text
from . import PROTOCOL_VERSION

if TYPE_CHECKING:  # the protocol's file models load with the first protocol run (every session imports this)
    from ..formats.protocol_json import Thresholds, TunedThreshold

TUNE, HELDOUT = "tune", "heldout"
VALIDATED = ("pack", "pack_version", "mode", "backend", "served_models", "dataset_sha256", "rubric",
             "protocol_version", "seed")


class LeakageError(JevError):
    """Something other than a tune run reached the code that writes thresholds."""


def thresholds_path(folder: Path, pack_id: str) -> Path:
    return folder / f"{pack_id}.thresholds.json"


def report_path(folder: Path, pack_id: str, split: str) -> Path:
    return folder / f"{pack_id}.report.{split}.json"


def results_path(folder: Path, pack_id: str, split: str) -> Path:
    return folder / f"{pack_id}.results.{split}.jsonl"


def role_of(split: str) -> str | None:
    """The protocol role of a split by its name: tune, heldout, or none (not a protocol split)."""
    return split if split in (TUNE, HELDOUT) else None


def retune_problem(folder: Path, pack_id: str) -> str | None:
    """Why tuning into `folder` is refused: a held-out report exists there (readable or not)."""
    path = report_path(folder, pack_id, HELDOUT)
    if not exists(path):
        return None
    readable = ""
    try:
        loads(read_text(path, JevError))
    except (JevError, ValueError):
        readable = " (it cannot be read, which counts as frozen: repair it or move it away)"
    return (f"{path} exists{readable}: the held-out split has been evaluated with the thresholds tuned here, so "
            "tuning again would make its numbers no longer held out; publish a new pack version (new splits) "
            "or record into another backend folder")


def write_thresholds(path: Path, doc: Thresholds, *, role: str | None) -> Path:
    """Write the frozen thresholds. Only a tune run may: anything else is a leakage error."""
    if role != TUNE or doc.split != TUNE:
        raise LeakageError(f"thresholds may only be written by a tune run; a {role or 'non-protocol'} run "
                           f"reached the code that writes {path}",
                           fix="thresholds are fitted on the tune split (--jev-tune), never on held-out data")
    return doc.write(path)


def read_thresholds(path: Path) -> Thresholds:
    """The frozen thresholds of a tune run; JevError with one line when absent or unreadable."""
    from ..formats.protocol_json import Thresholds  # a held-out run's: see the imports above

    if not exists(path):
        raise JevError("no frozen thresholds: the tune split has not been tuned for this backend", file=path,
                       fix="run the tune split first: pytest <pack> --jev-tune --jev-backend=<backend>")
    try:
        doc = loads(read_text(path, JevError))
    except ValueError as exc:
        raise JevError(f"not valid JSON ({exc})", file=path, fix="re-run --jev-tune to write it again") from None
    if not isinstance(doc, dict) or doc.get("kind") != Thresholds.KIND:
        raise JevError("not a thresholds file of jev-packs", file=path, fix="re-run --jev-tune to write it again")
    return Thresholds.from_json(doc)


def validation_problems(thresholds: Thresholds, expected: Mapping[str, Any], path: Path) -> list[str]:
    """One line per field of the frozen thresholds that differs from this held-out run."""
    frozen = thresholds.to_json()
    out = []
    for field in VALIDATED:
        if frozen.get(field) != expected.get(field):
            out.append(f"{path}: {field} is {json.dumps(frozen.get(field))} in the frozen thresholds but "
                       f"{json.dumps(expected.get(field))} in this held-out run; thresholds tuned under other "
                       "conditions are not applied: tune again for these conditions (a new pack version, or "
                       "the same backend, mode, model and seed)")
    return out


def thresholds_doc(run: Mapping[str, Any], tuned: Mapping[str, Mapping[str, TunedThreshold]], target: float,
                   min_covered: int) -> Thresholds:
    """The frozen thresholds file of a tune run: the run's identity, the procedure, per question and locale."""
    from ..formats.protocol_json import Thresholds  # a tune run's: see the imports above

    return Thresholds.from_json({
        "kind": Thresholds.KIND, "protocol_version": PROTOCOL_VERSION, "split": TUNE,
        **{field: run[field] for field in VALIDATED if field != "protocol_version"},
        "target_precision": target, "min_covered": min_covered, "grid": [0.5, 0.99, 0.01],
        "thresholds": {qid: {locale: t.to_json() for locale, t in by_locale.items()}
                       for qid, by_locale in tuned.items()}})
