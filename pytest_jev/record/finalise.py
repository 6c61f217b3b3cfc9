"""The end of a recording run: the final recording's lines in pack order, backend.json beside it,
and the run's summary."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..backends.base import Backend
from ..contract import AnswerSpec, specs_of
from ..fileio import atomic_write, scrub
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


def final_lines(pack: Pack, planned: Plan, run: CaseRunner, keep: Mapping[str, dict[str, Any]]
                ) -> tuple[list[dict[str, Any]], list[Mapping[str, Any] | bytes]]:
    """The recording after this run, in pack order: this run's lines, kept ones, and every other
    case's line as it was (cases not chosen are never dropped; lines of cases the pack no longer
    has are, as check[recording] would refuse them). Lines answered now go in as the journal
    wrote them."""
    final: list[dict[str, Any]] = []
    chunks: list[Mapping[str, Any] | bytes] = []
    for case in pack.cases:
        cid = case.id
        line = run.results.get(cid) or keep.get(cid) or planned.existing.get(cid)
        if line is None:
            continue
        final.append(line)
        chunks.append(run.encoded.get(cid) or line)
    return final, chunks


def summary_none(planned: Plan, out_path: Path, elapsed: float, mode: str) -> RecordSummary:
    """The summary of a run that called nothing (none; once where the recording exists): the lines
    found usable, and the ones an answer is missing for."""
    cache: dict[int, tuple[Any, Mapping[str, AnswerSpec]]] = {}
    good = sum(usable(planned.existing.get(r.case_id), planned.fingerprints[r.case_id],
                      per_questions(cache, r.questions, specs_of), strict=False) for r in planned.requests)
    models = {str(line["model"]) for line in planned.existing.values() if isinstance(line.get("model"), str)}
    return RecordSummary(out_path, len(planned.requests), 0, good, len(planned.requests) - good,
                         tuple(sorted(models)), elapsed, 0.0, str(mode))


def write_backend_json(path: Path, backend: Backend, served_model: str | None) -> dict[str, Any]:
    """backend.json beside the recording: describe() + id, created/updated dates, pricing. No secrets."""
    info: dict[str, Any] = {"id": backend.backend_id(served_model)}
    info.update(backend.describe())
    info["id"] = backend.backend_id(served_model)
    today = datetime.now(timezone.utc).date().isoformat()
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        old = {}
    info["created"] = old.get("created", today) if isinstance(old, dict) else today
    info["updated"] = today
    info["pricing"] = _pricing(info.get("pricing"))
    atomic_write(path, scrub(json.dumps(info, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return info


def _pricing(described: Any) -> dict[str, float | None]:
    """The price a backend describes itself with; unknown (null) when it names none (a model
    without a list price: every built-in backend that knows its price says so in describe())."""
    keys = ("input_usd_per_mtok", "output_usd_per_mtok")
    if isinstance(described, Mapping) and all(k in described for k in keys):
        return {k: described[k] for k in keys}
    return dict.fromkeys(keys)
