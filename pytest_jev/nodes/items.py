"""The items of a pack: check[...], case[...] (or cases[bulk]) and gate[...]."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from ..errors import JevError, node_name_part, printable
from ..gates import FLIP_GATES
from ..rubric import pin_problem
from ..stash import MISMATCH_COUNT_KEY, MISMATCH_KEY, REGRESSED_KEY, RUNS_KEY
from .gate_text import gate_failure_lines
from .runs import PackRun

if TYPE_CHECKING:
    from ..formats.flips_json import FlipItem
    from ..grade import CaseOutcome
    from ..packs.model import Case, Pack

STATE_EXCERPT = 120
BULK_SHOWN = 20
NAMED_MAX = 10  # cases a re-record command names one by one (more: the pack, whose new_episodes asks just those)
NO_RECORDING = "no usable recording"
REFUSED = "refused"


class PackWarning(pytest.PytestWarning):
    """Something SPEC.md asks of a pack that is not required to load it."""


class JevFailure(Exception):
    """A pack item failed; `lines` is what the report shows, each made printable there (repr_failure).

    The report starts with a headline: what is wrong, first, in a few words (pytest's short
    summary and JUnit's failure message show only that line, cut to the terminal's width), then
    the lines that say where and how to fix it. `headline` None: made from the first line."""

    def __init__(self, lines: list[str], headline: str | None = None) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines
        self.headline = headline if headline is not None else headline_of(lines)


# a problem line starts with its place: "packs/x/cases.jsonl:5: ..." (any file we read)
LOCATION = re.compile(r"^(?P<file>[^:]*?\.(?:yaml|yml|jsonl|json|md))(?::(?P<line>\d+))?: (?P<rest>.+)$")


def headline_of(lines: list[str]) -> str:
    """The reason first, its place after it: `expect.queue is "x", not one of [...]; give one
    declared label per question (cases.jsonl:5)`, and how many more problems follow."""
    if not lines:
        return "failed"
    first = lines[0]
    match = LOCATION.match(first)
    if match is not None:
        place = os.path.basename(match["file"]) + (f":{match['line']}" if match["line"] else "")
        first = f"{match['rest']} ({place})"
    problems = sum(1 for line in lines if LOCATION.match(line))
    return first + (f" (and {problems - 1} more below)" if problems > 1 else "")


class JevItem(pytest.Item):
    """Base of a pack's items: they fail with plain lines, never a traceback of ours."""

    @classmethod
    def make(cls, parent: pytest.Collector, name: str, **kw: Any) -> Any:
        """An item whose node id is built the way pytest parses one (`<parent>::check[spec]`),
        so --lf, --ff, --sw, --deselect and a re-run of a printed node id find it again on
        every pytest version (pytest 9.2 reads `case[x]` as name `case` with parameters `x`)."""
        return cls.from_parent(parent, name=name, nodeid=f"{parent.nodeid}::{name}", **kw)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """A headline (what is wrong), then the lines saying where and what to do; paths relative
        to where pytest was started, as pytest shows its own. Anything else that is raised (a bug
        of ours) keeps pytest's own report, its traceback and crash line."""
        error = excinfo.value
        if isinstance(error, JevError):
            error = JevFailure(error.lines(), headline=error.headline())
        if isinstance(error, JevFailure):
            lines = [error.headline, *error.lines] if error.lines[:1] != [error.headline] else error.lines
            return "\n".join(printable(self.relative(line)) for line in lines)
        return super().repr_failure(excinfo)

    def relative(self, text: str) -> str:
        """`text` with the folder pytest was started in dropped from the paths it names."""
        return relative_to(text, self.config.invocation_params.dir)


class ProblemItem(JevItem):
    """check[spec] of a pack that does not load: fails with the loader's one line."""

    def __init__(self, *, problem: JevError, **kw: Any) -> None:
        super().__init__(**kw)
        self.problem = problem

    def runtest(self) -> None:
        raise JevFailure(self.problem.lines(), headline=self.problem.headline())

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, self.name


