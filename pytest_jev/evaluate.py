"""(Pack, Recording, settings) -> PackResult: the one place metrics are assembled.

A PackResult is a pure function of its inputs, which is what makes replay
deterministic and lets every xdist worker and the controller agree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import metrics
from .bulk import gc_paused
from .gates import GateResult, evaluate_gates
from .grade import Graded, grade
from .packs.model import Pack
from .recording import Recording

JEV_PRICE_INPUT = 0.042  # USD per million input tokens, Jev's list price; output is free


@dataclass(frozen=True)
class Settings:
    bootstrap: int = 1000
    seed: int = 0
    price_input: float | None = JEV_PRICE_INPUT  # None: no price known, so no cost
    price_output: float | None = 0.0
    target_precision: float | None = None
    no_gates: bool = False


@dataclass(frozen=True)
class Prepared:
    """Everything a run needs from a recording, read in one pass (see `prepare`).

    It holds no decoded recording line, so a caller may drop the Recording once it has
    this: at 100,000 cases the decoded lines weigh several hundred MB.
    """

    pack: Pack
    settings: Settings
    backend: str | None
    recording_path: Path
    shown_path: str  # the recording as the user reads it (relative to the rootdir)
    recording_sha256: str
    models: tuple[str, ...]
    mode: str  # "mock" or "live"
    graded: Graded
    cost: dict[str, Any]
    problems: tuple[str, ...]  # integrity problems: why the recording does not belong to the pack


@dataclass(frozen=True)
class PackResult:
    pack: Pack
    recording_path: Path
    backend: str | None
    graded: Graded
    payload: dict[str, Any]  # the --jev-json object: jevassert's keys plus ours
    gates: tuple[GateResult, ...] = field(default=())
    problems: tuple[str, ...] = ()

    def integrity_problems(self) -> list[str]:
        return list(self.problems)

    @property
    def failed_gates(self) -> list[GateResult]:
        return [g for g in self.gates if g.outcome == "failed"]


def question_metrics(pack: Pack, graded: Graded) -> dict[str, dict[str, Any]]:
    items = graded.items
    out: dict[str, dict[str, Any]] = {}
    for qi, (qid, q) in enumerate(pack.questions.items()):
        mask = items.question == qi
        prob, correct = items.prob[mask], items.correct[mask]
        n = int(prob.shape[0])
        out[qid] = {
            "type": q.type, "n": n, "missing": graded.items.missing_by_question[qid],
            "accuracy": metrics.mean_bool(correct),
            "mean_decision_prob": metrics.mean_float(prob),
            "ece": metrics.ece(prob, correct),
            "brier": (metrics.brier(prob, items.got_true[mask], items.gold_true[mask])
                      if q.type == "noul" and n else None),
        }
    return out


def usage_and_latency(pack: Pack, recording: Recording, settings: Settings) -> dict[str, Any]:
    tokens_in = tokens_out = 0
    saw_usage = False
    latencies: list[float] = []
    lines = recording.lines
    for case in pack.cases:
        rec = lines.get(case.id) or {}
        usage = rec.get("usage")
        if isinstance(usage, dict):
            if isinstance(usage.get("input_tokens"), (int, float)):
                tokens_in += int(usage["input_tokens"])
                saw_usage = True
            if isinstance(usage.get("output_tokens"), (int, float)):
                tokens_out += int(usage["output_tokens"])
        if isinstance(rec.get("latency_ms"), (int, float)):
            latencies.append(float(rec["latency_ms"]))
    priced = settings.price_input is not None and settings.price_output is not None
    total = ((tokens_in * settings.price_input + tokens_out * settings.price_output) / 1_000_000  # type: ignore[operator]
             if saw_usage and priced else None)
    return {
        "cost_per_case_usd": total / len(pack.cases) if total is not None else None,
        "total_cost_usd": total,
        "p50_latency_ms": metrics.nearest_rank(latencies, 50),
        "p95_latency_ms": metrics.nearest_rank(latencies, 95),
        "input_tokens": tokens_in if saw_usage else None,
        "output_tokens": tokens_out if saw_usage else None,
    }


def _threshold_coverage(pack: Pack, graded: Graded) -> dict[str, Any] | None:
    if not pack.thresholds:
        return None
    items = graded.items
    floors = [pack.thresholds.get(qid, {}) for qid in items.qids]
    accepted = np.zeros(items.n, dtype=bool)
    for i, (qi, label, p) in enumerate(zip(items.question.tolist(), items.got_label, items.prob.tolist())):
        floor = floors[qi].get(label)
        accepted[i] = floor is not None and p >= floor
    k = int(np.count_nonzero(accepted))
    return {"n_total": items.n, "n_auto": k, "coverage": k / items.n if items.n else 0.0,
            "precision": int(np.count_nonzero(items.correct & accepted)) / k if k else None}


def prepare(pack: Pack, recording: Recording, settings: Settings, backend: str | None = None,
            shown_path: str | None = None) -> Prepared:
    """Grade every case and read usage, latency and provenance: all that needs the decoded lines."""
    with gc_paused():
        graded = grade(pack, recording)
    return Prepared(
        pack=pack, settings=settings, backend=backend, recording_path=recording.path,
        shown_path=shown_path or str(recording.path), recording_sha256=recording.sha256,
        models=tuple(recording.models()), mode=min(recording.modes(), default="live"), graded=graded,
        cost=usage_and_latency(pack, recording, settings),
        problems=tuple(integrity_problems(pack, recording, graded)))


def finish(prep: Prepared, *, apart: bool = False) -> PackResult:
    """Metrics, bootstrap intervals and gates of a prepared run (numpy only, no recording needed).

    apart=True: a large bootstrap runs in a child process (metrics.bootstrap_apart), for a
    caller whose own thread is busy meanwhile."""
    pack, settings, graded, cost = prep.pack, prep.settings, prep.graded, prep.cost
    items = graded.items
    draw = metrics.bootstrap_apart if apart else metrics.bootstrap
    acc_ci, ece_ci = draw(items.prob, items.correct, settings.bootstrap, settings.seed)
    suggestion = None
    if settings.target_precision is not None:
        s = metrics.suggest_threshold(items.prob, items.correct, settings.target_precision)
        suggestion = s and {"threshold": s.threshold, "coverage": s.coverage, "precision": s.precision,
                            "n_accepted": s.n_accepted}
    payload: dict[str, Any] = {
        "pack": pack.id, "version": pack.version, "record_model": pack.record_model, "tested": pack.tested,
        "n_cases": len(pack.cases), "n_items": items.n, "case_errors": items.case_errors,
        "missing_items": items.missing,
        "accuracy": metrics.mean_bool(items.correct), "accuracy_ci": list(acc_ci) if acc_ci else None,
        "ece": metrics.ece(items.prob, items.correct), "ece_ci": list(ece_ci) if ece_ci else None,
        "suggestion": suggestion, "mean_decision_prob": metrics.mean_float(items.prob),
        "cost_per_case_usd": cost["cost_per_case_usd"], "total_cost_usd": cost["total_cost_usd"],
        "p50_latency_ms": cost["p50_latency_ms"], "p95_latency_ms": cost["p95_latency_ms"],
        "input_tokens": cost["input_tokens"], "output_tokens": cost["output_tokens"],
        "per_question": question_metrics(pack, graded),
        "coverage": [{"threshold": r.threshold, "coverage": r.coverage, "precision": r.precision}
                     for r in metrics.coverage_rows(items.prob, items.correct)],
        "threshold_coverage": _threshold_coverage(pack, graded),
    }
    gates = [] if settings.no_gates else evaluate_gates(dict(pack.gates.values), payload, dict(pack.gates.lines))
    payload["gates"] = [{"gate": g.gate, "ok": g.ok, "detail": g.detail} for g in gates]
    payload["gates_skipped"] = settings.no_gates
    payload["recorded_models"] = list(prep.models)
    payload["pricing"] = {"input_usd_per_mtok": settings.price_input, "output_usd_per_mtok": settings.price_output}
    payload.update({
        "backend": prep.backend, "recording": prep.shown_path, "recording_sha256": prep.recording_sha256,
        "target_precision": settings.target_precision, "bootstrap_resamples": settings.bootstrap,
        "seed": settings.seed,
        "mismatched_cases": sum(1 for o in graded.outcomes if o.status == "mismatch"),
        "invalid_cases": sum(1 for o in graded.outcomes if o.status == "invalid"),
        "unknown_case_ids": list(graded.unknown_case_ids),
        "mode": prep.mode,
        "mismatches": mismatches(pack, graded),
    })
    return PackResult(pack, prep.recording_path, prep.backend, graded, payload, tuple(gates), prep.problems)


def evaluate(pack: Pack, recording: Recording, settings: Settings, backend: str | None = None,
             shown_path: str | None = None) -> PackResult:
    return finish(prepare(pack, recording, settings, backend, shown_path))


def integrity_problems(pack: Pack, recording: Recording, graded: Graded, limit: int = 5) -> list[str]:
    """Why a recording does not belong to its pack (empty when it does)."""
    problems: list[str] = []
    path = recording.path
    missing = [c.id for c in pack.cases if c.id not in recording.lines]
    if missing:
        problems.append(f"{path}: {len(missing)} of {len(pack.cases)} cases are not in the recording "
                        f"(first: {', '.join(missing[:limit])}); record them with --jev-record")
    for cid in graded.unknown_case_ids[:limit]:
        problems.append(f"{path}:{recording.line_numbers[cid]}: case '{cid}' is not in pack {pack.id}; "
                        "the recording belongs to another pack or version, re-record it")
    if len(graded.unknown_case_ids) > limit:
        problems.append(f"... and {len(graded.unknown_case_ids) - limit} more unknown case ids")
    wrong: list[str] = []
    declared = {qid: q.type for qid, q in pack.questions.items()}
    lines = recording.lines
    for case in pack.cases:
        rec = lines.get(case.id)
        answers = rec.get("answers") if rec else None
        if not isinstance(answers, dict):
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
    if "mock" in recording.modes() and any(rec.get("mode") != "mock" for rec in recording.lines.values()):
        problems.append(f"{path}: mixes mock lines with live ones; mock recordings are for harness checks only")
    return problems


def mismatches(pack: Pack, graded: Graded) -> list[dict[str, Any]]:
    """Every answered question whose decision differs from the gold label, in case order."""
    return [{"case": case.id, **m.as_dict()} for case, outcome in zip(pack.cases, graded.outcomes)
            for m in outcome.misses]
