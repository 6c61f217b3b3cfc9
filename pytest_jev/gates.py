"""gates.yaml declarations evaluated against a RunResult: the GateResults (run_result.py) in jevassert's order.

Each result carries jevassert's `detail` ("ece 0.312 <= 0.150": the rule, which --jev-json and the
results files keep as jevassert writes them) and our `verdict`, which says what holds or what is
wrong: "ece 0.312, above the 0.150 allowed". Failures, the terminal's gates line and the short
summary print the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .run_result import FAILED, PASSED, SKIPPED, CoverageRow, GateResult, RunResult


def _pair(value: float, threshold: float, digits: int, unit: str = "") -> tuple[str, str]:
    """value and threshold with `digits` decimals, more when that would print them equal
    although they differ (0.3496 against 0.35 is not "0.350, below the 0.350 required")."""
    while digits < 9 and value != threshold and f"{value:.{digits}f}" == f"{threshold:.{digits}f}":
        digits += 1
    return f"{unit}{value:.{digits}f}", f"{unit}{threshold:.{digits}f}"


def verdict(label: str, value: float, threshold: float, at_least: bool, digits: int = 3, unit: str = "",
            suffix: str = "") -> str:
    """What a gate found: "accuracy 0.833, below the 0.990 required", "ece 0.222, within the
    0.250 allowed" (`unit` before the numbers, `suffix` after them: "$", " ms")."""
    shown, limit = _pair(value, threshold, digits, unit)
    if at_least:
        how = "at least" if value >= threshold else "below"
        return f"{label} {shown}{suffix}, {how} the {limit}{suffix} required"
    how = "within" if value <= threshold else "above"
    return f"{label} {shown}{suffix}, {how} the {limit}{suffix} allowed"


def reworded(detail: str, ok: bool | None) -> str:
    """jevassert's rule-form detail, as a results file keeps it ("ece 0.314 <= 0.140"), said as
    what holds or what is wrong ("ece 0.314, above the 0.140 allowed"): the reports print this.
    A detail that states no rule (a reason the gate was not computable) is returned as it is."""
    cut = max(detail.rfind(" <= "), detail.rfind(" >= "))
    if ok is None or cut < 0:
        return detail
    measured, op, limit = detail[:cut], detail[cut + 1:cut + 3], detail[cut + 4:]
    if not any(ch.isdigit() for ch in measured.rsplit(" ", 1)[-1]):  # "no threshold ... reaches precision >= x"
        return detail
    if op == ">=":
        return f"{measured}, {'at least' if ok else 'below'} the {limit} required"
    return f"{measured}, {'within' if ok else 'above'} the {limit} allowed"


def _at_least(name: str, metric: str, value: float, threshold: float, detail: str,
              interval: tuple[float, float] | None = None, label: str | None = None) -> GateResult:
    return GateResult(name, PASSED if value >= threshold else FAILED, detail, metric, value, interval, threshold,
                      verdict=verdict(label or metric, value, threshold, at_least=True))


def _at_most(name: str, metric: str, value: float, threshold: float, detail: str,
             interval: tuple[float, float] | None = None, label: str | None = None, digits: int = 3,
             unit: str = "", suffix: str = "") -> GateResult:
    return GateResult(name, PASSED if value <= threshold else FAILED, detail, metric, value, interval, threshold,
                      verdict=verdict(label or metric, value, threshold, at_least=False, digits=digits, unit=unit,
                                      suffix=suffix))


