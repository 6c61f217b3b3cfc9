"""`jev-packs build`: a dataset-derived pack, built from the upstream file a user has.

The jev-packs repository commits the build, never the raw data nor the built cases (the
upstream licenses allow redistribution with attribution, but keeping the data out keeps
its provenance one command away). One module per dataset reads its published format;
sampler.py draws the sample, writer.py writes the folder.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ...fileio import read_bytes
from . import banking77, boolq, sms_spam
from .dataset import BuildError, Dataset
from .sampler import Distinct, distinct, stratified
from .writer import Provenance, check_out, place, render

__all__ = ["DATASETS", "BuildError", "Built", "Dataset", "build"]

DATASETS: dict[str, Dataset] = {d.name: d for d in (sms_spam.DATASET, boolq.DATASET, banking77.DATASET)}
DEFAULT_SEED = 42  # the seed of the jev-packs builds
DEFAULT_SIZE = 150


@dataclass(frozen=True)
class Built:
    out: Path
    found: Distinct
    sampled: dict[str, int]  # label -> cases in the pack


def build(name: str, source: Path, out: Path, *, seed: int = DEFAULT_SEED, size: int = DEFAULT_SIZE,
          force: bool = False) -> Built:
    """Read `source`, draw the sample and write the pack folder `out` (named like the pack)."""
    dataset = DATASETS[name]
    if size < 1:
        raise BuildError(f"--size {size} is not a positive number of cases", fix=f"pass --size {DEFAULT_SIZE}")
    if seed < 0:  # random.Random seeds with abs(): -1 and 1 would draw the same sample
        raise BuildError(f"--seed {seed} is negative", fix="pass a seed of 0 or more")
    check_out(out, name, force)
    data = read_bytes(source, BuildError, fix="pass the upstream file as --source")
    found = distinct(dataset.read(source, _text(source, data)))
    if not found.rows:
        raise BuildError("no records in the file", file=source, line=1, fix="pass the upstream file as published")
    if len(found.rows) < size:
        raise BuildError(f"{len(found.rows)} distinct records ({found.duplicates} duplicates skipped), fewer than "
                         f"--size {size}", file=source, line=_last_line(data),
                         fix=f"pass --size {len(found.rows)} or less, or the complete upstream file")
    picked = stratified(found.rows, dataset.labels, size, seed)
    how = Provenance(source.name, hashlib.sha256(data).hexdigest(), seed, size, out.name)
    place(render(dataset, picked, found, how), out, force)
    sampled = {label: sum(1 for row in picked if row.label == label) for label in dataset.labels}
    return Built(out, found, sampled)


def _text(source: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")  # a BOM a spreadsheet export adds is not part of the first field
    except UnicodeDecodeError as exc:
        raise BuildError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=source,
                         line=data[:exc.start].count(b"\n") + 1,
                         fix="pass the upstream file as published (UTF-8)") from None


def _last_line(data: bytes) -> int:
    """The file's last line, where more records were expected."""
    return max(1, data.count(b"\n") + (0 if data.endswith(b"\n") else 1))
