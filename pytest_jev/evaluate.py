"""(Pack, Recording, Settings) -> RunResult: the one place a run's metrics are assembled.

A RunResult is a pure function of its inputs, which is what makes replay deterministic
and lets every xdist worker and the controller agree. It comes in two steps, so that a
large recording can be dropped as soon as it is graded: `prepare` (everything that needs
the decoded lines) and `finish` (numpy metrics, bootstrap, gates).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import metrics
from .formats.identity_json import Dataset, Identity
from .gates import NO_BASELINE, evaluate_gates
from .gcpause import gc_paused
from .grade import STALE, Graded, grade
from .identity import dataset_of, of
from .packs.model import Case, Pack
from .paths import shown
from .pricing import DEFAULT, JEV_LIST_PRICE
from .recording_file import Recording
from .rubric import RubricCheck, rubric_fingerprint
from .rubric import check as check_rubric
from .run_detail import locale_suggestions, locales, run_detail
from .run_result import (
    AuthorCoverage,
    Cost,
    CoverageRow,
    Interval,
    Latency,
    Mismatch,
    QuestionResult,
    RunResult,
    Suggestion,
)
from .stats import majority_baseline, nearest_rank

if TYPE_CHECKING:
    from .backends.kinds import BackendSpec
    from .formats.flips_json import FlipReport

# (prob, correct, resamples, seed) -> (accuracy interval, ECE interval): metrics.bootstrap's signature
Bootstrap = Callable[[np.ndarray, np.ndarray, int, int], tuple[Interval | None, Interval | None]]
JEV_PRICE_INPUT = JEV_LIST_PRICE[0]  # USD per million input tokens, Jev's list price; output is free


@dataclass(frozen=True)
class Settings:
    bootstrap: int = 1000
    seed: int = 0
    price_input: float | None = JEV_PRICE_INPUT  # None: no price known, so no cost
    price_output: float | None = 0.0
    target_precision: float | None = None
    no_gates: bool = False
    detail: bool = False  # compute the registry's detail (--jev-write-results)
    price_source: str | None = DEFAULT  # where the prices come from (pricing.price_source)


@dataclass(frozen=True)
class Prepared:
    """Everything a run needs from a recording, read in one pass (see `prepare`).

    It holds no decoded recording line, so a caller may drop the Recording once it has
    this: at 100,000 cases the decoded lines weigh several hundred MB.
    """

    pack: Pack
    split: str
    cases: tuple[Case, ...]
    settings: Settings
    backend: str | None
    recording_path: Path
    shown_path: str  # the recording as the user reads it (relative to the rootdir)
    recording_sha256: str
    models: tuple[str, ...]
    mode: str  # "mock" or "live"
    graded: Graded
    cost: Cost
    latency: Latency
    problems: tuple[str, ...]  # integrity problems: why the recording does not belong to the pack
    rubric: RubricCheck  # the wording the recording was made with, against the pack's
    identity: Identity  # what the numbers depend on (computed once per run)
    dataset: Dataset


@dataclass(frozen=True)
class PackResult:
    """A run's result with what only this process needs: the pack and the graded cases."""

    pack: Pack
    recording_path: Path
    graded: Graded
    run: RunResult
    problems: tuple[str, ...] = ()


def question_results(pack: Pack, graded: Graded) -> tuple[QuestionResult, ...]:
    items = graded.items
    out = []
    for qi, (qid, q) in enumerate(pack.questions.items()):
        mask = items.question == qi
        prob, correct = items.prob[mask], items.correct[mask]
        n = int(prob.shape[0])
        out.append(QuestionResult(
            qid=qid, type=q.type, n=n, missing=items.missing_by_question[qid],
            accuracy=metrics.mean_bool(correct), mean_decision_prob=metrics.mean_float(prob),
            ece=metrics.ece(prob, correct),
            brier=(metrics.brier(prob, items.got_true[mask], items.gold_true[mask])
                   if q.type == "noul" and n else None)))
    return tuple(out)


