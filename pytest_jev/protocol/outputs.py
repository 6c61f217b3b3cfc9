"""Writing a protocol run's files beside its recording (on the controller, once, at the end).

A tune run writes the frozen thresholds (through thresholds.write_thresholds, which refuses
anything but a tune run), and every protocol run its report and per-sample results. A run
whose check[protocol] failed writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .thresholds import TUNE, report_path, results_path, retune_problem, thresholds_path, write_thresholds

if TYPE_CHECKING:  # the file models load with the first protocol run: every session imports this module
    from ..formats.protocol_json import ProtocolRun


def write(protocol: ProtocolRun, pack_id: str, split: str) -> list[Path]:
    """The files of one protocol run; [] when the run was refused."""
    from ..formats.protocol_json import write_samples  # see the imports above

    if protocol.problems:
        return []
    folder = Path(protocol.folder)
    written = []
    if protocol.role == TUNE:
        if retune_problem(folder, pack_id) is not None:  # checked again right before writing
            return []
        assert protocol.thresholds is not None  # a tune run froze them
        written.append(write_thresholds(thresholds_path(folder, pack_id), protocol.thresholds, role=protocol.role))
    report = protocol.report.write(report_path(folder, pack_id, split))
    results = write_samples(results_path(folder, pack_id, split), protocol.results)
    return [*written, report, results]