class OutsideItem(JevItem):
    """A pack a protocol run does not apply to (no split of that role): skipped with the reason,
    so `pytest packs/ --jev-tune` over a mixed folder says what it left alone."""

    def __init__(self, *, reason: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.reason = reason

    def runtest(self) -> None:
        pytest.skip(self.reason)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, self.name


class RunItem(JevItem):
    """An item that reads its pack's run. `mismatch`: why a case item (or cases[bulk]) that
    passed holds mismatches; the report is then a skip with that reason (plugin.py), the
    `<skipped message=...>` JUnit readers show, and the terminal counts it as mismatched."""

    run: PackRun
    mismatch: str | None = None

    def __init__(self, *, pack: Pack, run: PackRun, bulk: bool = False, **kw: Any) -> None:
        super().__init__(**kw)
        self.pack = pack
        self.run = run
        self.bulk = bulk

    def ready(self) -> PackRun:
        """The run, graded and its metrics started; skipped, pointing at the check item that
        says why, when there is no usable recording or its numbers are refused."""
        run = self.run
        run.prepare()
        self.skip_if_refused(run)
        if run.problem is not None:
            self.skip_no_recording()
        if run.sealed is not None:
            pytest.skip(run.sealed)
        run.start(self.config.stash[RUNS_KEY], apart=not self.bulk)
        return run

    def skip_if_refused(self, run: PackRun, own_check: str | None = None) -> None:
        """Skip, naming the check item that refused the run's numbers (unless it is this one)."""
        if run.refusal is not None and run.refusal[0] != own_check:
            check, why = run.refusal
            pytest.skip(f"{REFUSED}: {why}: see {self._pack_nodeid()}::{check}")

    def skip_no_recording(self) -> NoReturn:
        pytest.skip(f"{NO_RECORDING}: see {self._pack_nodeid()}::check[recording]")

    def _pack_nodeid(self) -> str:
        return self.nodeid.rsplit("::", 1)[0]


class CheckItem(RunItem):
    """check[spec]: the pack follows SPEC.md (and its pinned rubric). check[split]: a frozen
    split is the file that was frozen. check[recording]: the recording belongs to the pack.
    check[rubric]: the recording was made for the wording the pack has today. check[protocol]
    (--jev-tune, --jev-heldout): the protocol's rules hold for this run. check[baseline]
    (--jev-baseline): the baseline was found, belongs to the pack and is not refused."""

    run: PackRun | None  # type: ignore[assignment]  # check[spec] of a split pack reads no run

    def __init__(self, *, check: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.check = check

    def runtest(self) -> None:
        if self.check == "spec":
            return self._spec()
        run = self.run
        assert run is not None
        if self.check == "split":
            frozen = run.split_file.frozen_problem()
            if frozen is not None:
                raise JevFailure([frozen])
            return None
        run.prepare()
        self.skip_if_refused(run, own_check=f"check[{self.check}]")
        if run.problem is not None:
            if self.check in ("rubric", "baseline"):
                self.skip_no_recording()
            raise JevFailure(run.problem.lines(), headline=run.problem.headline())
        assert run.prepared is not None
        if self.check == "baseline":
            if run.baseline_problems:
                raise JevFailure(list(run.baseline_problems))
            return None
        if self.check == "protocol":
            setup = run.protocol
            if setup is not None and setup.problems:
                raise JevFailure(list(setup.problems))
            return None
        if self.check == "rubric":
            rubric = run.prepared.rubric
            if rubric.drift:
                raise JevFailure(list(rubric.lines))
            if rubric.outcome == "unchecked":
                pytest.skip(f"rubric drift not checked: {rubric.lines[0]}")
            return None
        run.start(self.config.stash[RUNS_KEY], apart=not self.bulk)
        problems = list(run.prepared.problems)
        from ..evaluate import stale_cases, stale_line  # loaded by run.prepare already

        stale = stale_cases(run.prepared)
        if stale:
            problems.append(f"{stale_line(run.prepared, stale)}; "
                            f"re-record just those cases: {rerecord_command(run, self._pack_nodeid(), stale)}")
        if problems:
            raise JevFailure(problems)
        return None

    def _spec(self) -> None:
        """A pinned rubric (pack.yaml `rubric:`) must be the fingerprint of the questions as written."""

        problem = pin_problem(self.pack)
        if problem is not None:
            raise JevFailure([problem])

    def reportinfo(self) -> tuple[Path, int | None, str]:
        if self.check == "split" and self.run is not None:
            return self.run.split_file.file, 0, self.name
        if self.check == "spec" or self.run is None or self.run.prepared is None:
            return self.path, 0, self.name
        return self.run.prepared.recording_path, None, self.name


class CaseItem(RunItem):
    def __init__(self, *, case: Case, **kw: Any) -> None:
        super().__init__(**kw)
        self.case = case

    def runtest(self) -> None:
        run = self.ready()
        assert run.prepared is not None
        outcome = run.prepared.graded.outcomes[self.case.id]
        if outcome.status == "ok":
            return
        if outcome.status == "mismatch":
            self.user_properties.append((MISMATCH_KEY, json.dumps(mismatch_record(self.pack.id, self.case, outcome))))
            regressed = run.regressed(self.case.id)
            if regressed:
                self.user_properties.append((REGRESSED_KEY, len(regressed)))
            if run.options.strict:  # a regression first: the headline says what got worse
                raise JevFailure([*map(regression_line, regressed), *mismatch_lines(self.case, outcome),
                                  "(--jev-strict: mismatches fail)"])
            # a regressed item (right in --jev-baseline) says so, first, in the reason JUnit readers show
            gone = {m.question for m in regressed}
            self.mismatch = "mismatch: " + "; ".join(
                f"{m.question}: expected {json.dumps(m.expected)}, got {json.dumps(m.got)} (p={m.probability:.2f})"
                + (", regressed (right in the baseline)" if m.question in gone else "")
                for m in sorted(outcome.misses, key=lambda m: m.question not in gone))
            return
        lines = problem_lines(run.split_file.file, self.case, outcome, run.prepared.shown_path)
        if outcome.status == "stale":
            lines = [f"{line}; re-record just the stale cases: "
                     f"{rerecord_command(run, self._pack_nodeid(), [self.case])}" for line in lines]
        more = f" (and {len(outcome.problems) - 1} more below)" if len(outcome.problems) > 1 else ""
        raise JevFailure(lines, headline=f"{outcome.problems[0]}{more}" if outcome.problems else None)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.run.split_file.file, self.case.line - 1, f"case {printable(self.case.id)}"


class BulkItem(RunItem):
    """All cases of a large pack graded inside one item (--jev-case-items=none)."""

    def runtest(self) -> None:
        run = self.ready()
        assert run.prepared is not None
        cases = run.cases
        outcomes = run.prepared.graded.outcomes
        bad = [case for case in cases if outcomes[case.id].status in ("error", "invalid")]
        mismatched = sum(1 for case in cases if outcomes[case.id].status == "mismatch")
        if mismatched:
            self.user_properties.append((MISMATCH_COUNT_KEY, mismatched))
        if bad:
            shown = [line for case in bad[:BULK_SHOWN]
                     for line in problem_lines(run.split_file.file, case, outcomes[case.id], run.prepared.shown_path)]
            more = [f"... and {len(bad) - BULK_SHOWN} more"] if len(bad) > BULK_SHOWN else []
            raise JevFailure([f"{len(bad)} of {len(cases)} cases have no valid answer:", *shown, *more])
        if mismatched and run.options.strict:
            why = f"{mismatched} of {len(cases)} cases mismatch their gold labels (--jev-strict: mismatches fail)"
            raise JevFailure([f"{why}; the summary lists them"])
        if mismatched:
            items = sum(len(outcomes[case.id].misses) for case in cases if outcomes[case.id].status == "mismatch")
            plural = "s" if items != 1 else ""
            self.mismatch = (f"mismatch: {mismatched} of {len(cases)} cases disagree with their gold labels "
                             f"({items} item{plural}); the terminal summary and --jev-json list them")

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.run.split_file.file, 0, self.name


class GateItem(RunItem):
    def __init__(self, *, gate: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.gate = gate

    def runtest(self) -> None:
        run = self.ready()
        if run.options.no_gates:
            pytest.skip("--jev-no-gates: gates are not evaluated")
        try:
            result = run.result()
        except Exception as exc:  # noqa: BLE001  the summary says it too; here it fails the gate, in one line
            raise JevFailure([f"gate {self.gate}: metrics failed: {type(exc).__name__}: {exc}"]) from None
        gate = next(g for g in result.run.gates if g.gate == self.gate)
        if gate.outcome == "skipped":
            pytest.skip(f"gate {gate.gate} not computable: {gate.detail}")
        if gate.outcome == "failed":
            flips = result.run.flips if gate.gate in FLIP_GATES else None
            shown = flips.regressed_items[:BULK_SHOWN] if flips is not None else ()
            more = ([f"  ... and {len(flips.regressed_items) - BULK_SHOWN} more (the summary lists them)"]
                    if flips is not None and len(flips.regressed_items) > BULK_SHOWN else [])
            raise JevFailure([*gate_failure_lines(gate, result), *(f"  {regression_line(x)}" for x in shown), *more],
                             headline=gate.verdict)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.pack.gates.lines.get(self.gate, 1)
        return self.pack.gates_file, line - 1, f"gate {self.gate}"


def rerecord_command(run: PackRun, parent: str, cases: list[Case]) -> str:
    """The command that records these cases again, and only them: their node ids (a bare --jev-record
    asks again just the lines recorded for another request), or, for many, the split or pack."""
    if len(cases) <= NAMED_MAX:
        targets = " ".join(shlex.quote(f"{parent}::case[{node_name_part(case.id)}]") for case in cases)
    else:
        targets = shlex.quote(parent)
    return f"pytest {targets} --jev-record {run.record_flags}".rstrip()


def problem_lines(case_file: Path, case: Case, outcome: CaseOutcome, recording: str) -> list[str]:
    """Why a case has no valid answer, located where it can be fixed: an error or a broken
    answer at the recording's line, a case missing from it at the case's line in its file
    (cases.jsonl, or the split's own file)."""
    if outcome.line is not None:
        where = f"{recording}:{outcome.line}"
        fix = "; re-record the case (--jev-record)" if outcome.status == "invalid" else ""
    else:
        where, fix = f"{case_file}:{case.line}", ""
    return [f"{where}: case {case.id}: {problem}{fix}" for problem in outcome.problems]


def excerpt(state: Any) -> str:
    text = json.dumps(dict(state), ensure_ascii=False)
    return text if len(text) <= STATE_EXCERPT else text[: STATE_EXCERPT - 3] + "..."


def mismatch_record(pack_id: str, case: Case, outcome: CaseOutcome) -> dict[str, Any]:
    return {"pack": pack_id, "case": case.id, "state": excerpt(case.state),
            "misses": [{"question": m.question, "expected": m.expected, "got": m.got,
                        "probability": m.probability} for m in outcome.misses]}


def regression_line(item: FlipItem) -> str:
    """One regressed item, as the summary lists it."""
    return (f"regressed: case {item.case} {item.question}: expected {json.dumps(item.expected)}, baseline "
            f"{json.dumps(item.baseline)} (p={item.baseline_probability:.2f}), now {json.dumps(item.current)} "
            f"(p={item.current_probability:.2f}); state {item.state}")


def mismatch_lines(case: Case, outcome: CaseOutcome) -> list[str]:
    return [f"case {case.id}: {m.question} expected {json.dumps(m.expected)} got {json.dumps(m.got)} "
            f"(p={m.probability:.2f}); state {excerpt(case.state)}" for m in outcome.misses]


def relative_to(text: str, folder: Path) -> str:
    """`text` with `folder/` dropped from the absolute paths in it (a path elsewhere stays whole)."""
    prefix = str(folder).rstrip(os.sep) + os.sep
    return text.replace(prefix, "") if prefix in text else text