def usage_and_latency(cases: Sequence[Case], recording: Recording, settings: Settings) -> tuple[Cost, Latency]:
    """Tokens and latency of every case's line, error lines included (jevassert's rule)."""
    tokens_in = tokens_out = 0
    saw_usage = False
    latencies: list[float] = []
    lines = recording.lines
    for case in cases:
        rec = lines.get(case.id)
        if rec is None:
            continue
        counted = rec.input_tokens  # counts and latency were checked when the recording was read
        if counted is not None:
            tokens_in += counted
            saw_usage = True
        counted = rec.output_tokens
        if counted is not None:
            tokens_out += counted
        latency = rec.latency_ms
        if latency is not None:
            latencies.append(float(latency))
    price_in, price_out = settings.price_input, settings.price_output
    total = ((tokens_in * price_in + tokens_out * price_out) / 1_000_000
             if saw_usage and price_in is not None and price_out is not None else None)
    cost = Cost(input_tokens=tokens_in if saw_usage else None, output_tokens=tokens_out if saw_usage else None,
                total_usd=total, per_case_usd=total / len(cases) if total is not None and cases else None,
                price_input=price_in, price_output=price_out)
    return cost, Latency(nearest_rank(latencies, 50), nearest_rank(latencies, 95))


def _author_coverage(pack: Pack, graded: Graded) -> AuthorCoverage | None:
    if not pack.thresholds:
        return None
    items = graded.items
    floors = [pack.thresholds.get(qid, {}) for qid in items.qids]
    accepted = np.zeros(items.n, dtype=bool)
    for i, (qi, label, p) in enumerate(zip(items.question.tolist(), items.got_label, items.prob.tolist())):
        floor = floors[qi].get(label)
        accepted[i] = floor is not None and p >= floor
    k = int(np.count_nonzero(accepted))
    return AuthorCoverage(items.n, k, k / items.n if items.n else 0.0,
                          int(np.count_nonzero(items.correct & accepted)) / k if k else None)


def prepare(pack: Pack, recording: Recording, settings: Settings, backend: str | None = None,
            shown_path: str | None = None, split: str = "", cases: Sequence[Case] | None = None,
            identity: Identity | None = None, partial: bool = False) -> Prepared:
    """Grade the cases (default: all of the pack's) and read usage, latency and provenance:
    all that needs the decoded lines. `identity` is the run's (default: a plain run's of `split`).
    `partial`: cases the recording lacks are not a problem (a baseline: the flip report names them)."""
    chosen = tuple(pack.cases if cases is None else cases)
    with gc_paused():
        graded = grade(pack, recording, chosen)
    cost, latency = usage_and_latency(chosen, recording, settings)
    return Prepared(
        pack=pack, split=split, cases=chosen, settings=settings, backend=backend, recording_path=recording.path,
        shown_path=shown_path or str(recording.path), recording_sha256=recording.sha256,
        models=tuple(recording.models()), mode=min(recording.modes(), default="live"), graded=graded,
        cost=cost, latency=latency,
        problems=tuple(integrity_problems(pack, chosen, recording, graded, missing_ok=partial)),
        rubric=check_rubric(pack, chosen, recording),
        identity=identity if identity is not None else of(pack, split),
        dataset=dataset_of(pack))


def refusal(prep: Prepared, *, lines_apart: bool = False) -> tuple[str, str, tuple[str, ...]] | None:
    """Why a prepared recording's numbers must not be used: (the check item that says so, why,
    the one-line reasons); None when they may. Replay refuses the recording it grades with it
    and --jev-baseline the baseline, so the two refuse alike (a refusal added here applies to
    both): a recording made for other wording (rubric drift), and lines that answer a state
    their case no longer has (their state fingerprint is not the case's). `lines_apart`: replay
    refuses stale lines one by one instead (each case item and check[recording] fail with the
    command that re-records just those cases; the other lines are graded); a baseline is
    refused whole."""
    if prep.rubric.drift:
        return "check[rubric]", "the recording was made for other wording (rubric drift)", prep.rubric.lines
    stale = stale_cases(prep)
    if stale and not lines_apart:
        return ("check[recording]", "the recording answers states its cases no longer have",
                (f"{stale_line(prep, stale)}; re-record those cases (--jev-record) or compare with another recording",))
    return None


def stale_cases(prep: Prepared) -> list[Case]:
    """The cases whose recorded line answers a state the case no longer has (grade.STALE), in order."""
    return [case for case in prep.cases
            if (outcome := prep.graded.outcomes.get(case.id)) is not None and outcome.status == STALE]


def stale_line(prep: Prepared, stale: Sequence[Case]) -> str:
    """`<recording>: N line(s) answer a state their case no longer has (first: line L, case C)`."""
    first = stale[0]
    return (f"{prep.shown_path}: {len(stale)} line(s) answer a state their case no longer has "
            f"(first: line {prep.graded.outcomes[first.id].line}, case {first.id})")


