"""The pytest side of a pack: collectors, items, the runs they read, recording what collection
selected, and GC policy."""

from .crash import FailureText
from .gcpolicy import freeze_if_large, unfreeze
from .items import (
    NO_RECORDING,
    BulkItem,
    CaseItem,
    CheckItem,
    GateItem,
    JevItem,
    PackWarning,
    RunItem,
    relative_to,
)
from .packfile import PACK_FILE, BrokenPack, PackFile, broken_pack_problem, split_pack_nodeid
from .results_check import ResultsItem
from .runs import SEALED, PackRun, RunStore

__all__ = [
    "NO_RECORDING",
    "PACK_FILE",
    "SEALED",
    "BrokenPack",
    "BulkItem",
    "CaseItem",
    "CheckItem",
    "FailureText",
    "GateItem",
    "JevItem",
    "PackFile",
    "PackRun",
    "PackWarning",
    "ResultsItem",
    "RunItem",
    "RunStore",
    "broken_pack_problem",
    "freeze_if_large",
    "relative_to",
    "split_pack_nodeid",
    "unfreeze",
]
