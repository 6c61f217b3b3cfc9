"""The run machinery: a pack's run in this process (found, read and graded once, on demand;
metrics on a background thread, a large bootstrap in a child process), and the store of every
run the summary and --jev-json report.

Grading lives in evaluate.py and the protocol's additions in protocol/protocol_run.py; both
import numpy, and every pytest session imports this module (a project without packs too), so
they are imported inside the methods that grade, where import-linter still sees the edge; so is
the recording lookup, with the backend.json model it reads.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .. import paths
from ..errors import JevError
from ..gates import NO_BASELINE
from ..options import Options
from ..pricing import GIVEN, JEV_LIST_PRICE, price_source
from ..protocol.thresholds import HELDOUT, TUNE, freeze_of, role_of, thresholds_path
from ..recording_file import load_recording
from ..run_result import Interval, RunKey, RunResult

if TYPE_CHECKING:
    import numpy as np

    from ..evaluate import PackResult, Prepared
    from ..formats.flips_json import FlipItem, FlipReport
    from ..formats.recording_line import RecordingLine
    from ..packs.model import Pack, Split
    from ..protocol.protocol_run import ProtocolSetup
    from ..protocol.samples import Sample

SEALED = "sealed: held-out numbers come only from --jev-heldout"  # the skip reason of a sealed split's items
APART_MIN_DRAWS = 20_000_000  # items x resamples from which bootstrap_apart uses a child process


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
        self.protocol: ProtocolSetup | None = None  # a protocol run's setup (check[protocol] reads its problems)
        self.record_flags = ""  # the --jev-backend (and --jev-model) that re-record a stale line of the recording
        # why a plain run shows no numbers of this held-out split: its thresholds are not frozen yet
        self.sealed: str | None = None
        self.samples: tuple[Sample, ...] = ()  # a protocol run's per-sample answers
        self.flips: FlipReport | None = None  # against --jev-baseline (check[baseline] says why there is none)
        self.baseline_problems: tuple[str, ...] = ()  # why the baseline cannot be compared with: check[baseline]
        self._regressed: dict[str, list[FlipItem]] | None = None
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
        from ..evaluate import Settings, prepare, refusal  # numpy: see the module docstring
        from ..formats.backend_json import folder_prices_and_source  # backend.json's model: with the first pack run
        from ..identity import of
        from ..protocol import protocol_run
        from ..recording_lookup import find_recording  # reads backend.json through that model

        options = self.options
        try:
            path = find_recording(self.pack.path, self.pack.id, explicit=options.recording,
                                  backend=options.backend, results_dir=options.results_dir,
                                  tested=self.pack.tested, root=options.rootdir)
            recording = load_recording(path)
            (price_in, price_out), (source_in, source_out) = folder_prices_and_source(path.parent,
                                                                                      (JEV_LIST_PRICE[0], 0.0))
        except JevError as exc:
            self.problem = exc
            return
        if options.price_input is not None:
            price_in, source_in = options.price_input, GIVEN
        if options.price_output is not None:
            price_out, source_out = options.price_output, GIVEN
        role = self.protocol_role
        self.sealed = self.seal(path)
        if role is not None:
            self.protocol = protocol_run.setup(role, self.pack, recording, target_precision=options.target_precision,
                                               min_covered=options.min_covered, seed=options.seed, cases=self.cases,
                                               price=(options.price_input, options.price_output))
        # a threshold is never suggested from held-out data (--jev-target-precision on the tune split, or a pack
        # without splits)
        target = options.target_precision if role_of(self.split) != HELDOUT else None
        settings = Settings(bootstrap=options.bootstrap, seed=options.seed, price_input=price_in,
                            price_output=price_out, target_precision=target,
                            no_gates=options.no_gates, detail=options.write_results or options.registry,
                            price_source=price_source((source_in, source_out), (price_in, price_out)))
        backend = options.backend.text if options.backend is not None else None
        models = recording.models()
        if backend is None and options.recording is None:
            if path.parent.parent == options.results_dir:  # the one backend folder with a recording of the pack
                backend = path.parent.name
            elif len(models) == 1:
                backend = models[0]
        self.prepared = prepare(self.pack, recording, settings, backend=backend,
                                shown_path=paths.shown(recording.path, options.rootdir), split=self.split,
                                cases=self.cases, identity=of(self.pack, self.split))
        if self.protocol is not None:
            self.samples = protocol_run.samples(self.pack, self.cases, recording, self.prepared)
        stale = next((o for o in self.prepared.graded.outcomes.values() if o.status == "stale"), None)
        if stale is not None:
            self.record_flags = record_flags(options, recording.lines[stale.case_id], self.pack.record_model)
        # replay refuses its own stale lines one by one (their case items and check[recording] fail, the
        # other lines are graded); a baseline with one is refused whole (evaluate.refusal)
        refused = refusal(self.prepared, lines_apart=True)
        if refused is not None:
            self.refusal = refused[:2]
        elif options.baseline_given:
            del recording  # at 100,000 cases the decoded lines weigh more than the baseline's
            self._compare()

    def _compare(self) -> None:
        """The flip report against --jev-baseline, the baseline read, checked and graded exactly
        as the current recording (evaluate.against_baseline); or why there is none (check[baseline]
        fails with it)."""
        from ..evaluate import against_baseline

        options = self.options
        assert self.prepared is not None
        self.flips, self.baseline_problems = against_baseline(
            self.prepared, backend=options.baseline, path=options.baseline_path, results_dir=options.results_dir,
            rootdir=options.rootdir)

    def seal(self, recording: Path) -> str | None:
        """Why this held-out split shows no numbers in a plain run: a pack with a tune split shows
        held-out numbers only at frozen thresholds, once the backend's have been frozen by a
        --jev-heldout run (before, they could still shape the thresholds). None: shown."""
        if role_of(self.split) != HELDOUT or self.protocol_role is not None or TUNE not in self.pack.splits:
            return None
        if freeze_of(recording.parent, self.pack.id) is not None:
            return None
        where = paths.shown(thresholds_path(recording.parent, self.pack.id), self.options.rootdir)
        return f"{SEALED} at frozen thresholds, and {where} is not frozen yet: run --jev-tune, then --jev-heldout"

    @property
    def protocol_role(self) -> str | None:
        """tune or heldout when this run is a protocol run (--jev-tune / --jev-heldout on that split)."""
        role = role_of(self.split)
        return role if role is not None and role == self.options.protocol else None

    def start(self, store: RunStore, *, apart: bool) -> None:
        """Start the metrics (once) and hand the run to the process-wide store (never for a
        refused run: its numbers are not reported)."""
        if self._thread is not None or self.prepared is None or self.refusal is not None or self.sealed is not None:
            return
        self._thread = threading.Thread(target=self._work, args=(apart,), daemon=True,
                                        name=f"jev-metrics-{self.pack.id}")
        self._thread.start()
        store.add_run(self)

    def compute(self, *, apart: bool = False) -> PackResult:
        """The run's metrics, gates and (a protocol run) protocol result, computed here. With
        apart=True a large bootstrap runs in a child process (bootstrap_apart)."""
        from .. import metrics
        from ..evaluate import finish  # numpy: see the module docstring
        from ..protocol import protocol_run

        assert self.prepared is not None
        result = finish(self.prepared, draw=bootstrap_apart if apart else metrics.bootstrap, flips=self.flips,
                        no_flips=self.no_flips)
        if self.protocol is not None:
            result = protocol_run.attach(result, self.prepared, self.samples, self.protocol)
        return result

    def regressed(self, case_id: str) -> list[FlipItem]:
        """The case's regressed items against --jev-baseline (none without a flip report)."""
        if self.flips is None:
            return []
        if self._regressed is None:
            by_case: dict[str, list[FlipItem]] = {}
            for item in self.flips.regressed_items:
                by_case.setdefault(item.case, []).append(item)
            self._regressed = by_case
        return self._regressed.get(case_id, [])

    @property
    def no_flips(self) -> str:
        """Why the run has no flip report (the reason its flip gates are skipped with)."""
        if self.options.baseline_given:
            return f"the baseline cannot be compared with: see {self.check_prefix}check[baseline]"
        return NO_BASELINE

    @property
    def check_prefix(self) -> str:
        return f"{self.split}::" if self.split else ""

    def _work(self, apart: bool) -> None:
        try:
            self._result = self.compute(apart=apart)
        except BaseException as exc:  # re-raised in the thread that asks for the result  # noqa: BLE001
            self._error = exc

    def result(self) -> PackResult:
        assert self._thread is not None, "start() first"
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