def against_baseline(prep: Prepared, *, backend: BackendSpec | None, path: Path | None, results_dir: Path,
                     rootdir: Path, flag: str = "--jev-baseline") -> tuple[FlipReport | None, tuple[str, ...]]:
    """The flip report of a prepared run against the baseline a backend spec or a path names, or
    why there is none (one line each). The baseline is found, read, graded and refused exactly
    as the recording replay grades (recording_lookup, recording_file, prepare, refusal); the
    cases it lacks are not a problem, they are named in the report."""
    from .errors import JevError, RecordingNotFound
    from .recording_file import load_recording
    from .recording_lookup import find_recording

    pack = prep.pack
    try:
        found = find_recording(pack.path, pack.id, explicit=str(path) if path else None, backend=backend,
                               results_dir=results_dir, tested=pack.tested)
        recording = load_recording(found)
    except RecordingNotFound as exc:  # the lookup's own fix speaks of the recording replay grades
        fix = f"name one with {flag}: a backend or results folder that has it, or a recording file or folder"
        return None, (f"baseline: {RecordingNotFound(exc.what, fix=fix).one_line()}",)
    except JevError as exc:
        return None, (f"baseline: {exc.one_line()}",)
    baseline = prepare(pack, recording, prep.settings, backend=backend.text if backend is not None else None,
                       split=prep.split, cases=prep.cases, shown_path=shown(recording.path, rootdir), partial=True)
    del recording  # its decoded lines: at 100,000 cases several hundred MB
    refused = refusal(baseline)
    if refused is not None or baseline.problems:
        why = [f"baseline refused: {refused[1]}", *refused[2]] if refused is not None else []
        return None, (*why, *(f"baseline: {p}" for p in baseline.problems))
    return flip_report(prep, baseline), ()


def flip_report(prep: Prepared, baseline: Prepared) -> FlipReport:
    """The current run's recording against the baseline's, item by item (flips.py), with the
    run's bootstrap resamples and seed."""
    from .flips import compare  # numpy's already here; the flip report's models load only with a baseline
    from .formats.flips_json import Side

    def side(p: Prepared) -> Side:
        return Side(p.backend or p.shown_path, p.shown_path, p.recording_sha256)

    settings = prep.settings
    return compare(prep.pack, prep.cases, prep.graded, baseline.graded, current=side(prep), baseline=side(baseline),
                   split=prep.split, resamples=settings.bootstrap, seed=settings.seed,
                   rubric=rubric_fingerprint(prep.pack.questions_as_sent()))


def finish(prep: Prepared, *, draw: Bootstrap | None = None, flips: FlipReport | None = None,
           no_flips: str = NO_BASELINE) -> PackResult:
    """Metrics, bootstrap intervals and gates of a prepared run (numpy only, no recording needed).

    `draw` computes the bootstrap intervals (default: metrics.bootstrap, in this thread); the run
    machinery passes one that runs a large bootstrap in a child process (nodes/runs.py). `flips`
    is the run's flip report against a baseline (flip_report); without one the flip gates are
    skipped, saying `no_flips`."""
    pack, settings, graded = prep.pack, prep.settings, prep.graded
    items = graded.items
    acc_ci, ece_ci = (draw or metrics.bootstrap)(items.prob, items.correct, settings.bootstrap, settings.seed)
    suggestion = None
    by_locale = locales(prep.cases, items) or None  # a pack whose cases carry a locale: never pooled
    suggestion_by_locale = None
    if settings.target_precision is not None and by_locale is not None:
        suggestion_by_locale = {loc: Suggestion(*found) if found else None
                                for loc, found in locale_suggestions(prep.cases, items,
                                                                     settings.target_precision).items()}
    elif settings.target_precision is not None:
        found = metrics.suggest_threshold(items.prob, items.correct, settings.target_precision)
        suggestion = Suggestion(*found) if found else None
    run = RunResult(
        pack=pack.id, version=pack.version, record_model=pack.record_model, tested=pack.tested, split=prep.split,
        backend=prep.backend, recording=prep.shown_path, recording_sha256=prep.recording_sha256, mode=prep.mode,
        n_cases=len(prep.cases), n_items=items.n, case_errors=items.case_errors, missing_items=items.missing,
        accuracy=metrics.mean_bool(items.correct), accuracy_ci=acc_ci,
        ece=metrics.ece(items.prob, items.correct), ece_ci=ece_ci,
        mean_decision_prob=metrics.mean_float(items.prob), suggestion=suggestion,
        target_precision=settings.target_precision, bootstrap_resamples=settings.bootstrap, seed=settings.seed,
        cost=prep.cost, latency=prep.latency, per_question=question_results(pack, graded),
        coverage=tuple(CoverageRow(*row) for row in metrics.coverage_rows(items.prob, items.correct)),
        author_coverage=_author_coverage(pack, graded), recorded_models=prep.models,
        mismatched_cases=sum(1 for o in graded.outcomes.values() if o.status == "mismatch"),
        invalid_cases=sum(1 for o in graded.outcomes.values() if o.status == "invalid"),
        unknown_case_ids=graded.unknown_case_ids, mismatches=mismatches(graded),
        gates_skipped=settings.no_gates, rubric=rubric_fingerprint(pack.questions_as_sent()),
        rubric_status=prep.rubric.outcome, state_unchecked=graded.state_unchecked,
        price_source=settings.price_source,
        identity=prep.identity, dataset=prep.dataset, locales=by_locale, suggestion_by_locale=suggestion_by_locale,
        flips=flips, majority_baseline=majority_baseline([case.expect for case in prep.cases], list(pack.questions)))
    if not settings.no_gates:
        run = replace(run, gates=tuple(evaluate_gates(pack.gates.values, run, pack.gates.lines, no_flips)))
    if settings.detail:
        run = replace(run, detail=run_detail(pack, prep.cases, items))
    return PackResult(pack, prep.recording_path, graded, run, prep.problems)


