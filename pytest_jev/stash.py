"""Every key under which the plugin keeps or ships its state, in one place.

- config.stash (pytest.StashKey, as junitxml keeps its state): the parsed options, the runs of
  this process, the --jev-repeat stability results, whether the GC is frozen, the fixture's state;
- report.user_properties (re-fired on the xdist controller with every report): a case item's
  mismatches (and how many of its items regressed), a bulk item's count of them, the files a
  check[results] item wrote;
- config.workeroutput (an xdist worker's plain data for the controller): its runs and failures,
  and the fixture's shard.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # types only: this module sits below every module that uses a key
    from .fixture.answering import FixtureSession
    from .nodes.runs import RunStore
    from .options import Options
    from .stability import Stability

OPTIONS_KEY: pytest.StashKey[Options] = pytest.StashKey()
RUNS_KEY: pytest.StashKey[RunStore] = pytest.StashKey()
STABILITY_KEY: pytest.StashKey[list[Stability]] = pytest.StashKey()  # of each pack recorded with --jev-repeat
FROZEN_KEY: pytest.StashKey[bool] = pytest.StashKey()  # nodes/gcpolicy.py froze the GC
FIXTURE_KEY: pytest.StashKey[FixtureSession] = pytest.StashKey()

MISMATCH_KEY = "jev_mismatch"  # user_properties: one case's mismatches (JSON)
MISMATCH_COUNT_KEY = "jev_mismatch_count"  # user_properties: a bulk item's count of them
REGRESSED_KEY = "jev_regressed"  # user_properties: how many of a case's items regressed (--jev-baseline)
WRITTEN_KEY = "jev_written"  # user_properties: the files a check[results] item wrote

RUNS_OUTPUT_KEY = "jev_runs"  # workeroutput: the worker's RunResults (JSON)
FAILURES_OUTPUT_KEY = "jev_failures"  # workeroutput: the worker's failed metrics (JSON)
FIXTURE_OUTPUT_KEY = "jev_fixture"  # workeroutput: the fixture's shard (JSON)
