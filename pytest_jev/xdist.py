"""The part that exists only with pytest-xdist.

- Workers ship their runs (plain JSON) and failures to the controller, which prints the
  one summary and writes --jev-json, exactly as a run without workers does.
- Under `--dist load` (what `-n` uses unless told otherwise) a pack's items form one work
  unit, so one worker grades the pack and computes its metrics, instead of every worker
  grading every pack; every other test is scheduled one by one, as `load` does.
- The controller records what the workers collected, before anything is scheduled.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import pytest

from .errors import JevError
from .nodes import split_pack_nodeid
from .run_result import RunResult
from .stash import FAILURES_OUTPUT_KEY, OPTIONS_KEY, RUNS_KEY, RUNS_OUTPUT_KEY


def pack_scope(nodeid: str) -> str | None:
    """The work unit of a pack item: its pack.yaml, plus its split when it has one; None for
    any other test."""
    found = split_pack_nodeid(nodeid)
    if found is None:
        return None
    path, rest = found
    parts = rest.split("::")
    return path if len(parts) == 1 else f"{path}::{parts[0]}"


class PackScheduling:
    """xdist's Scheduling protocol: whole packs as work units, other tests one by one.

    Bookkeeping is by index and counter: a 100,000-case pack is one unit, and xdist's own
    scope scheduler looks each node id up in a list and re-counts pending items after every
    test, which is quadratic at that size.
    """

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        from xdist.workermanage import parse_tx_spec_config

        self.config = config
        self.numnodes = len(parse_tx_spec_config(config))
        self.collection: list[str] | None = None
        self.registered_collections: dict[Any, list[str]] = {}
        self.workqueue: OrderedDict[str, list[int]] = OrderedDict()  # unit -> item indices
        self.assigned: dict[Any, dict[str, set[int]]] = {}  # node -> unit -> indices not yet done
        self.pending: dict[Any, int] = {}
        self.unit_of: list[str] = []

    # -- the protocol --------------------------------------------------------------------------

    @property
    def nodes(self) -> list[Any]:
        return list(self.assigned)

    @property
    def collection_is_completed(self) -> bool:
        return len(self.registered_collections) >= self.numnodes

    @property
    def tests_finished(self) -> bool:
        return self.collection_is_completed and not self.workqueue and all(n < 2 for n in self.pending.values())

    @property
    def has_pending(self) -> bool:
        return bool(self.workqueue) or any(self.pending.values())

    def add_node(self, node: Any) -> None:
        self.assigned[node] = {}
        self.pending[node] = 0

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        if self.collection is not None and list(collection) != self.collection:
            from xdist.report import report_collection_diff

            other = next(iter(self.registered_collections))
            tr = self.config.pluginmanager.get_plugin("terminalreporter")
            if tr is not None:
                tr.write_line(report_collection_diff(self.collection, list(collection), other.gateway.id,
                                                     node.gateway.id))
            return
        self.registered_collections[node] = list(collection)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        unit = self.unit_of[item_index]
        left = self.assigned[node].get(unit)
        if left is not None and item_index in left:
            left.discard(item_index)
            self.pending[node] -= 1
            if not left:
                del self.assigned[node][unit]
        self._refill(node)

    def mark_test_pending(self, item: str) -> None:
        raise NotImplementedError

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        raise NotImplementedError

    def remove_node(self, node: Any) -> str | None:
        """Forget a node; a crashed node's unfinished items go back to the queue (first: the
        item it was running, which xdist reports as the crash)."""
        units = self.assigned.pop(node)
        self.pending.pop(node, None)
        left = [(unit, sorted(indices)) for unit, indices in units.items() if indices]
        if not left:
            return None
        assert self.collection is not None
        crashed = self.collection[left[0][1][0]]
        for unit, indices in left:
            self.workqueue[unit] = indices
        for other in self.assigned:
            self._refill(other)
        return crashed

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:
            for node in self.nodes:
                self._refill(node)
            return
        collections = list(self.registered_collections.values())
        if any(c != collections[0] for c in collections[1:]):
            return  # xdist reports the difference and stops
        self.collection = collections[0]
        units: OrderedDict[str, list[int]] = OrderedDict()
        for index, nodeid in enumerate(self.collection):
            unit = pack_scope(nodeid) or nodeid
            self.unit_of.append(unit)
            units.setdefault(unit, []).append(index)
        self.workqueue = units
        if not self.workqueue:
            return
        for node in self.nodes:
            self._refill(node)
        if not self.workqueue:
            for node in self.nodes:
                if not self.pending[node]:
                    node.shutdown()

    # -- internals -----------------------------------------------------------------------------

    def _refill(self, node: Any) -> None:
        """Keep a node busy: hand it whole units until it has enough work queued."""
        if getattr(node, "shutting_down", False):
            return
        if not self.workqueue:
            if not self.pending.get(node):
                node.shutdown()
            return
        assert self.collection is not None
        want = max(2, min(50, len(self.collection) // (4 * max(1, len(self.assigned)))))
        send: list[int] = []
        while self.workqueue and self.pending[node] < want:
            unit, indices = self.workqueue.popitem(last=False)
            self.assigned[node][unit] = set(indices)
            self.pending[node] += len(indices)
            send.extend(indices)
        if send:
            node.send_runtest_some(send)


class XdistBridge:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.recorded = False

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") == "load":
            return PackScheduling(config, log)
        return None

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workeroutput"):
            store = self.config.stash[RUNS_KEY]
            self.config.workeroutput[RUNS_OUTPUT_KEY] = json.dumps([run.shipped() for run in store.results()])
            self.config.workeroutput[FAILURES_OUTPUT_KEY] = json.dumps(store.failures)

    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        """Controller: record what the first worker collected (every worker collects the same),
        before xdist schedules a single item."""
        options = self.config.stash[OPTIONS_KEY]
        if self.recorded or not (options.record_mode or options.dry_run):
            return
        self.recorded = True
        from .nodes.record_selection import record_selection, selection_from_nodeids  # the recorder: only now

        try:
            record_selection(self.config, options, selection_from_nodeids(ids, self.config.rootpath))
        except JevError as exc:
            raise pytest.UsageError(exc.one_line()) from None
        if options.dry_run:
            pytest.exit("jev dry run: nothing was called", returncode=0)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        store = self.config.stash[RUNS_KEY]
        for doc in json.loads(output.get(RUNS_OUTPUT_KEY, "[]")):
            store.add_result(RunResult.from_json(doc))
        store.failures.extend(json.loads(output.get(FAILURES_OUTPUT_KEY, "[]")))
