"""pytest hook wiring only: options, collection of pack folders, outcomes, summary, JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from . import options as opts
from .errors import JevError
from .nodes import (MISMATCH_COUNT_KEY, MISMATCH_KEY, OPTIONS_KEY, RUNS_KEY, STABILITY_KEY, CaseItem,
                    PackDirectory, RunStore, freeze_if_large, unfreeze_gc)


def pytest_addoption(parser: pytest.Parser) -> None:
    opts.addoption(parser)


SELECTED_KEY = pytest.StashKey[dict]()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """Let `pytest packs/x::case[x-0001]` re-run one item, as a node id printed by pytest should.

    pytest refuses `::` after a directory argument, and a pack is a directory; so such an
    argument becomes the pack folder plus a selection applied at collection time.
    """
    selected: dict[str, set[str]] = {}
    for i, arg in enumerate(args):
        path, sep, rest = arg.partition("::")
        if sep and not arg.startswith("-") and (Path(path) / "pack.yaml").is_file():
            args[i] = path
            selected.setdefault(str(Path(path).resolve()), set()).add(rest)
    early_config.stash[SELECTED_KEY] = selected


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    selected = config.stash.get(SELECTED_KEY, {})
    if not selected:
        return
    keep, drop = [], []
    for item in items:
        wanted = selected.get(str(item.path.resolve())) if isinstance(item.parent, PackDirectory) else None
        (keep if wanted is None or item.name in wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Large sessions: freeze what collection built (see nodes.freeze_if_large)."""
    freeze_if_large(session.config, sum(1 for item in session.items if type(item) is CaseItem))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """After pytest's own last collection (trylast), hand the frozen objects back to the GC."""
    unfreeze_gc(config)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    try:
        config.stash[OPTIONS_KEY] = opts.parse(config)
    except JevError as exc:
        raise pytest.UsageError(exc.one_line()) from None
    config.stash[RUNS_KEY] = RunStore()
    if config.pluginmanager.hasplugin("xdist"):
        from .xdist import XdistBridge

        config.pluginmanager.register(XdistBridge(config), "jev-xdist")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(JevReporter(config), "jev-reporter")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Record before anything is collected or any xdist worker starts (controller only)."""
    config = session.config
    options = config.stash[OPTIONS_KEY]
    if hasattr(config, "workerinput") or not (options.record_mode or options.dry_run):
        return
    from .record import record_run

    try:
        record_run(config, options)
    except JevError as exc:
        raise pytest.UsageError(exc.one_line()) from None
    except Exception as exc:  # AuthError and friends: stop the run with their one line
        if type(exc).__name__ == "AuthError":
            raise pytest.UsageError(str(exc)) from None
        raise
    if options.dry_run:
        pytest.exit("jev dry run: nothing was called", returncode=0)


def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if (path / "pack.yaml").is_file():
        return PackDirectory.from_parent(parent, path=path)
    return None


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    if getattr(report, "user_properties", None) and report.when == "call" and report.passed and any(
            key in (MISMATCH_KEY, MISMATCH_COUNT_KEY) for key, _ in report.user_properties):
        return "mismatched", "M", ("MISMATCH", {"yellow": True})
    return None


class JevReporter:
    """Controller-side: prints the summary (with the mismatches reports carry), writes --jev-json."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = config.stash[OPTIONS_KEY]
        self.json_written: Path | None = None

    @staticmethod
    def mismatches(stats: dict[str, list[Any]]) -> tuple[list[tuple[str, dict[str, Any]]], set[str]]:
        """Mismatches of case items, and bulk items that hold some, from the terminal's reports.

        Only mismatched items (and, under --jev-strict, failed ones) can carry them, so this
        reads those few reports at the end instead of inspecting every report as it comes.
        """
        per_case: list[tuple[str, dict[str, Any]]] = []
        bulk_nodes: set[str] = set()
        for category in ("mismatched", "failed"):
            for report in stats.get(category, ()):
                if getattr(report, "when", None) != "call":
                    continue
                for key, value in report.user_properties:
                    if key == MISMATCH_KEY:
                        per_case.append((report.nodeid, json.loads(value)))
                    elif key == MISMATCH_COUNT_KEY:
                        bulk_nodes.add(report.nodeid)
        return per_case, bulk_nodes

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = self.options.json_path
        store = self.config.stash[RUNS_KEY]
        runs = store.sorted()
        if store.failures and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a pack without numbers is not a pass
        stability = [s.as_dict() for s in self.config.stash.get(STABILITY_KEY, [])]
        if path is not None and (runs or stability):
            from .report.json import write_runs

            self.json_written = write_runs(path, runs, stability)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from .report.terminal import write_summary

        store = self.config.stash[RUNS_KEY]
        runs = store.sorted()
        per_case, bulk_nodes = self.mismatches(terminalreporter.stats)
        write_summary(terminalreporter, runs, per_case, bulk_nodes, self.options)
        for failure in store.failures:
            terminalreporter.write_line(f"jev: {failure}", red=True)
        if self.json_written is not None:
            terminalreporter.write_line(f"jev: metrics of {len(runs)} run(s) written to {self.json_written}")
