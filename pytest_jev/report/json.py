"""--jev-json: {"runs": [...]} with jevassert check --json keys plus backend and recording;
{"stability": [...]} too after --jev-repeat (the format: formats/run_json.py, JevJson)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..fileio import atomic_write
from ..run_result import RunResult

if TYPE_CHECKING:  # the file models load when --jev-json is written: every session imports this module
    from ..formats.run_json import StabilityEntry


def write_runs(path: Path, runs: list[RunResult], stability: Sequence[StabilityEntry] = ()) -> Path:
    """Write atomically (fileio.atomic_write) so a reader never sees half a report.

    `stability` (--jev-repeat) goes in a top-level key of its own, so each run object
    keeps exactly jevassert's keys plus ours."""
    from ..formats.run_json import jev_json_bytes  # see the imports above

    doc: dict[str, Any] = {"runs": [run.to_json() for run in runs]}
    if stability:
        doc["stability"] = [entry.to_json() for entry in stability]
    atomic_write(path, jev_json_bytes(doc))
    return path
