"""What a protocol run (--jev-tune, --jev-heldout) adds to a graded run: its setup (role, folder,
settings, the frozen thresholds a held-out run applies, the problems that refuse it) and its
result (the report, the thresholds a tune run freezes, the per-sample results), attached to the
RunResult.

Grading itself (evaluate.py) knows nothing of the protocol: the run machinery (nodes/runs.py)
builds the samples while the recording is loaded and attaches the result after the metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..backends.base import plugin_version
from ..errors import JevError
from ..evaluate import PackResult, Prepared
from ..formats.backend_json import folder_info
from ..formats.identity_json import GRID, PROTOCOL_VERSION, Identity, ProtocolSettings
from ..formats.protocol_json import ProtocolRun, Seeds, Thresholds
from ..identity import dataset_of, of, pack_settings, tuned_settings
from ..packs.model import Case, Pack
from ..pricing import GIVEN
from ..recording_file import Recording
from ..run_result import RunResult
from .report import build, thresholds_for, tune_all
from .samples import Sample
from .samples import build as build_samples
from .thresholds import (
    TUNE,
    applied_sha256,
    frozen_check,
    read_thresholds,
    retune_problem,
    thresholds_doc,
    thresholds_path,
    validation_problems,
)

DEFAULT_TARGET, DEFAULT_MIN_COVERED = 0.9, 10
DEFAULT_SETTINGS = ProtocolSettings(PROTOCOL_VERSION, DEFAULT_TARGET, DEFAULT_MIN_COVERED, GRID)


@dataclass(frozen=True)
class ProtocolSetup:
    """What a protocol run needs beyond replay: its role, its folder, its settings, the frozen
    thresholds a held-out run applies, what served its split's lines, the prices it may use, and
    the problems that refuse it (check[protocol])."""

    role: str  # tune | heldout
    folder: Path  # where thresholds, reports and per-sample results live (the recording's folder)
    settings: ProtocolSettings = DEFAULT_SETTINGS
    frozen: Thresholds | None = None  # held-out: the tune run's thresholds.json
    problems: tuple[str, ...] = ()
    served: tuple[str, ...] = ()  # the models that served this split's own lines
    kinds: tuple[str, ...] = ()  # the backend kinds of this split's lines
    price: tuple[float | None, float | None] = (None, None)  # given prices only: no given price, no cost
    backend_seed: int | None = None  # a seeded backend's seed (the mock's), from backend.json

    @property
    def target_precision(self) -> float:
        return self.settings.target_precision if self.settings.target_precision is not None else DEFAULT_TARGET

    @property
    def min_covered(self) -> int:
        return self.settings.min_covered if self.settings.min_covered is not None else DEFAULT_MIN_COVERED


def served_by(recording: Recording, cases: Sequence[Case]) -> tuple[tuple[str, ...], tuple[str, ...], set[str]]:
    """(models, backend kinds, modes) of the lines of these cases only: a recording whose alias rolled
    over between splits holds models that did not serve this one."""
    lines = recording.lines
    models: set[str] = set()
    kinds: set[str] = set()
    modes: set[str] = set()
    for case in cases:
        line = lines.get(case.id)
        if line is None:
            continue
        if (model := line.model) is not None:
            models.add(model)
        if (kind := line.backend) is not None:
            kinds.add(kind)
        modes.add(line.mode or "live")
    return tuple(sorted(models)), tuple(sorted(kinds)), modes


def setup(role: str, pack: Pack, recording: Recording, *, target_precision: float | None, min_covered: int | None,
          seed: int, cases: Sequence[Case], price: tuple[float | None, float | None] = (None, None)
          ) -> ProtocolSetup:
    """The setup of a protocol run of `recording`'s `cases`, with the problems that refuse it:
    tuning frozen thresholds, frozen thresholds that do not belong to this held-out run, a held-out
    run given other settings than the frozen ones, or lines of the mock mixed with live ones.
    `target_precision` and `min_covered` are None when not given (a held-out run takes the frozen ones)."""
    folder = recording.path.parent
    served, kinds, modes = served_by(recording, cases)
    given = price if None not in price else (None, None)
    base = ProtocolSetup(role, folder, served=served, kinds=kinds, price=given, backend_seed=_backend_seed(folder))
    problems: list[str] = []
    if {"mock", "live"} <= modes:
        problems.append(f"{recording.path}: the {role} split's lines mix mock lines with live ones: a mock line only "
                        "shows the harness works, so its numbers are neither; re-record the split with one backend")
    if role == TUNE:
        settings = tuned_settings(target_precision if target_precision is not None else DEFAULT_TARGET,
                                  min_covered if min_covered is not None else DEFAULT_MIN_COVERED)
        problem = retune_problem(folder, pack.id)
        return replace(base, settings=settings, problems=(*problems, *([problem] if problem else [])))
    if TUNE not in pack.splits:  # an evaluation split whose thresholds belong to the pack
        return replace(base, settings=pack_settings(), problems=tuple(problems))
    where = thresholds_path(folder, pack.id)
    try:
        frozen = read_thresholds(where)
    except JevError as exc:
        return replace(base, problems=(*problems, exc.one_line()))
    settings = heldout_settings(frozen, target_precision, min_covered)
    tune = pack.splits[TUNE]
    # the models that served this split's own lines against those that served the tune lines: an alias
    # that rolled over between the two would apply one model's thresholds to another's answers
    facts = {"pack": pack.id, "pack_version": pack.version, "mode": _mode(recording, cases),
             "backend": folder.name, "served_models": list(served), "dataset_sha256": tune.declared_sha256,
             "rubric": of(pack, TUNE).rubric, "protocol_version": PROTOCOL_VERSION, "seed": seed}
    check = frozen_check(frozen, of(pack, TUNE, settings), facts, tune.file.name)
    problems.extend(validation_problems(check, where))
    return replace(base, settings=settings, frozen=frozen, problems=tuple(problems))


def heldout_settings(frozen: Thresholds, target_precision: float | None, min_covered: int | None
                      ) -> ProtocolSettings:
    """A held-out run's settings: the frozen ones, unless given (then compared with them)."""
    recorded = frozen.identity.protocol if frozen.identity is not None else None
    if recorded is None:  # written before identities: its own fields
        recorded = ProtocolSettings(frozen.protocol_version, frozen.target_precision, frozen.min_covered,
                                    tuple(frozen.grid) or None)
    return replace(recorded, target_precision=target_precision if target_precision is not None
                   else recorded.target_precision,
                   min_covered=min_covered if min_covered is not None else recorded.min_covered)


