"""What a protocol run (--jev-tune, --jev-heldout) adds to a graded run: its setup (role, folder,
the frozen thresholds a held-out run applies, the problems that refuse it) and its result (the
report, the thresholds a tune run freezes, the per-sample results), attached to the RunResult.

Grading itself (evaluate.py) knows nothing of the protocol: the run machinery (nodes/runs.py)
builds the samples while the recording is loaded and attaches the result after the metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import JevError
from ..evaluate import PackResult, Prepared
from ..formats.protocol_json import ProtocolRun, Thresholds
from ..packs.model import Case, Pack
from ..recording_file import Recording
from ..rubric import rubric_fingerprint
from ..run_result import RunResult
from . import PROTOCOL_VERSION
from .report import build, thresholds_for, tune_all
from .samples import Sample
from .samples import build as build_samples
from .thresholds import TUNE, read_thresholds, retune_problem, thresholds_doc, thresholds_path, validation_problems


@dataclass(frozen=True)
class ProtocolSetup:
    """What a protocol run needs beyond replay: its role, its folder, the frozen thresholds a
    held-out run applies, and the problems that refuse it (check[protocol])."""

    role: str  # tune | heldout
    folder: Path  # where thresholds, reports and per-sample results live (the recording's folder)
    target_precision: float = 0.9
    min_covered: int = 10
    frozen: Thresholds | None = None  # held-out: the tune run's thresholds.json
    problems: tuple[str, ...] = ()


def setup(role: str, pack: Pack, recording: Recording, *, target_precision: float, min_covered: int,
          seed: int) -> ProtocolSetup:
    """The setup of a protocol run of `recording`, with the problems that refuse it: tuning after a
    held-out report, or frozen thresholds that do not belong to this held-out run."""
    folder = recording.path.parent
    if role == TUNE:
        problem = retune_problem(folder, pack.id)
        return ProtocolSetup(role, folder, target_precision, min_covered, None, (problem,) if problem else ())
    if TUNE not in pack.splits:  # an evaluation split whose thresholds belong to the pack
        return ProtocolSetup(role, folder, target_precision, min_covered)
    where = thresholds_path(folder, pack.id)
    try:
        frozen = read_thresholds(where)
    except JevError as exc:
        return ProtocolSetup(role, folder, target_precision, min_covered, None, (exc.one_line(),))
    expected = {"pack": pack.id, "pack_version": pack.version, "mode": min(recording.modes(), default="live"),
                "backend": folder.name, "served_models": sorted(recording.models()),
                "dataset_sha256": pack.splits[TUNE].declared_sha256,
                "rubric": rubric_fingerprint(pack.questions_as_sent()), "protocol_version": PROTOCOL_VERSION,
                "seed": seed}
    problems = tuple(validation_problems(frozen, expected, where))
    return ProtocolSetup(role, folder, target_precision, min_covered, frozen, problems)


def samples(pack: Pack, cases: Sequence[Case], recording: Recording, prep: Prepared) -> tuple[Sample, ...]:
    """The per-sample answers of a protocol run (read while the recording is still loaded)."""
    return build_samples(pack, cases, recording, prep.graded)


def attach(result: PackResult, prep: Prepared, chosen: Sequence[Sample], protocol: ProtocolSetup) -> PackResult:
    """`result` with its RunResult carrying the protocol run's report, thresholds and samples."""
    run = replace(result.run, protocol=protocol_result(prep, chosen, protocol, result.run))
    return replace(result, run=run)


def protocol_result(prep: Prepared, chosen: Sequence[Sample], protocol: ProtocolSetup, run: RunResult
                    ) -> ProtocolRun:
    """A protocol run's report, the thresholds a tune run freezes, and the per-sample results."""
    pack = prep.pack
    identity = run_identity(prep, run)
    tuned = tune_all(pack, chosen, protocol.target_precision, protocol.min_covered) if protocol.role == TUNE else None
    thresholds, source = thresholds_for(protocol.role, pack, chosen, protocol.frozen, tuned)
    return ProtocolRun(
        role=protocol.role, folder=str(protocol.folder), problems=tuple(protocol.problems),
        report=build(identity, pack, chosen, thresholds, source, (run.cost.price_input, run.cost.price_output)),
        thresholds=(thresholds_doc(identity, tuned, protocol.target_precision, protocol.min_covered)
                    if tuned is not None else None),
        results=tuple(sample.to_line() for sample in chosen))


def run_identity(prep: Prepared, run: RunResult) -> dict[str, Any]:
    """What a protocol run is: pack, split and its data, wording, who answered, how (the fields a
    held-out run checks in the frozen thresholds, and `jev-packs merge` in every report)."""
    split = prep.pack.splits[prep.split]
    return {"pack": prep.pack.id, "pack_version": prep.pack.version, "split": prep.split, "mode": prep.mode,
            "backend": prep.recording_path.parent.name, "served_models": sorted(prep.models),
            "dataset_sha256": split.sha256, "rubric": run.rubric, "seed": prep.settings.seed}