def record_flags(options: Options, line: RecordingLine, record_model: str) -> str:
    """The flags that record again with the backend that recorded `line`: the --jev-backend given
    (when it names a backend kind), else the line's own kind and requested model."""
    spec = options.backend
    if spec is not None and spec.known is not None:
        return f"--jev-backend={spec.text}"
    kind, model = line.backend, line.requested_model
    if kind is None:
        return "--jev-backend=<the backend that recorded it>"
    known = options.catalog.kinds.get(kind)
    if known is not None and known.model_in_spec and model:
        return f"--jev-backend={kind}:{model}"
    return f"--jev-backend={kind}" + (f" --jev-model={model}" if model and model != record_model else "")


def bootstrap_apart(prob: np.ndarray, correct: np.ndarray, n_resamples: int, seed: int = 0
                    ) -> tuple[Interval | None, Interval | None]:
    """metrics.bootstrap(), in a child process when it is large; the very same numbers either way.

    Much of the bootstrap is numpy work that holds the GIL (bincount, fancy indexing), so
    on a background thread it stalls the thread running pytest's items: at 100,000 cases
    about 4 s. A child interpreter shares no GIL and costs ~0.2 s of start-up on the other
    core. It is a plain `python -c` (not multiprocessing, which would re-import the
    caller's __main__); if it cannot run, the bootstrap runs here.
    """
    from .. import metrics  # numpy: see the module docstring

    if prob.shape[0] * n_resamples < APART_MIN_DRAWS:
        return metrics.bootstrap(prob, correct, n_resamples, seed)
    # the child runs metrics.py itself (it imports only numpy and the standard library), loaded
    # by path: no sys.path change, no other installed copy of the package picked up instead
    child = ("import importlib.util as u, pickle, sys; s = u.spec_from_file_location('jev_metrics', sys.argv[1]); "
             "m = u.module_from_spec(s); sys.modules['jev_metrics'] = m; s.loader.exec_module(m); "
             "sys.stdout.buffer.write(pickle.dumps(m.bootstrap(*pickle.load(sys.stdin.buffer))))")
    try:
        done = subprocess.run([sys.executable, "-c", child, metrics.__file__],
                              input=pickle.dumps((prob, correct, n_resamples, seed), protocol=5),
                              capture_output=True, check=True)
        result = pickle.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, pickle.UnpicklingError, EOFError, ValueError):
        return metrics.bootstrap(prob, correct, n_resamples, seed)
    return result  # type: ignore[no-any-return]


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