def _mode(recording: Recording, cases: Sequence[Case]) -> str:
    _, _, modes = served_by(recording, cases)
    return min(modes, default="live")


def _backend_seed(folder: Path) -> int | None:
    """The seed a seeded backend states in its backend.json (the mock's), else None."""
    try:
        info = folder_info(folder)
    except JevError:
        return None
    seed = info.extra.get("seed") if info is not None else None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


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
    identity = of(pack, prep.split, protocol.settings)
    fields = run_identity(prep, run, protocol, identity)
    tuned = tune_all(pack, chosen, protocol.target_precision, protocol.min_covered) if protocol.role == TUNE else None
    thresholds, source = thresholds_for(protocol.role, pack, chosen, protocol.frozen, tuned)
    return ProtocolRun(
        role=protocol.role, folder=str(protocol.folder), problems=tuple(protocol.problems),
        report=build(fields, pack, chosen, thresholds, source, protocol.price),
        thresholds=(thresholds_doc(fields, tuned, identity, dataset_of(pack)) if tuned is not None else None),
        results=tuple(sample.to_line() for sample in chosen),
        applied=applied_sha256(protocol.frozen) if protocol.frozen is not None else None)


def run_identity(prep: Prepared, run: RunResult, protocol: ProtocolSetup, identity: Identity) -> dict[str, Any]:
    """What a protocol run is: pack, split and its data, wording, who answered, how (the fields a
    held-out run checks in the frozen thresholds, and `jev-packs merge` in every report), and its
    provenance (the tool, the recording, the seeds, where the prices come from)."""
    split = prep.pack.splits[prep.split]
    frozen = protocol.frozen
    return {"pack": prep.pack.id, "pack_version": prep.pack.version, "split": prep.split, "mode": prep.mode,
            "backend": prep.recording_path.parent.name, "served_models": list(protocol.served),
            "dataset_sha256": split.sha256, "rubric": run.rubric, "seed": prep.settings.seed,
            "identity": identity.to_json(), "dataset": dataset_of(prep.pack).to_json(),
            "generator": f"jev-packs {plugin_version()}", "backend_kind": list(protocol.kinds),
            "recording_sha256": prep.recording_sha256,
            "price_source": GIVEN if None not in protocol.price else None,
            "seeds": Seeds(prep.settings.seed, protocol.backend_seed).to_json(),
            "thresholds_identity": (frozen.identity.sha256 if frozen is not None and frozen.identity is not None
                                    else None)}
