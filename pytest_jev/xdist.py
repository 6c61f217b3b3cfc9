"""The part that exists only with pytest-xdist: workers ship their runs to the controller."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .nodes import RUNS_KEY

OUTPUT_KEY = "jev_runs"


class XdistBridge:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workeroutput"):
            runs = self.config.stash[RUNS_KEY].sorted()
            self.config.workeroutput[OUTPUT_KEY] = json.dumps(runs)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        store = self.config.stash[RUNS_KEY]
        for payload in json.loads(output.get(OUTPUT_KEY, "[]")):
            store.add(payload)
