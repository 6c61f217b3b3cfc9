"""Collectors: a pack is collected from its pack.yaml (a pytest.File), so its node ids are
native (`packs/x/pack.yaml::case[x-0001]`) and pytest's own selection works on them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from ..errors import JevError, PackError, node_name_part
from ..fileio import exists, is_regular
from ..gcpause import gc_paused
from ..options import Options
from ..packs import load_pack
from ..packs.model import Pack
from ..stash import OPTIONS_KEY
from .gcpolicy import FREEZE_MIN_CASES, freeze_if_large
from .items import BulkItem, CaseItem, CheckItem, GateItem, OutsideItem, PackWarning, ProblemItem, relative_to
from .results_check import ResultsItem
from .runs import PackRun

PACK_FILE = "pack.yaml"


def split_pack_nodeid(nodeid: str) -> tuple[str, str] | None:
    """(pack.yaml's path, the rest) of a pack item's node id, e.g. ("packs/x/pack.yaml",
    "tune::case[a]"); None for any other test. String work only: the xdist controller calls
    it once per item, 100,000 times for a large pack."""
    path, sep, rest = nodeid.partition("::")
    if not sep or (path != PACK_FILE and not path.endswith("/" + PACK_FILE)):
        return None
    return path, rest


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
    """pack.yaml: its items are built from the pack's files, not from Python code.

    A pack without declared splits holds its items itself (`pack.yaml::case[x]`); a spec-1
    pack with splits holds one SplitNode per split (`pack.yaml::heldout::case[x]`), only the
    one --jev-split names when it is given."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        options = self.config.stash[OPTIONS_KEY]
        try:
            pack = load_pack(self.path.parent)
        except JevError as exc:
            yield ProblemItem.make(self, "check[spec]", problem=exc)
            return
        for text in pack.warnings:
            self.warn(PackWarning(relative_to(text, self.config.invocation_params.dir)))
        # bulk too: the pack's objects would be walked by every full collection otherwise
        freeze_if_large(self.config, len(pack.cases))
        role = options.protocol
        if role is not None and role not in pack.splits:  # `pytest packs/ --jev-tune` over a mixed folder
            yield CheckItem.make(self, "check[spec]", check="spec", pack=pack, run=None)
            yield OutsideItem.make(self, "check[protocol]", reason=_outside(pack, role))
            return
        if not pack.declares_splits:
            split = pack.splits[""]
            run = PackRun(pack, split, options)
            yield CheckItem.make(self, "check[spec]", check="spec", pack=pack, run=run)
            yield from split_items(self, run)
            return
        yield CheckItem.make(self, "check[spec]", check="spec", pack=pack, run=None)
        wanted = options.split
        if wanted is not None and wanted not in pack.splits:
            problem = PackError(f"pack {pack.id} has no split '{wanted}' (it has: {', '.join(pack.splits)})",
                                file=self.path, fix="pass --jev-split with one of those names")
            yield ProblemItem.make(self, "check[split]", problem=problem)
            return
        for name in pack.splits:
            if wanted is None or name == wanted:
                yield SplitNode.from_parent(self, name=name, pack=pack, split_name=name)


def _outside(pack: Pack, role: str) -> str:
    """Why a protocol run (--jev-tune, --jev-heldout) leaves this pack alone."""
    if not pack.declares_splits:
        return f"--jev-{role}: {pack.id} declares no splits, so it has no {role} split to run"
    if role == "tune" and "heldout" in pack.splits:
        return (f"--jev-tune: {pack.id} has no tune split: its held-out threshold belongs to the pack "
                "(pack.yaml thresholds); run it with --jev-heldout")
    return f"--jev-{role}: {pack.id} has no {role} split (it has: {', '.join(pack.splits)})"


class SplitNode(pytest.Collector):
    """One frozen split of a spec-1 pack: check[split] (its bytes are the frozen ones), then
    the same items a pack without splits has."""

    def __init__(self, *, pack: Pack, split_name: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.pack = pack
        self.split = pack.splits[split_name]

    def collect(self) -> Iterable[pytest.Item]:
        run = PackRun(self.pack, self.split, self.config.stash[OPTIONS_KEY])
        yield CheckItem.make(self, "check[split]", check="split", pack=self.pack, run=run)
        yield from split_items(self, run)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.split.file, 0, self.name


def split_items(parent: pytest.Collector, run: PackRun) -> Iterator[pytest.Item]:
    """check[recording], check[rubric] (check[baseline] with --jev-baseline), the case items (or
    cases[bulk]) and the gate items of a run."""
    pack, options = run.pack, run.options
    bulk = bulk_mode(options, len(run.cases))
    if eager_grading(parent.config, options):
        run.prepare()
    common = {"pack": pack, "run": run, "bulk": bulk}
    yield CheckItem.make(parent, "check[recording]", check="recording", **common)
    yield CheckItem.make(parent, "check[rubric]", check="rubric", **common)
    if options.baseline_given:
        yield CheckItem.make(parent, "check[baseline]", check="baseline", **common)
    if run.protocol_role is not None:
        yield CheckItem.make(parent, "check[protocol]", check="protocol", **common)
    if bulk:
        yield BulkItem.make(parent, "cases[bulk]", **common)
    else:
        make = CaseItem.make
        # Items only add live objects, no garbage; and once the pack is frozen the GC's
        # full-collection threshold is tiny, so it would walk the growing item list again
        # and again (18 full collections for 100,000 items). The session freezes it all next.
        with gc_paused() if len(run.cases) >= FREEZE_MIN_CASES else nullcontext():
            for case in run.cases:
                yield make(parent, f"case[{node_name_part(case.id)}]", case=case, **common)
    for gate in pack.gates.names():
        yield GateItem.make(parent, f"gate[{gate}]", gate=gate, **common)
    if options.write_results or options.registry:
        yield ResultsItem.make(parent, "check[results]", **common)


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
