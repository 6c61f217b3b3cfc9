"""`jev-packs merge`: held-out reports of several backends side by side, only when they measured
the same thing the same way.

Every input is validated first against report.schema.json (a hand-edited or incomplete
report is refused with its file and field); then mode, split, dataset, rubric, protocol
version, seed and pack must agree across inputs. Mock and live reports never merge: a mock
column only shows that the harness works.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import JevError
from ..fileio import loads, read_text
from ..packs.schema import validator

AGREE = ("pack", "pack_version", "split", "dataset_sha256", "rubric", "protocol_version", "seed", "mode")
KIND = "jev-packs comparison"


class MergeError(JevError):
    """An input report is unusable, or the reports measured different things."""

    refusal = True


@cache
def _validator() -> Any:
    text = resources.files("pytest_jev.protocol").joinpath("report.schema.json").read_text("utf-8")
    return validator(json.loads(text))


def read_report(path: Path) -> dict[str, Any]:
    """One report, validated against the shipped schema; MergeError naming the file and field."""
    try:
        doc = loads(read_text(path, MergeError))
    except ValueError as exc:
        raise MergeError(f"not valid JSON ({exc})", file=path,
                         fix="merge the report.<split>.json a run wrote") from None
    import jsonschema

    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise MergeError(f"not a protocol report: {where}: {error.message[:160]}", file=path,
                         fix="merge reports exactly as a --jev-heldout run wrote them (re-run it rather than edit)")
    return dict(doc)


def merge(paths: Sequence[Path]) -> dict[str, Any]:
    """The comparison of several reports of the same pack, split, data, wording and procedure."""
    if len(paths) < 2:
        raise MergeError("merge needs at least two reports", fix="pass the report.<split>.json of each backend")
    reports = [(path, read_report(path)) for path in paths]
    first_path, first = reports[0]
    modes = {doc["mode"] for _, doc in reports}
    if modes == {"mock", "live"}:
        mock = next(path for path, doc in reports if doc["mode"] == "mock")
        raise MergeError("mock and live reports never merge: a mock report only shows the harness works",
                         file=mock, fix="leave the mock report out of the comparison")
    for path, doc in reports[1:]:
        for field in AGREE:
            if doc[field] != first[field]:
                raise MergeError(f"{field} is {json.dumps(doc[field])} here but {json.dumps(first[field])} in "
                                 f"{first_path}: the reports did not measure the same thing", file=path,
                                 fix="merge reports of one pack version, split and procedure (same seed)")
    backends = []
    for path, doc in reports:
        backends.append({
            "backend": doc["backend"], "served_models": doc["served_models"], "report": str(path),
            "thresholds_source": doc["thresholds_source"], "samples": doc["samples"],
            "questions": {qid: {locale: {key: entry[key] for key in
                                         ("threshold", "coverage", "selective_precision", "brier",
                                          "ece_10_equal_width", "samples", "failures_by_code")}
                                for locale, entry in q["locales"].items()}
                          for qid, q in doc["questions"].items()}})
    return {"kind": KIND, **{field: first[field] for field in AGREE},
            "backends": sorted(backends, key=lambda b: b["backend"])}
