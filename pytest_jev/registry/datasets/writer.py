"""The built pack's files, and putting them in place without ever losing a user's folder.

Every file is a pure function of the dataset, the sample and the build's inputs (seed, size,
source name and sha256): no dates, no absolute paths, so the same seed and source bytes
give the same folder, byte for byte.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .dataset import BuildError, Dataset, Row
from .sampler import Distinct


@dataclass(frozen=True)
class Provenance:
    """What README.md, CHANGELOG.md and LICENSE state about one build."""

    source_name: str
    source_sha256: str
    seed: int
    size: int
    out_name: str

    def command(self, name: str) -> str:
        return (f"jev-packs build {name} --source {self.source_name} --out {self.out_name} "
                f"--seed {self.seed} --size {self.size}")


def render(dataset: Dataset, picked: Sequence[Row], found: Distinct, how: Provenance) -> dict[str, bytes]:
    """Every file of the pack folder, by name."""
    cases = "".join(json.dumps({"id": f"{dataset.prefix}-{i:04d}",
                                "state": dict(zip(dataset.fields, row.values)),
                                "expect": {dataset.question: dataset.gold(row.label)}}, ensure_ascii=False) + "\n"
                    for i, row in enumerate(picked, 1))
    files = {"pack.yaml": dataset.pack_yaml, "cases.jsonl": cases, "gates.yaml": GATES,
             "README.md": readme(dataset, picked, found, how), "CHANGELOG.md": changelog(dataset, how),
             "LICENSE": license_note(dataset, how)}
    return {name: text.encode("utf-8") for name, text in files.items()}


GATES = """\
# No gates yet: gates come from evidence. Once a backend has been recorded on this pack,
# derive them from its evidence.md (accuracy, ECE, cost, latency), review them, and keep them here.
"""


def readme(dataset: Dataset, picked: Sequence[Row], found: Distinct, how: Provenance) -> str:
    up = dataset.upstream
    available = Counter(row.label for row in found.rows)
    sampled = Counter(row.label for row in picked)
    table = "".join(f"| `{label}` | `{dataset.upstream_names[label]}` | {available[label]} | {sampled[label]} |\n"
                    for label in dataset.labels)
    noul = dataset.labels == ("true", "false")
    kind = "| noul | true / false |" if noul else f"| choice | {len(dataset.labels)} intents, unknown (pack.yaml) |"
    share = (" **Share-alike applies**: whoever redistributes these cases, or an adaptation of them, must keep "
             "the same license and the attribution." if up.license.share_alike else "")
    conflicts = f"; {found.conflicts} of them had another label than the kept one" if found.conflicts else ""
    notes = f"\n{dataset.notes}\n" if dataset.notes else ""
    return f"""# {dataset.name}

{dataset.summary}

| question | type | labels |
|---|---|---|
| `{dataset.question}` {kind}
{notes}
## How it was built

This folder is written by a command, not by hand: to change it, change the build and run it again. Run
from the folder holding the source file:

```
{how.command(dataset.name)}
```

- Source: {up.get}
- Source sha256: `{how.source_sha256}`.
- Rows read: {found.read}; distinct states: {len(found.rows)}; duplicates skipped: {found.duplicates} (the
  first occurrence is kept{conflicts}).
- Sample: {how.size} cases, seed {how.seed}, stratified by label in proportion to each label's distinct
  states (largest-remainder rounding, at least one per label where the size allows), drawn with Python's
  `random.Random({how.seed})` and shuffled; case ids number the shuffled order (`{dataset.prefix}-0001`, ...).
- Text is whitespace-normalized (each run of whitespace becomes one space); nothing else is edited. Gold
  labels are the dataset's own, not relabelled here.

| label | upstream | distinct in source | sampled |
|---|---|---|---|
{table}
## Gates

None yet: gates come from evidence. `gates.yaml` declares no gate until a backend has been recorded on
this pack and gates are derived from its `evidence.md`.

## Data and license

- Upstream: **{up.title}**. {up.citation}
- License: **{up.license.name}**, <{up.license.url}>. This pack is an adaptation (a sample,
  whitespace-normalized) and keeps that license: `license: {up.license.spdx}` in pack.yaml, attribution above and
  in `LICENSE`.{share}
- Raw source data is never committed. This built pack is not in the jev-packs repository either: the
  repository holds the build, and the pack exists only where someone with the upstream file has run the
  command above.
"""


def changelog(dataset: Dataset, how: Provenance) -> str:
    return f"""# Changelog

## 0.1.0

- Built: `{how.command(dataset.name)}` from `{how.source_name}` (sha256 `{how.source_sha256}`).
"""


def license_note(dataset: Dataset, how: Provenance) -> str:
    up = dataset.upstream
    share = ("\nShare-alike: if you redistribute these cases or an adaptation of them, you must do so under\n"
             "the same license (or one Creative Commons lists as compatible with it) and keep this note.\n"
             if up.license.share_alike else "")
    return f"""{dataset.name}: cases adapted from {up.title}

Attribution: {up.citation}

License: {up.license.name}
{up.license.url} (legal code: {up.license.url}legalcode)

This pack (its cases and the files describing them) is distributed under the same license.
Changes made: a seeded sample of {how.size} records, whitespace normalized, labels written as the
pack's gold labels; see README.md. The upstream data comes as is, without warranties.
{share}"""


# -- putting the folder in place ------------------------------------------------------------

def check_out(out: Path, name: str, force: bool) -> None:
    """Refuse an --out the pack cannot be written to, before any work is done."""
    if out.name != name:
        raise BuildError(f"the pack folder must be named {name}, like the pack id", file=out,
                         fix=f"pass --out {out.parent / name}")
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise BuildError("exists and is not a folder", file=out, fix="choose another --out")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise BuildError("folder exists and is not empty", file=out,
                             fix="pass --force to replace the pack in it, or choose another --out")
        if not (out / "pack.yaml").is_file():
            raise BuildError("folder holds no pack.yaml, and --force replaces a pack folder only", file=out,
                             fix="empty the folder yourself, or choose another --out")


def place(files: Mapping[str, bytes], out: Path, force: bool) -> None:
    """Write the files into a fresh folder beside `out`, then rename it into place: a reader
    sees the old folder or the whole new one, never a half-written pack."""
    check_out(out, out.name, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = out.with_name(f".{out.name}.build-{os.getpid()}-{secrets.token_hex(4)}")
    stage.mkdir()  # mkdir, not mkdtemp: the pack folder gets the user's umask, not 0700
    try:
        for name, data in files.items():
            (stage / name).write_bytes(data)
        if out.exists():
            old = stage.with_name(stage.name.replace(".build-", ".old-"))
            os.replace(out, old)
            os.replace(stage, out)
            shutil.rmtree(old)
        else:
            os.replace(stage, out)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