def _skipped(name: str, why: str, metric: str, threshold: float) -> GateResult:
    return GateResult(name, SKIPPED, why, metric, None, None, threshold, verdict=f"not computable: {why}")


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
        out.append(_skipped("max_p95_latency_ms", "no latency data in recording", "p95_latency_ms", v)
                   if p95 is None else
                   _at_most("max_p95_latency_ms", "p95_latency_ms", p95, v, f"p95 {p95:.0f}ms <= {v:.0f}ms",
                            label="p95 latency", digits=_latency_digits(p95, v), suffix=" ms"))
    if "min_coverage_at_precision" in declared:
        out.append(_coverage_gate(declared["min_coverage_at_precision"], run.coverage))
    if "min_accuracy_ci_lower" in declared:
        v = float(declared["min_accuracy_ci_lower"])
        ci = run.accuracy_ci
        why = "no items in recording" if not run.n_items else "bootstrap disabled (--jev-bootstrap 0)"
        out.append(_skipped("min_accuracy_ci_lower", why, "accuracy_ci_lower", v) if ci is None else
                   _at_least("min_accuracy_ci_lower", "accuracy_ci_lower", ci[0], v,
                             f"accuracy CI lower {ci[0]:.3f} >= {v:.3f}", ci, label="accuracy CI lower bound"))
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
        return _skipped(name, no_flips, metric, v)
    if name == "max_regressions":
        n = flips.regressed
        found = f"{n} regression{'s' if n != 1 else ''}, {'within' if n <= v else 'above'} the {v:g} allowed"
        return replace(_at_most(name, metric, n, v, f"{n} regressed <= {v:g}"), verdict=found)
    if name == "max_regression_rate":
        rate = flips.regression_rate
        if rate is None:
            return _skipped(name, "the baseline has no item right to regress", metric, v)
        of = f"({flips.regressed} regressed of {flips.regressed + flips.both_right} right in the baseline)"
        gate = _at_most(name, metric, rate, v, f"regression rate {rate:.3f} {of} <= {v:.3f}", label="regression rate")
        return replace(gate, verdict=gate.verdict.replace(", ", f" {of}, ", 1))
    ci, delta = flips.accuracy_delta_ci, flips.accuracy_delta
    if delta is None or ci is None:
        why = "no item answered by both recordings" if delta is None else "bootstrap disabled (--jev-bootstrap 0)"
        return _skipped(name, why, metric, v)
    outcome = PASSED if ci[1] >= v else FAILED
    measured = f"accuracy difference {delta:+.3f} (95% CI {ci[0]:+.3f} to {ci[1]:+.3f})"
    upper, floor = _pair(ci[1], v, 3)
    found = (f"{measured}: the whole interval is below the {floor} required (its upper end {upper})"
             if outcome == FAILED else f"{measured}: not wholly below the {floor} required")
    return GateResult(name, outcome, f"{measured}: CI upper {ci[1]:+.3f} >= {v:+.3f}", metric, delta, ci, v,
                      verdict=found)


def _cost_gate(v: float, run: RunResult) -> GateResult:
    cost = run.cost.per_case_usd
    if cost is None:
        why = ("no usage data in recording" if run.cost.input_tokens is None else
               "no price known for this backend (pass --jev-price-input and --jev-price-output)")
        return _skipped("max_cost_per_case_usd", why, "cost_per_case_usd", v)
    return _at_most("max_cost_per_case_usd", "cost_per_case_usd", cost, v, f"cost/case ${cost:.6f} <= ${v:.6f}",
                    label="cost/case", digits=6, unit="$")


def _latency_digits(p95: float, limit: float) -> int:
    """As many decimals as the gate is written with (a derived 1.719 ms gate), at least one
    below 100 ms (a p95 of 4.8 ms), none above."""
    written = f"{limit:.6f}".rstrip("0").rstrip(".")
    decimals = len(written.split(".")[1]) if "." in written else 0
    return max(decimals, 0 if p95 >= 100 else 1)


def _question_gates(qid: str, spec: Mapping[str, Any], run: RunResult) -> list[GateResult]:
    q = run.question(qid)
    where = f"per_question.{qid}"
    if q is None or q.n == 0:
        return [_skipped(f"{where}.{g}", "no items in recording", g.split("_", 1)[1], float(spec[g])) for g in spec]
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
                          "coverage_at_precision", None, None, floor,
                          verdict=f"no threshold on the grid (0.50-0.95) reaches the {need:.2f} precision required")
    return _at_least("min_coverage_at_precision", "coverage_at_precision", best.coverage, floor,
                     f"coverage {best.coverage:.2f} at precision >= {need:.2f} "
                     f"(threshold {best.threshold:.2f}) >= {floor:.2f}",
                     label=f"coverage at precision >= {need:.2f} (threshold {best.threshold:.2f})")
