"""pytest hook wiring only: options, collection of packs, recording, outcomes, summary, JSON.

The recorder (nodes/record_selection.py, record/) is imported only when a run records or
estimates (--jev-record, --jev-dry-run); numpy comes with the first pack graded (nodes/runs.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from . import hookspecs
from . import options as opts
from .backends.base import Backend
from .backends.kinds import BackendSpec
from .errors import JevError
from .fixture import fixtures
from .nodes import (
    NO_RECORDING,
    PACK_FILE,
    SEALED,
    BrokenPack,
    CaseItem,
    FailureText,
    JevItem,
    PackFile,
    RunItem,
    RunStore,
    broken_pack_problem,
    freeze_if_large,
    relative_to,
    split_pack_nodeid,
    unfreeze,
)
from .packs.model import Pack
from .protocol.outputs import write
from .report.json import write_runs
from .report.terminal import write_summary
from .stash import (
    MISMATCH_COUNT_KEY,
    MISMATCH_KEY,
    OPTIONS_KEY,
    REGRESSED_KEY,
    RUNS_KEY,
    STABILITY_KEY,
    WRITTEN_KEY,
)
from .xdist import XdistBridge


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    opts.addoption(parser)
    pluginmanager.register(fixtures, "jev-fixture")


@pytest.hookimpl(trylast=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """--jev-dry-run estimates in this process: no xdist workers to start (after xdist's own
    cmdline_main turned -n into --dist load)."""
    if opts.dry_run_requested(config) and getattr(config.option, "dist", "no") != "no":
        config.option.dist = "no"
        config.option.numprocesses = None


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    options = opts.options_of(config)
    if options.record_mode and not hasattr(config, "workerinput"):
        try:  # a missing key or extra stops the run before collection
            options.catalog.check_ready(options.backend)
        except JevError as exc:  # AuthError too: its message names the variable to set
            raise pytest.UsageError(exc.one_line()) from None
    config.stash[RUNS_KEY] = RunStore()
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistBridge(config), "jev-xdist")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(JevReporter(config), "jev-reporter")


def pytest_report_header(config: pytest.Config) -> list[str]:
    """One line when registry checks are on, off for this run, or off beside an index.json."""
    line = opts.registry_header(opts.options_of(config), config.inipath.name if config.inipath else None)
    return [line] if line else []


@pytest.hookimpl(trylast=True)
def pytest_jev_make_backend(spec: BackendSpec, options: opts.Options, pack: Pack | None, config: pytest.Config
                            ) -> Backend:
    """The backend of the spec's kind (after every conftest's and plugin's own implementation)."""
    return options.catalog.make(spec, pack=pack)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name == PACK_FILE:
        return PackFile.from_parent(parent, path=file_path)
    return None


