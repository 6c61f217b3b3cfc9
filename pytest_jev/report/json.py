"""--jev-json: {"runs": [...]} with jevassert check --json keys plus backend and recording;
{"stability": [...]} too after --jev-repeat (the format: formats/run_json.py, JevJson)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..formats.run_json import jev_json_bytes
from ..results import RunResult


def write_runs(path: Path, runs: list[RunResult], stability: list[dict[str, Any]] | None = None) -> Path:
    """Write atomically (temp file + rename) so a reader never sees half a report.

    `stability` (--jev-repeat) goes in a top-level key of its own, so each run object
    keeps exactly jevassert's keys plus ours."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    doc: dict[str, Any] = {"runs": [run.to_json() for run in runs]}
    if stability:
        doc["stability"] = stability
    tmp.write_bytes(jev_json_bytes(doc))
    os.replace(tmp, path)
    return path
