"""Tune, then held-out: thresholds are fitted on the tune split only and frozen in a file that
the held-out run checks field by field before it uses a single one.

    results/<backend>/<pack>.thresholds.json      written by a tune run, never by anything else
    results/<backend>/<pack>.report.<split>.json  one per tune / held-out run
    results/<backend>/<pack>.results.<split>.jsonl

The guards, each an error with one line:
- the function that writes thresholds raises LeakageError unless its caller is a tune run;
- the first held-out run records the freeze in the thresholds file itself (`frozen`: the values
  are left as they are); from then on tuning again into that folder is refused, whatever other
  files are named. So is tuning into a folder holding a held-out report (even one that cannot be
  read: a thresholds file written before freezes were recorded has no `frozen`), or a thresholds
  file that cannot be read (it may be frozen: repair or move it);
- a held-out run compares the frozen file with the run through identity.compare: the identity
  of the tune split (pack, version, pack.yaml's content, rubric, data files, protocol settings),
  and mode, backend, the models that served the tune split, seed, pack and version, dataset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import JevError
from ..fileio import exists, json_sha256, loads, read_text

if TYPE_CHECKING:  # the protocol's file models load with the first protocol run (every session imports this)
    from ..formats.identity_json import Dataset, Identity
    from ..formats.protocol_json import Freeze, Thresholds, TunedThreshold
    from ..identity import Check

TUNE, HELDOUT = "tune", "heldout"
VALIDATED = ("pack", "pack_version", "mode", "backend", "served_models", "dataset_sha256", "rubric",
             "protocol_version", "seed")
TUNE_AGAIN = ("publish a new pack version (new splits) or record into another backend folder")


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


def freeze_of(folder: Path, pack_id: str) -> str | None:
    """Why the thresholds of `pack_id` in `folder` are frozen (None when they are not): the freeze
    the thresholds file records, a thresholds file that cannot be read, or a held-out report beside it."""
    from ..formats.protocol_json import Thresholds  # see the imports above

    path = thresholds_path(folder, pack_id)
    if exists(path):
        try:
            doc = loads(read_text(path, JevError))
        except (JevError, ValueError):
            doc = None
        if not isinstance(doc, dict):
            return f"{path} cannot be read, which counts as frozen (repair it or move it away)"
        frozen = Thresholds.from_json(doc).frozen
        if frozen is not None:
            return (f"{path} is frozen: the held-out split was evaluated with them ({frozen.by}, "
                    f"{frozen.report})")
    report = report_path(folder, pack_id, HELDOUT)
    if not exists(report):
        return None
    readable = ""
    try:
        loads(read_text(report, JevError))
    except (JevError, ValueError):
        readable = " (it cannot be read, which counts as frozen: repair it or move it away)"
    return f"{report} exists{readable}: the held-out split has been evaluated with the thresholds tuned here"


def retune_problem(folder: Path, pack_id: str) -> str | None:
    """Why tuning into `folder` is refused: its thresholds are frozen (freeze_of)."""
    why = freeze_of(folder, pack_id)
    if why is None:
        return None
    return f"{why}, so tuning again would make its numbers no longer held out; {TUNE_AGAIN}"


def write_thresholds(path: Path, doc: Thresholds, *, role: str | None) -> Path:
    """Write the frozen thresholds. Only a tune run may: anything else is a leakage error."""
    if role != TUNE or doc.split != TUNE:
        raise LeakageError(f"thresholds may only be written by a tune run; a {role or 'non-protocol'} run "
                           f"reached the code that writes {path}",
                           fix="thresholds are fitted on the tune split (--jev-tune), never on held-out data")
    return doc.write(path)


def applied_sha256(thresholds: Thresholds) -> str:
    """What a held-out run remembers of the thresholds it applied: the sha256 of the file's object."""
    return json_sha256(thresholds.to_json())


def record_freeze(path: Path, applied: str, freeze: Freeze) -> Path | None:
    """Record in the thresholds file that a held-out run applied them (once): the file as it was,
    every threshold and field unchanged, plus `frozen`. None when it already records a freeze, or
    the file is no longer the one the run applied (`applied`: applied_sha256; never rewritten
    behind a run)."""
    try:
        current = read_thresholds(path)
    except JevError:
        return None
    if current.frozen is not None or applied_sha256(current) != applied:
        return None
    order = (*current.order, "frozen") if current.order else ()
    return replace(current, frozen=freeze, order=order).write(path)


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


def frozen_check(thresholds: Thresholds, expected: Identity, facts: Mapping[str, Any], data_file: str) -> Check:
    """The frozen thresholds against the held-out run (identity.compare): the tune split's identity
    this run expects, and each fact of VALIDATED (name -> this run's value). A file written before
    identities is compared on the fields it holds."""
    from ..identity import compare, legacy  # a held-out run's: see the imports above

    doc = thresholds.to_json()
    found = thresholds.identity if thresholds.identity is not None else legacy(doc, data_file)
    return compare(expected, found, {name: (doc.get(name), value) for name, value in facts.items()})


def validation_problems(check: Check, path: Path) -> list[str]:
    """One line per field of the frozen thresholds that differs from this held-out run."""
    return [f"{path}: {line}; thresholds tuned under other conditions are not applied: tune again for these "
            "conditions (a new pack version, or the same backend, mode, model, seed and settings)"
            for line in check.lines("in the frozen thresholds", "in this held-out run")]


def thresholds_doc(run: Mapping[str, Any], tuned: Mapping[str, Mapping[str, TunedThreshold]], identity: Identity,
                   dataset: Dataset) -> Thresholds:
    """The frozen thresholds file of a tune run: the run's identity (its protocol settings are the
    procedure), per question and locale."""
    from ..formats.protocol_json import Thresholds  # a tune run's: see the imports above

    settings = identity.protocol
    assert settings is not None and settings.grid is not None  # a tune run's identity holds its settings
    return Thresholds.from_json({
        "kind": Thresholds.KIND, "protocol_version": settings.version, "split": TUNE,
        **{field: run[field] for field in VALIDATED if field != "protocol_version"},
        "target_precision": settings.target_precision, "min_covered": settings.min_covered,
        "grid": list(settings.grid),
        "thresholds": {qid: {locale: t.to_json() for locale, t in by_locale.items()}
                       for qid, by_locale in tuned.items()},
        "identity": identity.to_json(), "dataset": dataset.to_json()})
