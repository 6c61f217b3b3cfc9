"""The pytest side of a pack: collectors, items, the runs they read, and GC policy."""

from .gcpolicy import freeze_if_large, unfreeze
from .items import (
    MISMATCH_COUNT_KEY,
    MISMATCH_KEY,
    NO_RECORDING,
    BulkItem,
    CaseItem,
    CheckItem,
    GateItem,
    JevItem,
    PackWarning,
)
from .packfile import PACK_FILE, BrokenPack, PackFile, broken_pack_problem, split_pack_nodeid
from .results_check import WRITTEN_KEY, ResultsItem
from .runs import OPTIONS_KEY, RUNS_KEY, STABILITY_KEY, PackRun, RunStore

__all__ = [
    "MISMATCH_COUNT_KEY",
    "MISMATCH_KEY",
    "NO_RECORDING",
    "OPTIONS_KEY",
    "PACK_FILE",
    "RUNS_KEY",
    "STABILITY_KEY",
    "WRITTEN_KEY",
    "BrokenPack",
    "BulkItem",
    "CaseItem",
    "CheckItem",
    "GateItem",
    "JevItem",
    "PackFile",
    "PackRun",
    "PackWarning",
    "ResultsItem",
    "RunStore",
    "broken_pack_problem",
    "freeze_if_large",
    "split_pack_nodeid",
    "unfreeze",
]
