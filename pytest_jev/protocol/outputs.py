"""Writing a protocol run's files beside its recording (on the controller, once, at the end).

A tune run writes the frozen thresholds (through thresholds.write_thresholds, which refuses
anything but a tune run), and every protocol run its report and per-sample results. A held-out
run that applied a tune run's thresholds records the freeze in that thresholds file (its values
untouched) before it writes its report. A run whose check[protocol] failed writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .thresholds import (
    HELDOUT,
    TUNE,
    record_freeze,
    report_path,
    results_path,
    retune_problem,
    thresholds_path,
    write_thresholds,
)

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
    if protocol.role == HELDOUT and protocol.applied is not None:
        from ..formats.protocol_json import Freeze  # see the imports above

        where = report_path(folder, pack_id, split)
        identity = protocol.report.identity
        done = record_freeze(thresholds_path(folder, pack_id), protocol.applied,
                             Freeze("--jev-heldout", where.name, identity.sha256 if identity is not None else None))
        if done is not None:
            written.append(done)
    report = protocol.report.write(report_path(folder, pack_id, split))
    results = write_samples(results_path(folder, pack_id, split), protocol.results)
    return [*written, report, results]
