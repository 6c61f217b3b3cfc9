"""--jev-json: {"runs": [...]} with jevassert check --json keys plus backend and recording;
{"stability": [...]} too after --jev-repeat (the format: formats/run_json.py, JevJson)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..fileio import atomic_write
from ..formats.run_json import jev_json_bytes
from ..run_result import RunResult


def write_runs(path: Path, runs: list[RunResult], stability: list[dict[str, Any]] | None = None) -> Path:
    """Write atomically (fileio.atomic_write) so a reader never sees half a report.

    `stability` (--jev-repeat) goes in a top-level key of its own, so each run object
    keeps exactly jevassert's keys plus ours."""
    doc: dict[str, Any] = {"runs": [run.to_json() for run in runs]}
    if stability:
        doc["stability"] = stability
    atomic_write(path, jev_json_bytes(doc))
    return path
