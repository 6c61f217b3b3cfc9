"""The pytest item tree of a pack: check[...], case[...] (or cases[bulk]) and gate[...] items."""

from __future__ import annotations

import gc
import json
import sys
import threading
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Iterable

import pytest

from .bulk import gc_paused
from .errors import JevError
from .options import Options

MISMATCH_KEY = "jev_mismatch"  # user_properties key carrying one case's mismatches
MISMATCH_COUNT_KEY = "jev_mismatch_count"  # ... and a bulk item's count of them
STATE_EXCERPT = 120
# From this many case items on (one pack, or the whole session), what collection built is
# frozen out of the cyclic GC until the session ends.
FREEZE_MIN_CASES = 10_000
FROZEN_KEY = pytest.StashKey[bool]()


def freeze_if_large(config: pytest.Config, n_cases: int) -> None:
    """Move every object alive now (packs, graded outcomes, items) out of the GC's reach.

    Called once a pack is loaded (per-case or bulk) and again when collection ends.

    They live until the session ends and hold no cycles worth collecting, yet each full
    collection walks all of them: with 100,000 case items that is about a sixth of the
    run. Frozen objects are still freed by reference counting; unfreeze_gc undoes this. No
    collection first (a full one costs ~0.5 s here): the little cyclic garbage collection
    leaves behind is collected after the unfreeze.
    """
    if n_cases >= FREEZE_MIN_CASES:
        gc.freeze()
        config.stash[FROZEN_KEY] = True


def unfreeze_gc(config: pytest.Config) -> None:
    """Hand the frozen objects back to the GC, unless this process exits next.

    Under pytest's command line (console_main on the stack) the interpreter ends right
    after: its final collections would walk the whole session once more (about 4 s at
    100,000 items, the same in plain pytest) only to free memory the OS reclaims anyway.
    There everything is frozen for good; atexit handlers still run. Anywhere else
    (pytest.main(), pytester's in-process runs) the process goes on, so it unfreezes.
    """
    if not config.stash.get(FROZEN_KEY, False):
        return
    config.stash[FROZEN_KEY] = False
    if _exits_after_run():
        gc.freeze()
    else:
        gc.unfreeze()


def _exits_after_run() -> bool:
    """Whether this run was started by pytest's command-line entry point, which ends the process.

    The innermost pytest.main() on the stack is this run's; the command line is its direct
    caller. (A run nested in another, as pytester's in-process runs are, has the outer
    command line further up: that one does not count.)
    """
    import _pytest.config as entry

    def codes(*names: str) -> set[Any]:
        return {getattr(entry, name).__code__ for name in names if hasattr(entry, name)}

    run, cli = codes("main", "_main"), codes("_console_main", "console_main")  # pytest 9 split each in two
    frame = sys._getframe(1)
    while frame is not None and frame.f_code not in run:
        frame = frame.f_back
    while frame is not None and frame.f_code in run:
        frame = frame.f_back
    return frame is not None and frame.f_code in cli


class PackWarning(pytest.PytestWarning):
    """Something SPEC.md asks of a pack that is not required to load it (README.md, CHANGELOG.md)."""


