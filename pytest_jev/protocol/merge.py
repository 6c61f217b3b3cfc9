"""`jev-packs merge`: held-out reports of several backends side by side, only when they measured
the same thing the same way.

Every input is validated first against the report's schema (formats/schema/protocol-report.schema.json:
a hand-edited or incomplete report is refused with its file and field); then mode, split,
dataset, rubric, protocol version, seed and pack must agree across inputs. Mock and live
reports never merge: a mock column only shows that the harness works.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ..errors import JevError
from ..fileio import loads, read_text
from ..formats.protocol_json import AGREE, Comparison, ProtocolReport
from ..formats.schemas import errors


class MergeError(JevError):
    """An input report is unusable, or the reports measured different things."""

    refusal = True


def read_report(path: Path) -> ProtocolReport:
    """One report, validated against the shipped schema; MergeError naming the file and field."""
    try:
        doc = loads(read_text(path, MergeError))
    except ValueError as exc:
        raise MergeError(f"not valid JSON ({exc})", file=path,
                         fix="merge the report.<split>.json a run wrote") from None
    found = errors("protocol-report", doc)
    if found:
        import jsonschema  # heavy: only when a report is refused

        error = jsonschema.exceptions.best_match(found)
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise MergeError(f"not a protocol report: {where}: {error.message[:160]}", file=path,
                         fix="merge reports exactly as a --jev-heldout run wrote them (re-run it rather than edit)")
    return ProtocolReport.from_json(doc)


def merge(paths: Sequence[Path]) -> Comparison:
    """The comparison of several reports of the same pack, split, data, wording and procedure."""
    if len(paths) < 2:
        raise MergeError("merge needs at least two reports", fix="pass the report.<split>.json of each backend")
    reports = [(path, read_report(path)) for path in paths]
    first_path, first = reports[0]
    modes = {report.mode for _, report in reports}
    if modes == {"mock", "live"}:
        mock = next(path for path, report in reports if report.mode == "mock")
        raise MergeError("mock and live reports never merge: a mock report only shows the harness works",
                         file=mock, fix="leave the mock report out of the comparison")
    agreed = {field: first.to_json()[field] for field in AGREE}
    for path, report in reports[1:]:
        doc = report.to_json()
        for field in AGREE:
            if doc[field] != agreed[field]:
                raise MergeError(f"{field} is {json.dumps(doc[field])} here but {json.dumps(agreed[field])} in "
                                 f"{first_path}: the reports did not measure the same thing", file=path,
                                 fix="merge reports of one pack version, split and procedure (same seed)")
    return Comparison.of([(str(path), report) for path, report in reports])