def evaluate(pack: Pack, recording: Recording, settings: Settings | None = None, backend: str | None = None,
             shown_path: str | None = None) -> PackResult:
    """Grade a whole pack's recording and compute its metrics, in one call (no pytest needed)."""
    return finish(prepare(pack, recording, settings or Settings(), backend, shown_path))


def integrity_problems(pack: Pack, cases: Sequence[Case], recording: Recording, graded: Graded,
                       limit: int = 5, missing_ok: bool = False) -> list[str]:
    """Why a recording does not belong to its pack (empty when it does); cases it lacks are
    not a problem with `missing_ok`."""
    problems: list[str] = []
    path = recording.path
    lines = recording.lines
    missing = [c.id for c in cases if c.id not in lines]
    if missing and not missing_ok:
        problems.append(f"{path}: {len(missing)} of {len(cases)} cases are not in the recording "
                        f"(first: {', '.join(missing[:limit])}); record them with --jev-record")
    for cid in graded.unknown_case_ids[:limit]:
        problems.append(f"{path}:{recording.line_numbers[cid]}: case '{cid}' is not in pack {pack.id}; "
                        "the recording belongs to another pack or version, re-record it")
    if len(graded.unknown_case_ids) > limit:
        problems.append(f"... and {len(graded.unknown_case_ids) - limit} more unknown case ids")
    wrong: list[str] = []
    declared = {qid: q.type for qid, q in pack.questions.items()}
    for case in cases:
        rec = lines.get(case.id)
        answers = rec.answers if rec is not None else None
        if answers is None:
            continue
        for qid, answer in answers.items():
            kind = declared.get(qid)
            if kind is not None and (not isinstance(answer, dict) or answer.get("type") == kind):
                continue
            line = f"{path}:{recording.line_numbers[case.id]}"
            if kind is None:
                wrong.append(f"{line}: case {case.id} answers '{qid}', which pack {pack.id} does not declare")
            else:
                wrong.append(f"{line}: case {case.id} answer '{qid}' has type {json.dumps(answer.get('type'))}, "
                             f"the pack declares {kind}; re-record the case")
    problems.extend(wrong[:limit])
    if len(wrong) > limit:
        problems.append(f"... and {len(wrong) - limit} more answers of the wrong type")
    if "mock" in recording.modes() and any(rec.mode != "mock" for rec in lines.values()):
        problems.append(f"{path}: mixes mock lines with live ones; mock recordings are for harness checks only")
    return problems


def mismatches(graded: Graded) -> tuple[Mismatch, ...]:
    """Every answered question whose decision differs from the gold label, in case order."""
    return tuple(Mismatch(case_id, m.question, m.expected, m.got, m.probability)
                 for case_id, outcome in graded.outcomes.items() for m in outcome.misses)
