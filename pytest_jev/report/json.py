"""--jev-json: {"runs": [...]} with jevassert check --json keys plus backend and recording;
{"stability": [...]} too after --jev-repeat."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..fileio import atomic_write
from ..run_result import RunResult


def write_runs(path: Path, runs: list[RunResult], stability: list[dict[str, Any]] | None = None) -> Path:
    """Write atomically (fileio.atomic_write) so a reader never sees half a report.

    `stability` (--jev-repeat) goes in a top-level key of its own, so each run object
    keeps exactly jevassert's keys plus ours."""
    doc: dict[str, Any] = {"runs": [run.to_json() for run in runs]}
    if stability:
        doc["stability"] = stability
    try:
        data = (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (legal JSON escape, e.g. in a case id): escape all
        data = (json.dumps(doc, indent=2) + "\n").encode("ascii")
    atomic_write(path, data)
    return path