class JevFailure(Exception):
    """A pack item failed; `lines` is exactly what the report shows."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


class PackDirectory(pytest.Directory):
    """A folder holding pack.yaml. Its items are built from the pack, not from Python files."""

    options: Options
    pack: Any = None
    prepared: Any = None  # evaluate.Prepared: the recording graded against the pack
    cases_file: Path | None = None  # one Path object shared by every case item
    problem: JevError | None = None
    recording_problem: JevError | None = None
    _run: PackRun | None = None

    def collect(self) -> Iterable[pytest.Item]:
        self.options = self.config.stash[OPTIONS_KEY]
        self._load()
        yield CheckItem.from_parent(self, name="check[spec]", check="spec")
        if self.problem is not None:
            return
        for text in self.pack.warnings:
            self.warn(PackWarning(text))
        yield CheckItem.from_parent(self, name="check[recording]", check="recording")
        if self.recording_problem is not None:
            return
        if self._bulk():
            yield BulkItem.from_parent(self, name="cases[bulk]")
        else:
            make = CaseItem.from_parent
            # Items only add live objects, no garbage; and once the pack is frozen the GC's
            # full-collection threshold is tiny, so it would walk the growing item list again
            # and again (18 full collections for 100,000 items). The session freezes it all next.
            with gc_paused() if len(self.pack.cases) >= FREEZE_MIN_CASES else nullcontext():
                for index, case in enumerate(self.pack.cases):
                    yield make(self, name=f"case[{case.id}]", index=index)
        for gate in self.pack.gates.names():
            yield GateItem.from_parent(self, name=f"gate[{gate}]", gate=gate)

    def _load(self) -> None:
        """Read the pack, then grade its recording at once and let the decoded lines go.

        Grading here, before any item exists, keeps peak memory down: the decoded lines of a
        100,000-case recording weigh more than the items pytest builds afterwards.
        """
        from .session import load_inputs, prepare_pack

        pack, recording, pricing, self.problem, self.recording_problem = load_inputs(self.path, self.options)
        self.pack = pack
        if pack is not None:
            self.cases_file = pack.cases_file
        if recording is not None:
            self.prepared = prepare_pack(pack, recording, self.options, pricing)
        if pack is not None:  # bulk too: the pack's objects would be walked, at exit as well
            freeze_if_large(self.config, len(pack.cases))

    def _bulk(self) -> bool:
        if self.pack is None:
            return False
        mode = self.options.case_items
        return mode == "none" or (mode == "auto" and len(self.pack.cases) > self.options.case_items_max)

    def attach_run(self) -> None:
        """Start this pack's metrics once per process and hand the run to the process-wide store.

        The bootstrap runs on a background thread while the case items run; only gate items
        and the summary wait for it. xdist workers ship the store to the controller.
        """
        if self._run is None:
            # case items keep this process's main thread busy: a large bootstrap goes to a child
            self._run = PackRun(self.prepared, apart=not self._bulk())
            self.config.stash[RUNS_KEY].add_run(self._run)

    def result(self) -> Any:
        """The PackResult (waits for the background metrics)."""
        self.attach_run()
        assert self._run is not None
        return self._run.result()


class PackRun:
    """`evaluate.finish` of one prepared pack, computed on a background thread.

    The metrics overlap the case items instead of delaying the first one. With apart=True a
    large bootstrap runs in a child process, since much of it holds the GIL the items need.
    """

    def __init__(self, prepared: Any, *, apart: bool = False) -> None:
        self.key = (prepared.pack.id, prepared.shown_path)
        self._prepared = prepared
        self._apart = apart
        self._result: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name=f"jev-metrics-{prepared.pack.id}", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        from .evaluate import finish

        try:
            self._result = finish(self._prepared, apart=self._apart)
        except BaseException as exc:  # re-raised in the thread that asks for the result
            self._error = exc
        self._prepared = None

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result


class JevItem(pytest.Item):
    parent: PackDirectory

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, (JevFailure, JevError)):
            lines = getattr(excinfo.value, "lines", None) or [str(excinfo.value)]
            return "\n".join(lines)
        return super().repr_failure(excinfo)


class CheckItem(JevItem):
    def __init__(self, *, check: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check

    def runtest(self) -> None:
        d = self.parent
        if self.check == "spec":
            if d.problem is not None:
                raise JevFailure([d.problem.one_line()])
            return
        if d.recording_problem is not None:
            raise JevFailure([d.recording_problem.one_line()])
        d.attach_run()
        if d.prepared.problems:
            raise JevFailure(list(d.prepared.problems))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        if self.check == "spec":
            return self.path / "pack.yaml", 0, f"{self.name}"
        prepared = self.parent.prepared
        return prepared.recording_path if prepared is not None else self.path, None, self.name


class CaseItem(JevItem):
    def __init__(self, *, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.index = index

    def runtest(self) -> None:
        d = self.parent
        d.attach_run()
        outcome = d.prepared.graded.outcomes[self.index]
        if outcome.status == "ok":
            return
        case = d.pack.cases[self.index]
        if outcome.status == "mismatch":
            self.user_properties.append((MISMATCH_KEY, json.dumps(mismatch_record(d.pack.id, case, outcome))))
            if d.options.strict:
                raise JevFailure(mismatch_lines(case, outcome) + ["(--jev-strict: mismatches fail)"])
            return
        where = f"{d.cases_file}:{case.line}"
        raise JevFailure([f"case {case.id} ({where}): {p}" for p in outcome.problems])

    def reportinfo(self) -> tuple[Path, int | None, str]:
        d = self.parent
        case = d.pack.cases[self.index]
        return d.cases_file, case.line - 1, f"case {case.id}"


class BulkItem(JevItem):
    """All cases of a large pack graded inside one item (--jev-case-items=none)."""

    def runtest(self) -> None:
        d = self.parent
        d.attach_run()
        cases = d.pack.cases
        bad, mismatched = [], 0
        for case, outcome in zip(cases, d.prepared.graded.outcomes):
            if outcome.status in ("error", "invalid"):
                bad.append(f"case {case.id} ({d.cases_file}:{case.line}): {'; '.join(outcome.problems)}")
            elif outcome.status == "mismatch":
                mismatched += 1
        if mismatched:
            self.user_properties.append((MISMATCH_COUNT_KEY, mismatched))
        if bad:
            shown = bad[:20] + ([f"... and {len(bad) - 20} more"] if len(bad) > 20 else [])
            raise JevFailure([f"{len(bad)} of {len(cases)} cases have no valid answer:"] + shown)
        if mismatched and d.options.strict:
            raise JevFailure([f"{mismatched} of {len(cases)} cases mismatch their gold labels "
                              "(--jev-strict: mismatches fail); the summary lists them"])

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.parent.cases_file, 0, self.name


class GateItem(JevItem):
    def __init__(self, *, gate: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate = gate

    def runtest(self) -> None:
        d = self.parent
        d.attach_run()
        if d.options.no_gates:
            pytest.skip("--jev-no-gates: gates are not evaluated")
        try:
            result = d.result()
        except Exception as exc:  # the summary says it too; here it fails the gate, in one line
            raise JevFailure([f"gate {self.gate}: metrics failed: {type(exc).__name__}: {exc}"]) from None
        gate = next(g for g in result.gates if g.gate == self.gate)
        if gate.outcome == "skipped":
            pytest.skip(f"gate {gate.gate} not computable: {gate.detail}")
        if gate.outcome == "failed":
            raise JevFailure(gate_failure_lines(gate, result))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.parent.pack.gates.lines.get(self.gate, 1)
        return self.parent.pack.gates_file, line - 1, f"gate {self.gate}"


def gate_failure_lines(gate: Any, result: Any) -> list[str]:
    interval = (f" (95% CI {gate.interval[0]:.3f}-{gate.interval[1]:.3f})" if gate.interval else "")
    value = "n/a" if gate.value is None else f"{gate.value:.6g}"
    threshold = "n/a" if gate.threshold is None else f"{gate.threshold:.6g}"
    where = f"{result.pack.gates_file}:{gate.line}" if gate.line else str(result.pack.gates_file)
    return [
        f"gate {gate.gate} failed: {gate.detail}",
        f"  metric {gate.metric} = {value}{interval}, threshold {threshold} ({where})",
        f"  recording {result.recording_path}" + (f" (backend {result.backend})" if result.backend else ""),
    ]


def excerpt(state: Any) -> str:
    text = json.dumps(dict(state), ensure_ascii=False)
    return text if len(text) <= STATE_EXCERPT else text[: STATE_EXCERPT - 3] + "..."


def mismatch_record(pack_id: str, case: Any, outcome: Any) -> dict[str, Any]:
    return {"pack": pack_id, "case": case.id, "state": excerpt(case.state),
            "misses": [m.as_dict() for m in outcome.misses]}


def mismatch_lines(case: Any, outcome: Any) -> list[str]:
    return [f"case {case.id}: {m.question} expected {json.dumps(m.expected)} got {json.dumps(m.got)} "
            f"(p={m.probability:.2f}); state {excerpt(case.state)}" for m in outcome.misses]


OPTIONS_KEY = pytest.StashKey[Options]()
RUNS_KEY = pytest.StashKey["RunStore"]()
STABILITY_KEY = pytest.StashKey[list]()  # stability.Stability of each pack recorded with --jev-repeat


class RunStore:
    """The runs of this process (or, on the xdist controller, of every worker), keyed by
    (pack, recording): payloads received, and PackRuns still computing."""

    def __init__(self) -> None:
        self.runs: dict[tuple[str, str], dict[str, Any] | PackRun] = {}
        self.failures: list[str] = []

    def add(self, payload: dict[str, Any]) -> None:
        self.runs.setdefault((payload["pack"], payload["recording"]), payload)

    def add_run(self, run: PackRun) -> None:
        self.runs.setdefault(run.key, run)

    def sorted(self) -> list[dict[str, Any]]:
        """Every payload, waiting for runs still computing; a run that crashed is noted, not raised."""
        out = []
        for key in sorted(self.runs):
            entry = self.runs[key]
            if isinstance(entry, PackRun):
                try:
                    entry = self.runs[key] = entry.result().payload
                except Exception as exc:
                    del self.runs[key]
                    self.failures.append(f"{key[0]} ({key[1]}): metrics failed: {type(exc).__name__}: {exc}")
                    continue
            out.append(entry)
        return out
