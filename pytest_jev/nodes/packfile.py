"""Collectors: a pack is collected from its pack.yaml (a pytest.File), so its node ids are
native (`packs/x/pack.yaml::case[x-0001]`) and pytest's own selection works on them."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import nullcontext
from pathlib import Path

import pytest

from ..errors import JevError, PackError, node_name_part
from ..files import exists, is_regular
from ..options import Options
from .gcpolicy import FREEZE_MIN_CASES, freeze_if_large
from .items import BulkItem, CaseItem, CheckItem, GateItem, PackWarning, ProblemItem
from .runs import OPTIONS_KEY, PackRun

PACK_FILE = "pack.yaml"
# files that make a folder look like a pack whose pack.yaml is missing or misnamed
PACK_HINTS = ("pack.yml", "cases.jsonl", "gates.yaml")


def eager_grading(config: pytest.Config, options: Options) -> bool:
    """Grade while collecting (before items exist: lower peak memory) in a plain replay run;
    a run that records first, and an xdist worker, grade when the first item needs it."""
    return not (options.record_mode or options.dry_run or hasattr(config, "workerinput"))


def bulk_mode(options: Options, n_cases: int) -> bool:
    mode = options.case_items
    return mode == "none" or (mode == "auto" and n_cases > options.case_items_max)


class PackFile(pytest.File):
    """pack.yaml: its items are built from the pack's files, not from Python code."""

    def collect(self) -> Iterable[pytest.Item]:
        from ..packs import load_pack

        options = self.config.stash[OPTIONS_KEY]
        try:
            pack = load_pack(self.path.parent)
        except JevError as exc:
            yield ProblemItem.make(self, "check[spec]", problem=exc)
            return
        for text in pack.warnings:
            self.warn(PackWarning(text))
        bulk = bulk_mode(options, len(pack.cases))
        run = PackRun(pack, "", pack.cases, options)
        if eager_grading(self.config, options):
            run.prepare()
        # bulk too: the pack's objects would be walked by every full collection otherwise
        freeze_if_large(self.config, len(pack.cases))
        common = {"pack": pack, "run": run, "bulk": bulk}
        yield CheckItem.make(self, "check[spec]", check="spec", **common)
        yield CheckItem.make(self, "check[recording]", check="recording", **common)
        if bulk:
            yield BulkItem.make(self, "cases[bulk]", **common)
        else:
            make = CaseItem.make
            # Items only add live objects, no garbage; and once the pack is frozen the GC's
            # full-collection threshold is tiny, so it would walk the growing item list again
            # and again (18 full collections for 100,000 items). The session freezes it all next.
            from ..bulk import gc_paused

            with gc_paused() if len(pack.cases) >= FREEZE_MIN_CASES else nullcontext():
                for case in pack.cases:
                    yield make(self, f"case[{node_name_part(case.id)}]", case=case, **common)
        for gate in pack.gates.names():
            yield GateItem.make(self, f"gate[{gate}]", gate=gate, **common)


class BrokenPack(pytest.Directory):
    """A folder that is meant to be a pack but has no readable pack.yaml: one failing item
    saying so, instead of a pack that silently disappears from the run."""

    problem: PackError

    def collect(self) -> Iterable[pytest.Item]:
        yield ProblemItem.make(self, "check[spec]", problem=self.problem)


def broken_pack_problem(path: Path, named: bool) -> PackError | None:
    """Why `path` is a pack folder without a readable pack.yaml, or None when it is not one.

    A pack.yaml that is a folder, a FIFO or a dangling link always counts; a folder named
    on the command line also counts when it holds pack.yml, cases.jsonl or gates.yaml."""
    pack_file = path / PACK_FILE
    if is_regular(pack_file):
        return None
    fix = "a pack folder holds pack.yaml (a regular file), cases.jsonl and gates.yaml (see SPEC.md)"
    if exists(pack_file):
        return PackError("is not a regular file", file=pack_file, fix=fix)
    if (path / "pack.yml").exists():
        return PackError("no pack.yaml here (pack.yml is not read)", file=path, fix="rename pack.yml to pack.yaml")
    if named and any(exists(path / hint) for hint in PACK_HINTS):
        return PackError("no pack.yaml here", file=path, fix=fix)
    return None
