"""gates.yaml declarations evaluated against a RunResult: the GateResults (run_result.py) in jevassert's order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .run_result import FAILED, PASSED, SKIPPED, CoverageRow, GateResult, RunResult


def _at_least(name: str, metric: str, value: float, threshold: float, detail: str,
              interval: tuple[float, float] | None = None) -> GateResult:
    return GateResult(name, PASSED if value >= threshold else FAILED, detail, metric, value, interval, threshold)


def _at_most(name: str, metric: str, value: float, threshold: float, detail: str,
             interval: tuple[float, float] | None = None) -> GateResult:
    return GateResult(name, PASSED if value <= threshold else FAILED, detail, metric, value, interval, threshold)


NO_BASELINE = "no baseline to compare with (pass --jev-baseline NAME|PATH)"
FLIP_GATES = ("max_regressions", "max_regression_rate", "min_accuracy_delta")  # ours, after jevassert's


def evaluate_gates(declared: Mapping[str, Any], run: RunResult, lines: Mapping[str, int],
                   no_flips: str = NO_BASELINE) -> list[GateResult]:
    """Evaluate declared gates against a run's metrics.

    Order and wording follow jevassert's `evaluate_gates`, so `gates` in --jev-json
    is the same list jevassert prints; the gates on flips (ours) come after them, skipped
    saying `no_flips` when the run has no flip report.
    """
    out: list[GateResult] = []
    if "min_accuracy" in declared:
        v = float(declared["min_accuracy"])
        out.append(_at_least("min_accuracy", "accuracy", run.accuracy, v,
                             f"accuracy {run.accuracy:.3f} >= {v:.3f}", run.accuracy_ci))
    if "max_ece" in declared:
        v = float(declared["max_ece"])
        out.append(_at_most("max_ece", "ece", run.ece, v, f"ece {run.ece:.3f} <= {v:.3f}", run.ece_ci))
    if "max_cost_per_case_usd" in declared:
        out.append(_cost_gate(float(declared["max_cost_per_case_usd"]), run))
    if "max_p95_latency_ms" in declared:
        v = float(declared["max_p95_latency_ms"])
        p95 = run.latency.p95_ms
        out.append(GateResult("max_p95_latency_ms", SKIPPED, "no latency data in recording", "p95_latency_ms",
                              None, None, v) if p95 is None else
                   _at_most("max_p95_latency_ms", "p95_latency_ms", p95, v, f"p95 {p95:.0f}ms <= {v:.0f}ms"))
    if "min_coverage_at_precision" in declared:
        out.append(_coverage_gate(declared["min_coverage_at_precision"], run.coverage))
    if "min_accuracy_ci_lower" in declared:
        v = float(declared["min_accuracy_ci_lower"])
        ci = run.accuracy_ci
        why = "no items in recording" if not run.n_items else "bootstrap disabled (--jev-bootstrap 0)"
        out.append(GateResult("min_accuracy_ci_lower", SKIPPED, why, "accuracy_ci_lower", None, None, v)
                   if ci is None else
                   _at_least("min_accuracy_ci_lower", "accuracy_ci_lower", ci[0], v,
                             f"accuracy CI lower {ci[0]:.3f} >= {v:.3f}", ci))
    for qid, spec in (declared.get("per_question") or {}).items():
        out.extend(_question_gates(qid, spec, run))
    out.extend(_flip_gate(name, float(declared[name]), run, no_flips) for name in FLIP_GATES if name in declared)
    return [replace(g, line=lines.get(g.gate)) for g in out]


def _flip_gate(name: str, v: float, run: RunResult, no_flips: str) -> GateResult:
    """A gate on the flip report: regressed items at most v, the regression rate (regressed
    over the items the baseline had right) at most v, or the paired accuracy difference's
    interval not wholly below v (it fails only when the upper end is below v)."""
    flips = run.flips
    metric = {"max_regressions": "regressions", "max_regression_rate": "regression_rate",
              "min_accuracy_delta": "accuracy_delta"}[name]
    if flips is None:
        return GateResult(name, SKIPPED, no_flips, metric, None, None, v)
    if name == "max_regressions":
        return _at_most(name, metric, flips.regressed, v, f"{flips.regressed} regressed <= {v:g}")
    if name == "max_regression_rate":
        rate = flips.regression_rate
        if rate is None:
            return GateResult(name, SKIPPED, "the baseline has no item right to regress", metric, None, None, v)
        return _at_most(name, metric, rate, v, f"regression rate {rate:.3f} ({flips.regressed} regressed of "
                        f"{flips.regressed + flips.both_right} right in the baseline) <= {v:.3f}")
    ci, delta = flips.accuracy_delta_ci, flips.accuracy_delta
    if delta is None or ci is None:
        why = "no item answered by both recordings" if delta is None else "bootstrap disabled (--jev-bootstrap 0)"
        return GateResult(name, SKIPPED, why, metric, None, None, v)
    outcome = PASSED if ci[1] >= v else FAILED
    return GateResult(name, outcome, f"accuracy difference {delta:+.3f} (95% CI {ci[0]:+.3f} to {ci[1]:+.3f}): "
                      f"CI upper {ci[1]:+.3f} >= {v:+.3f}", metric, delta, ci, v)


def _cost_gate(v: float, run: RunResult) -> GateResult:
    cost = run.cost.per_case_usd
    if cost is None:
        why = ("no usage data in recording" if run.cost.input_tokens is None else
               "no price known for this backend (pass --jev-price-input and --jev-price-output)")
        return GateResult("max_cost_per_case_usd", SKIPPED, why, "cost_per_case_usd", None, None, v)
    return _at_most("max_cost_per_case_usd", "cost_per_case_usd", cost, v, f"cost/case ${cost:.6f} <= ${v:.6f}")


def _question_gates(qid: str, spec: Mapping[str, Any], run: RunResult) -> list[GateResult]:
    q = run.question(qid)
    where = f"per_question.{qid}"
    if q is None or q.n == 0:
        return [GateResult(f"{where}.{g}", SKIPPED, "no items in recording", g.split("_", 1)[1],
                           None, None, float(spec[g])) for g in spec]
    out = []
    if "min_accuracy" in spec:
        v = float(spec["min_accuracy"])
        out.append(_at_least(f"{where}.min_accuracy", f"{qid} accuracy", q.accuracy, v,
                             f"accuracy {q.accuracy:.3f} >= {v:.3f}"))
    if "max_ece" in spec:
        v = float(spec["max_ece"])
        out.append(_at_most(f"{where}.max_ece", f"{qid} ece", q.ece, v, f"ece {q.ece:.3f} <= {v:.3f}"))
    return out


def _coverage_gate(spec: Mapping[str, Any], rows: tuple[CoverageRow, ...]) -> GateResult:
    need, floor = float(spec["precision"]), float(spec["min_coverage"])
    best = None
    for row in rows:
        if row.precision is not None and row.precision >= need:
            best = row
    if best is None:
        return GateResult("min_coverage_at_precision", FAILED,
                          f"no threshold on the grid reaches precision >= {need:.2f}",
                          "coverage_at_precision", None, None, floor)
    return _at_least("min_coverage_at_precision", "coverage_at_precision", best.coverage, floor,
                     f"coverage {best.coverage:.2f} at precision >= {need:.2f} "
                     f"(threshold {best.threshold:.2f}) >= {floor:.2f}")
