"""The end of a recording run: the final recording's lines in pack order, backend.json beside it,
and the run's summary."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..backends.base import Backend
from ..contract import AnswerSpec, specs_of
from ..errors import JevError
from ..formats.backend_json import BackendInfo
from ..formats.recording_line import RecordingLine
from ..packs.model import Pack
from .driver import CaseRunner
from .modes import BARE
from .plan import Plan, per_questions, usable


@dataclass(frozen=True)
class RecordSummary:
    path: Path
    n_cases: int
    n_called: int
    n_reused: int
    n_errors: int  # error lines written by this run (mode none: error or missing lines found)
    served_models: tuple[str, ...]  # models named by the lines of the final recording
    elapsed_s: float
    calls_per_s: float
    mode: str = BARE
    n_retries: int = 0


def final_lines(pack: Pack, planned: Plan, run: CaseRunner, keep: Mapping[str, RecordingLine]
                ) -> tuple[list[RecordingLine], list[Mapping[str, Any] | bytes]]:
    """The recording after this run, in pack order: this run's lines, kept ones, and every other
    case's line as it was (cases not chosen are never dropped; lines of cases the pack no longer
    has are, as check[recording] would refuse them). Lines answered now go in as the journal
    wrote them."""
    final: list[RecordingLine] = []
    chunks: list[Mapping[str, Any] | bytes] = []
    for case in pack.cases:
        cid = case.id
        line = run.results.get(cid) or keep.get(cid) or planned.existing.get(cid)
        if line is None:
            continue
        final.append(line)
        chunks.append(run.encoded.get(cid) or line.to_json())
    return final, chunks


def summary_none(planned: Plan, out_path: Path, elapsed: float, mode: str) -> RecordSummary:
    """The summary of a run that called nothing (none; once where the recording exists): the lines
    found usable, and the ones an answer is missing for."""
    cache: dict[int, tuple[Any, Mapping[str, AnswerSpec]]] = {}
    good = sum(usable(planned.existing.get(r.case_id), planned.fingerprints[r.case_id],
                      per_questions(cache, r.questions, specs_of), strict=False) for r in planned.requests)
    models = {model for line in planned.existing.values() if (model := line.model) is not None}
    return RecordSummary(out_path, len(planned.requests), 0, good, len(planned.requests) - good,
                         tuple(sorted(models)), elapsed, 0.0, str(mode))


def write_backend_json(path: Path, backend: Backend, served_model: str | None) -> BackendInfo:
    """backend.json beside the recording: describe() + id, created/updated dates, pricing, in that
    order; written by BackendInfo (secrets masked). A readable old file keeps its created date."""
    doc: dict[str, Any] = {"id": backend.backend_id(served_model)}
    doc.update(backend.describe())
    doc["id"] = backend.backend_id(served_model)
    today = datetime.now(timezone.utc).date().isoformat()
    try:
        created = BackendInfo.read(path).created
    except JevError:  # none yet, or not ours to read: a new file
        created = None
    doc["created"] = created or today
    doc["updated"] = today
    doc["pricing"] = _pricing(doc.get("pricing"))
    info = BackendInfo.from_json(doc)
    info.write(path)
    return info


def _pricing(described: Any) -> dict[str, float | None]:
    """The price a backend describes itself with; unknown (null) when it names none (a model
    without a list price: every built-in backend that knows its price says so in describe())."""
    keys = ("input_usd_per_mtok", "output_usd_per_mtok")
    if isinstance(described, Mapping) and all(k in described for k in keys):
        return {k: described[k] for k in keys}
    return dict.fromkeys(keys)
