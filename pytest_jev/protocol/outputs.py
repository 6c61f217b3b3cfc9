"""Writing a protocol run's files beside its recording (on the controller, once, at the end).

A tune run writes the frozen thresholds (through thresholds.write_thresholds, which refuses
anything but a tune run), and every protocol run its report and per-sample results. A run
whose check[protocol] failed writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..fileio import atomic_write, write_json
from .thresholds import TUNE, report_path, results_path, retune_problem, thresholds_path, write_thresholds


def write(protocol: Mapping[str, Any], pack_id: str, split: str) -> list[Path]:
    """The files of one protocol run; [] when the run was refused."""
    if protocol.get("problems"):
        return []
    folder = Path(protocol["folder"])
    written = []
    if protocol["role"] == TUNE:
        if retune_problem(folder, pack_id) is not None:  # checked again right before writing
            return []
        written.append(write_thresholds(thresholds_path(folder, pack_id), protocol["thresholds"],
                                        role=protocol["role"]))
    report = report_path(folder, pack_id, split)
    write_json(report, protocol["report"])
    results = results_path(folder, pack_id, split)
    atomic_write(results, "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n"
                                  for row in protocol["results"]).encode("utf-8"))
    return [*written, report, results]
