"""The part that exists only with pytest-xdist: workers ship their runs to the controller."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .nodes import RUNS_KEY

OUTPUT_KEY = "jev_runs"
FAILURES_KEY = "jev_failures"


class XdistBridge:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workeroutput"):
            store = self.config.stash[RUNS_KEY]
            self.config.workeroutput[OUTPUT_KEY] = json.dumps(store.sorted())
            self.config.workeroutput[FAILURES_KEY] = json.dumps(store.failures)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        store = self.config.stash[RUNS_KEY]
        for payload in json.loads(output.get(OUTPUT_KEY, "[]")):
            store.add(payload)
        store.failures.extend(json.loads(output.get(FAILURES_KEY, "[]")))
