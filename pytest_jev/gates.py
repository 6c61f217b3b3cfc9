"""gates.yaml declarations turned into GateResults: value, interval, threshold, outcome."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass(frozen=True)
class GateResult:
    gate: str  # e.g. min_accuracy, per_question.queue.max_ece
    outcome: str  # passed | failed | skipped (not computable: never a pass)
    detail: str  # jevassert's wording, e.g. "accuracy 0.953 >= 0.900"
    metric: str = ""
    value: float | None = None
    interval: tuple[float, float] | None = None
    threshold: float | None = None
    line: int | None = None  # line of the gate in gates.yaml

    @property
    def ok(self) -> bool | None:
        """jevassert's tri-state: True pass, False fail, None not computable."""
        return None if self.outcome == SKIPPED else self.outcome == PASSED


def _at_least(name: str, metric: str, value: float, threshold: float, detail: str,
              interval: tuple[float, float] | None = None) -> GateResult:
    return GateResult(name, PASSED if value >= threshold else FAILED, detail, metric, value, interval, threshold)


def _at_most(name: str, metric: str, value: float, threshold: float, detail: str,
             interval: tuple[float, float] | None = None) -> GateResult:
    return GateResult(name, PASSED if value <= threshold else FAILED, detail, metric, value, interval, threshold)


def evaluate_gates(declared: dict[str, Any], m: dict[str, Any], lines: dict[str, int]) -> list[GateResult]:
    """Evaluate declared gates against a metrics payload (the JSON keys of a run).

    Order and wording follow jevassert's `evaluate_gates`, so `gates` in --jev-json
    is the same list jevassert prints.
    """
    out: list[GateResult] = []
    if "min_accuracy" in declared:
        v = float(declared["min_accuracy"])
        out.append(_at_least("min_accuracy", "accuracy", m["accuracy"], v,
                             f"accuracy {m['accuracy']:.3f} >= {v:.3f}", _tuple(m["accuracy_ci"])))
    if "max_ece" in declared:
        v = float(declared["max_ece"])
        out.append(_at_most("max_ece", "ece", m["ece"], v, f"ece {m['ece']:.3f} <= {v:.3f}", _tuple(m["ece_ci"])))
    if "max_cost_per_case_usd" in declared:
        v = float(declared["max_cost_per_case_usd"])
        cost = m["cost_per_case_usd"]
        why = ("no usage data in recording" if m.get("input_tokens") is None else
               "no price known for this backend (pass --jev-price-input and --jev-price-output)")
        out.append(GateResult("max_cost_per_case_usd", SKIPPED, why, "cost_per_case_usd", None, None, v)
                   if cost is None else
                   _at_most("max_cost_per_case_usd", "cost_per_case_usd", cost, v,
                            f"cost/case ${cost:.6f} <= ${v:.6f}"))
    if "max_p95_latency_ms" in declared:
        v = float(declared["max_p95_latency_ms"])
        p95 = m["p95_latency_ms"]
        out.append(GateResult("max_p95_latency_ms", SKIPPED, "no latency data in recording", "p95_latency_ms",
                              None, None, v) if p95 is None else
                   _at_most("max_p95_latency_ms", "p95_latency_ms", p95, v, f"p95 {p95:.0f}ms <= {v:.0f}ms"))
    if "min_coverage_at_precision" in declared:
        out.append(_coverage_gate(declared["min_coverage_at_precision"], m["coverage"]))
    if "min_accuracy_ci_lower" in declared:
        v = float(declared["min_accuracy_ci_lower"])
        ci = m["accuracy_ci"]
        why = "no items in recording" if not m.get("n_items") else "bootstrap disabled (--jev-bootstrap 0)"
        out.append(GateResult("min_accuracy_ci_lower", SKIPPED, why,
                              "accuracy_ci_lower", None, None, v) if ci is None else
                   _at_least("min_accuracy_ci_lower", "accuracy_ci_lower", ci[0], v,
                             f"accuracy CI lower {ci[0]:.3f} >= {v:.3f}", _tuple(ci)))
    for qid, spec in (declared.get("per_question") or {}).items():
        q = m["per_question"].get(qid)
        where = f"per_question.{qid}"
        if q is None or q["n"] == 0:
            out.extend(GateResult(f"{where}.{g}", SKIPPED, "no items in recording", g.split("_", 1)[1],
                                  None, None, float(spec[g])) for g in spec)
            continue
        if "min_accuracy" in spec:
            v = float(spec["min_accuracy"])
            out.append(_at_least(f"{where}.min_accuracy", f"{qid} accuracy", q["accuracy"], v,
                                 f"accuracy {q['accuracy']:.3f} >= {v:.3f}"))
        if "max_ece" in spec:
            v = float(spec["max_ece"])
            out.append(_at_most(f"{where}.max_ece", f"{qid} ece", q["ece"], v, f"ece {q['ece']:.3f} <= {v:.3f}"))
    return [_with_line(g, lines) for g in out]


def _coverage_gate(spec: dict[str, Any], rows: list[dict[str, Any]]) -> GateResult:
    need, floor = float(spec["precision"]), float(spec["min_coverage"])
    best = None
    for row in rows:
        if row["precision"] is not None and row["precision"] >= need:
            best = row
    if best is None:
        return GateResult("min_coverage_at_precision", FAILED,
                          f"no threshold on the grid reaches precision >= {need:.2f}",
                          "coverage_at_precision", None, None, floor)
    return _at_least("min_coverage_at_precision", "coverage_at_precision", best["coverage"], floor,
                     f"coverage {best['coverage']:.2f} at precision >= {need:.2f} "
                     f"(threshold {best['threshold']:.2f}) >= {floor:.2f}")


def _tuple(ci: Any) -> tuple[float, float] | None:
    return (ci[0], ci[1]) if ci else None


def _with_line(g: GateResult, lines: dict[str, int]) -> GateResult:
    from dataclasses import replace

    return replace(g, line=lines.get(g.gate))