def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A folder meant as a pack without a readable pack.yaml fails instead of vanishing."""
    problem = broken_pack_problem(path, named=parent.session.isinitpath(path))
    if problem is None:
        return None
    broken = BrokenPack.from_parent(parent, path=path)
    broken.problem = problem
    return broken


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Record what collection selected (not under --collect-only), then freeze large sessions."""
    config = session.config
    options = config.stash[OPTIONS_KEY]
    if (options.record_mode or options.dry_run) and not hasattr(config, "workerinput") \
            and not config.option.collectonly:
        from .nodes.record_selection import record_selection, selection_from_items  # the recorder: only now

        try:
            record_selection(config, options, *selection_from_items(session.items))
        except JevError as exc:
            raise pytest.UsageError(exc.one_line()) from None
    freeze_if_large(config, sum(1 for item in session.items if type(item) is CaseItem))


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """--jev-dry-run runs no item: it ends after the estimate, cleanly (exit code 0, pytest's own
    "no tests ran" line, no pytest.exit banner); --collect-only is pytest's."""
    options = session.config.stash[OPTIONS_KEY]
    if options.dry_run and not session.config.option.collectonly:
        return True
    return None


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """After pytest's own last collection (trylast), hand the frozen objects back to the GC."""
    unfreeze(config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A pack item skipped at run time is reported at the pack's place, not in our code: a gate
    not computable at its line of gates.yaml, items without a usable recording or of a sealed
    held-out split at pack.yaml (one summary line for the whole pack under -rs); the paths in its
    reason relative to where pytest was started, as in failures."""
    report = yield
    if report.when == "call" and report.passed and isinstance(item, RunItem) and item.mismatch:
        # a mismatch is no failure (--jev-strict makes it one), but JUnit readers (Jenkins, GitLab,
        # GitHub) count and show a testcase's <skipped message=...>; a property they do not show
        where, at, _domain = item.location
        report.outcome = "skipped"
        report.longrepr = (where, (at or 0) + 1, item.mismatch)
    elif report.skipped and isinstance(item, JevItem) and isinstance(report.longrepr, tuple):
        reason = report.longrepr[2]
        line: int | None = 0
        if NO_RECORDING in reason or SEALED in reason:
            path = item.nodeid.split("::", 1)[0]
        else:
            path, line, _domain = item.location
        report.longrepr = (path, (line or 0) + 1, item.relative(reason))
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A failed pack item's report names its headline as the crash message (crash.py), so the
    short summary on CI, `--tb=line` and JUnit's failure message show that line, not every line.
    Here, not in makereport: a report reaches the xdist controller as plain text again; tryfirst,
    before the terminal and junitxml read it."""
    if report.failed and report.when == "call" and isinstance(report.longrepr, str) \
            and split_pack_nodeid(report.nodeid) is not None:
        where, line, _domain = report.location
        report.longrepr = FailureText(report.longrepr, where, (line or 0) + 1)  # type: ignore[assignment]


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """A case item holding mismatches (a skip for JUnit readers) is its own outcome here; one whose
    items were right in the --jev-baseline recording is a regression."""
    if getattr(report, "user_properties", None) and report.when == "call" and report.skipped:
        keys = {key for key, _ in report.user_properties}
        if REGRESSED_KEY in keys:  # right in the --jev-baseline recording, wrong now
            return "regressed", "R", ("REGRESSED", {"red": True})
        if keys & {MISMATCH_KEY, MISMATCH_COUNT_KEY}:
            return "mismatched", "M", ("MISMATCH", {"yellow": True})
    return None


def write_protocol_files(runs: list[Any]) -> list[Path]:
    """Thresholds, reports and per-sample results of the protocol runs (controller only, once)."""
    written: list[Path] = []
    for run in runs:
        if run.protocol is not None:
            written.extend(write(run.protocol, run.pack, run.split))
    return written


def found_folder_lines(runs: list[Any], options: opts.Options) -> list[str]:
    """Which backend folder each pack was graded from when no flag or ini line named one (replay
    takes the one folder holding the pack's recording): one line per pack, so a run never grades
    a recording the user did not know it picked."""
    if options.backend is not None or options.recording is not None:
        return []
    lines = []
    for run in runs:
        folder = (options.rootdir / run.recording).parent
        if folder.parent == options.results_dir:
            lines.append(f"jev: {run.pack}: graded {Path(run.recording).parent.as_posix()}/, the one backend folder "
                         "with its recording (no --jev-backend or jev_backend names one)")
    return list(dict.fromkeys(lines))  # a pack with splits: one line


class JevReporter:
    """Controller-side: prints the summary (with the mismatches reports carry), writes --jev-json."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = config.stash[OPTIONS_KEY]
        self.json_written: Path | None = None
        self.protocol_files: list[Path] = []

    @staticmethod
    def mismatches(stats: dict[str, list[Any]]) -> tuple[list[tuple[str, dict[str, Any]]], set[str]]:
        """Mismatches of case items, and bulk items that hold some, from the terminal's reports.

        Only mismatched items (and, under --jev-strict, failed ones) can carry them, so this
        reads those few reports at the end instead of inspecting every report as it comes.
        """
        per_case: list[tuple[str, dict[str, Any]]] = []
        bulk_nodes: set[str] = set()
        for category in ("mismatched", "regressed", "failed"):
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
        runs = store.results()
        if store.failures and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a pack without numbers is not a pass
        stability = [s.entry() for s in self.config.stash.get(STABILITY_KEY, [])]
        self.protocol_files = write_protocol_files(runs)
        if path is not None and (runs or stability):
            self.json_written = write_runs(path, runs, stability)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        store = self.config.stash[RUNS_KEY]
        per_case, bulk_nodes = self.mismatches(terminalreporter.stats)
        write_summary(terminalreporter, store.results(), per_case, bulk_nodes, self.options,
                      self.config.get_verbosity())
        if self.config.get_verbosity() >= -1:
            for line in found_folder_lines(store.results(), self.options):
                terminalreporter.write_line(line)
        for failure in store.failures:
            terminalreporter.write_line(f"jev: {failure}", red=True)
        here = self.config.invocation_params.dir
        for path in self.protocol_files:
            terminalreporter.write_line(f"jev: protocol file written: {relative_to(str(path), here)}")
        written = [path for report in terminalreporter.stats.get("passed", ()) if report.when == "call"
                   for key, paths in report.user_properties if key == WRITTEN_KEY for path in paths]
        if written and self.config.get_verbosity() >= -1:
            folders = sorted({relative_to(str(Path(p).parent), here) for p in written})
            terminalreporter.write_line(f"jev: {len(written)} registry file(s) written ({', '.join(folders)})")
        if self.json_written is not None and self.config.get_verbosity() >= -1:
            terminalreporter.write_line(f"jev: metrics of {len(store.results())} run(s) written to "
                                        f"{relative_to(str(self.json_written), here)}")
