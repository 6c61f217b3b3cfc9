"""A pack's run in this process (found, read and graded once, on demand; metrics on a
background thread) and the store of every run the summary and --jev-json report."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import JevError
from ..options import Options
from ..run_result import RunKey, RunResult

if TYPE_CHECKING:
    from ..evaluate import PackResult, Prepared, ProtocolSetup
    from ..packs.model import Pack, Split
    from ..recording_file import Recording


class PackRun:
    """One (pack, split) against its recording.

    `prepare()` finds the recording, reads it, grades the cases and lets the decoded lines
    go (at 100,000 cases they weigh more than the items pytest builds). Under replay it runs
    during collection, before any item exists, to keep peak memory down; when this run
    records first, or in an xdist worker, it runs when the first item needs it, so a pack is
    graded once, by the worker that runs its items, after any recording.

    `start()` computes the metrics on a background thread, so they overlap the case items;
    only gate items and the summary wait. With apart=True a large bootstrap runs in a child
    process, since much of it holds the GIL the items' thread needs.
    """

    def __init__(self, pack: Pack, split: Split, options: Options) -> None:
        self.pack = pack
        self.split = split.name
        self.split_file = split
        self.cases = split.cases
        self.options = options
        self.prepared: Prepared | None = None
        self.problem: JevError | None = None  # no usable recording: check[recording] says why
        # (check item, reason) when the run's numbers must not be used: a frozen split whose
        # bytes changed (nothing is graded), or a recording made for other wording (rubric drift)
        self.refusal: tuple[str, str] | None = None
        self._ready = False
        self._thread: threading.Thread | None = None
        self._result: PackResult | None = None
        self._error: BaseException | None = None

    @property
    def key(self) -> RunKey:
        assert self.prepared is not None
        return RunKey(self.pack.id, self.split, self.prepared.shown_path)

    def prepare(self) -> None:
        if self._ready:
            return
        self._ready = True
        frozen = self.split_file.frozen_problem()
        if frozen is not None:  # refused before anything is read or graded
            self.refusal = ("check[split]", "the frozen split changed")
            return
        from .. import paths
        from ..evaluate import JEV_PRICE_INPUT, Settings, prepare
        from ..recording_file import load_recording

        options = self.options
        try:
            path = paths.find_recording(self.pack.path, self.pack.id, explicit=options.recording,
                                         backend=options.backend, results_dir=options.results_dir,
                                         tested=self.pack.tested)
            recording = load_recording(path)
            price_in, price_out = paths.pricing(path.parent, (JEV_PRICE_INPUT, 0.0))
        except JevError as exc:
            self.problem = exc
            return
        if options.price_input is not None:
            price_in = options.price_input
        if options.price_output is not None:
            price_out = options.price_output
        settings = Settings(bootstrap=options.bootstrap, seed=options.seed, price_input=price_in,
                            price_output=price_out, target_precision=options.target_precision,
                            no_gates=options.no_gates, protocol=self._protocol(path, recording),
                            detail=options.write_results or options.registry)
        backend = options.backend
        models = recording.models()
        if backend is None and options.recording is None and len(models) == 1:
            backend = models[0]
        self.prepared = prepare(self.pack, recording, settings, backend=backend,
                                shown_path=paths.shown(recording.path, options.rootdir), split=self.split,
                                cases=self.cases)
        if self.prepared.rubric.drift:
            self.refusal = ("check[rubric]", "the recording was made for other wording (rubric drift)")

    @property
    def protocol_role(self) -> str | None:
        """tune or heldout when this run is a protocol run (--jev-tune / --jev-heldout on that split)."""
        from ..protocol.thresholds import role_of

        role = role_of(self.split)
        return role if role is not None and role == self.options.protocol else None

    def _protocol(self, path: Path, recording: Recording) -> ProtocolSetup | None:
        """The setup of a protocol run, with the problems that refuse it: tuning after a held-out
        report, or frozen thresholds that do not belong to this held-out run."""
        role = self.protocol_role
        if role is None:
            return None
        from ..evaluate import ProtocolSetup
        from ..protocol import PROTOCOL_VERSION
        from ..protocol.thresholds import TUNE, read_thresholds, retune_problem, thresholds_path, validation_problems
        from ..rubric import rubric_fingerprint

        folder, pack, options = path.parent, self.pack, self.options
        target = options.target_precision if options.target_precision is not None else 0.9
        if role == TUNE:
            problem = retune_problem(folder, pack.id)
            return ProtocolSetup(role, folder, target, options.min_covered, None, (problem,) if problem else ())
        if TUNE not in pack.splits:  # an evaluation split whose thresholds belong to the pack
            return ProtocolSetup(role, folder, target, options.min_covered)
        where = thresholds_path(folder, pack.id)
        try:
            frozen = read_thresholds(where)
        except JevError as exc:
            return ProtocolSetup(role, folder, target, options.min_covered, None, (exc.one_line(),))
        expected = {"pack": pack.id, "pack_version": pack.version, "mode": min(recording.modes(), default="live"),
                    "backend": folder.name, "served_models": sorted(recording.models()),
                    "dataset_sha256": pack.splits[TUNE].declared_sha256,
                    "rubric": rubric_fingerprint(pack.questions_as_sent()), "protocol_version": PROTOCOL_VERSION,
                    "seed": options.seed}
        problems = tuple(validation_problems(frozen, expected, where))
        return ProtocolSetup(role, folder, target, options.min_covered, frozen, problems)

    def start(self, store: RunStore, *, apart: bool) -> None:
        """Start the metrics (once) and hand the run to the process-wide store (never for a
        refused run: its numbers are not reported)."""
        if self._thread is not None or self.prepared is None or self.refusal is not None:
            return
        self._thread = threading.Thread(target=self._work, args=(apart,), daemon=True,
                                        name=f"jev-metrics-{self.pack.id}")
        self._thread.start()
        store.add_run(self)

    def _work(self, apart: bool) -> None:
        from ..evaluate import finish

        try:
            assert self.prepared is not None
            self._result = finish(self.prepared, apart=apart)
        except BaseException as exc:  # re-raised in the thread that asks for the result  # noqa: BLE001
            self._error = exc

    def result(self) -> PackResult:
        assert self._thread is not None, "start() first"
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


class RunStore:
    """The runs of this process (or, on the xdist controller, of every worker), keyed by
    (pack, split, recording): results received, and PackRuns still computing."""

    def __init__(self) -> None:
        self.runs: dict[RunKey, RunResult | PackRun] = {}
        self.failures: list[str] = []

    def add_result(self, run: RunResult) -> None:
        self.runs.setdefault(run.key, run)

    def add_run(self, run: PackRun) -> None:
        self.runs.setdefault(run.key, run)

    def results(self) -> list[RunResult]:
        """Every run's result in key order, waiting for runs still computing; a run whose
        metrics crashed is noted in `failures`, not raised."""
        out = []
        for key in sorted(self.runs, key=lambda k: (k.pack, k.split, k.recording)):
            entry = self.runs[key]
            if isinstance(entry, PackRun):
                try:
                    entry = self.runs[key] = entry.result().run
                except Exception as exc:  # noqa: BLE001  reported as one line, the run goes red
                    del self.runs[key]
                    where = f"{key.pack}{'::' + key.split if key.split else ''} ({key.recording})"
                    self.failures.append(f"{where}: metrics failed: {type(exc).__name__}: {exc}")
                    continue
            out.append(entry)
        return out


OPTIONS_KEY = pytest.StashKey[Options]()
RUNS_KEY = pytest.StashKey[RunStore]()
STABILITY_KEY = pytest.StashKey[list[Any]]()  # record.stability.Stability of each pack recorded with --jev-repeat
