"""Preflight: every refusal a recording run can decide without an answer, decided before its
first call. A refused run calls nothing and writes nothing (nodes/record_selection.py runs this
for every selected pack before it records any).

The refusals, each one line naming the file and the fix:
- a frozen split whose bytes changed (the split's check[split] would refuse its numbers anyway);
- rubric drift: the pack pins a rubric fingerprint its questions no longer give;
- tuning into a folder whose thresholds are frozen (--jev-tune: protocol/thresholds.py);
- a held-out run whose frozen thresholds do not belong to it (missing, another pack version,
  data, wording, protocol settings, backend folder or mode): checked again, with the models that
  served, once the answers are in;
- asking again a case of an evaluated split (its recording is behind a held-out report: stale
  lines, error lines, --jev-record=all, cases never recorded): the report's numbers would no
  longer be those of its recording;
- keeping lines of the mock beside live ones (or the other way round) in one recording.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import JevError
from ..formats.identity_json import PROTOCOL_VERSION
from ..identity import of
from ..packs.model import Case, Pack
from ..record.plan import plan
from ..rubric import pin_problem
from .protocol_run import heldout_settings
from .thresholds import (
    HELDOUT,
    TUNE,
    freeze_of,
    frozen_check,
    read_thresholds,
    retune_problem,
    thresholds_path,
    validation_problems,
)


@dataclass(frozen=True)
class Recorder:
    """How a recording run would record: what preflight needs to know of it."""

    backend: str  # the backend kind (the recording lines' `backend`)
    mode: str  # live | mock: the lines it writes
    record_mode: str  # once | new_episodes | all | none
    model: str | None = None  # the model requests name (None: the pack's)
    shuffle_seed: int | None = None


def refusals(pack: Pack, recording: Path, recorder: Recorder, *, cases: Sequence[Case] | None = None,
             role: str | None = None, target_precision: float | None = None,
             min_covered: int | None = None) -> list[str]:
    """Why recording `cases` (default: all) of `pack` into `recording` is refused; [] when it is not."""
    chosen = {case.id for case in (pack.cases if cases is None else cases)}
    out: list[str] = []
    for split in pack.splits.values():
        if any(case.id in chosen for case in split.cases):
            problem = split.frozen_problem()
            if problem is not None:
                out.append(problem)
    pin = pin_problem(pack)
    if pin is not None:
        out.append(f"rubric drift: {pin}")
    folder = recording.parent
    if role == TUNE:
        problem = retune_problem(folder, pack.id)
        if problem is not None:
            out.append(problem)
    if role == HELDOUT and TUNE in pack.splits:
        out.extend(_thresholds_problems(pack, folder, recorder, target_precision, min_covered))
    out.extend(_rewrite_problems(pack, recording, recorder, cases))
    return out


def _thresholds_problems(pack: Pack, folder: Path, recorder: Recorder, target_precision: float | None,
                         min_covered: int | None) -> list[str]:
    """A held-out recording run for thresholds that do not belong to it: the facts it can tell before
    any answer (the models that served are checked once they have)."""
    where = thresholds_path(folder, pack.id)
    try:
        frozen = read_thresholds(where)
    except JevError as exc:
        return [exc.one_line()]
    tune = pack.splits[TUNE]
    settings = heldout_settings(frozen, target_precision, min_covered)
    facts = {"pack": pack.id, "pack_version": pack.version, "mode": recorder.mode, "backend": folder.name,
             "dataset_sha256": tune.declared_sha256, "protocol_version": PROTOCOL_VERSION}
    check = frozen_check(frozen, of(pack, TUNE, settings), facts, tune.file.name)
    return validation_problems(check, where)


def _rewrite_problems(pack: Pack, recording: Path, recorder: Recorder, cases: Sequence[Case] | None) -> list[str]:
    planned = plan(pack, recorder.backend, recording, mode=recorder.record_mode, model=recorder.model,
                   shuffle_seed=recorder.shuffle_seed, cases=cases)
    out: list[str] = []
    why = freeze_of(recording.parent, pack.id)
    if why is not None:
        evaluated = {case.id for name in (TUNE, HELDOUT) if name in pack.splits for case in pack.splits[name].cases}
        again = [request.case_id for request in planned.todo if request.case_id in evaluated]
        if again:
            out.append(f"{recording}: recording would ask {len(again)} case(s) of the evaluated splits again (first: "
                       f"{again[0]}) and rewrite the recording behind the held-out evaluation ({why}); a recording "
                       "behind a held-out report is never rewritten: record into another backend folder, or publish a "
                       "new pack version")
    asked = {request.case_id for request in planned.todo}
    other = sorted({line.mode or "live" for cid, line in planned.existing.items()
                    if cid not in asked and cid in pack.case_ids} - {recorder.mode})
    if other:
        out.append(f"{recording}: it holds {other[0]} lines that this {recorder.mode} run would keep beside its own: "
                   "a recording never mixes the mock with live backends; record into another backend folder, or "
                   "every case again (--jev-record=all)")
    return out
