"""Gates derived from evidence, not hand-tuned.

The rule (the seed registry's, reproduced on its published evidence by the tests):

    min_accuracy          = lower bound of the 95% bootstrap interval - 0.01
    max_ece               = ECE + 0.03, never below 0.05
    max_cost_per_case_usd = cost per case x 2
    max_p95_latency_ms    = p95 latency x 1.5

rounded as the seed registry rounds (rates to 2 decimals, cost to 6, latency down to a whole
millisecond), except where that rounding would fail the baseline itself (a sub-millisecond
p95, a cost below a micro-dollar): those keep the digits they need. A pack with splits is
gated on each split, so its baseline is the weakest split (lowest interval bound, highest
ECE, cost and latency). A metric the evidence does not have (no usage, no latency) gives
no gate. Gates a pack author wrote beyond these four (per question, coverage) are kept.

A committed gate looser than the derivation is a regression to explain, never a number to
lower: `looser()` names each such gate for the check item.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..formats.run_json import RunNumbers

RULE = ("min_accuracy = CI lower bound - 0.01; max_ece = ECE + 0.03 (at least 0.05);",
        "max_cost_per_case_usd = cost x 2; max_p95_latency_ms = p95 x 1.5")
DERIVED = ("min_accuracy", "max_ece", "max_cost_per_case_usd", "max_p95_latency_ms")
LOWER_IS_LOOSER = frozenset({"min_accuracy"})  # for the max_* gates a higher value is looser


@dataclass(frozen=True)
class Baseline:
    """The numbers gates are derived from: the weakest of a pack's runs (one per split)."""

    accuracy_ci_low: float | None
    ece: float | None
    cost_per_case_usd: float | None
    p95_latency_ms: float | None


def baseline(runs: Sequence[RunNumbers]) -> Baseline:
    """The baseline of a pack from its runs' numbers (a results file's, or a --jev-json run's)."""

    def pick(values: list[float | None], worst: Any) -> float | None:
        known = [float(v) for v in values if v is not None]
        return worst(known) if known and len(known) == len(values) else None

    lows = [run.accuracy_ci[0] if run.accuracy_ci is not None else None for run in runs]
    return Baseline(accuracy_ci_low=pick(lows, min), ece=pick([run.ece for run in runs], max),
                    cost_per_case_usd=pick([run.cost_per_case_usd for run in runs], max),
                    p95_latency_ms=pick([run.p95_latency_ms for run in runs], max))


def derive(base: Baseline) -> dict[str, float]:
    """The four gates of the rule, each only when its baseline number is known."""
    gates: dict[str, float] = {}
    if base.accuracy_ci_low is not None:
        gates["min_accuracy"] = max(0.0, round(base.accuracy_ci_low - 0.01, 2))
    if base.ece is not None:
        gates["max_ece"] = round(max(base.ece + 0.03, 0.05), 2)
    if base.cost_per_case_usd is not None:
        cost = base.cost_per_case_usd * 2
        gates["max_cost_per_case_usd"] = (rounded if (rounded := round(cost, 6)) >= base.cost_per_case_usd
                                          else float(f"{cost:.3g}"))
    if base.p95_latency_ms is not None:
        latency = base.p95_latency_ms * 1.5
        gates["max_p95_latency_ms"] = (float(whole) if (whole := math.floor(latency)) >= base.p95_latency_ms
                                       else round(latency, 3))
    return gates


def merged(committed: Mapping[str, Any], derived: Mapping[str, float]) -> dict[str, Any]:
    """The gates.yaml to write: the derived four, then every other gate the author declared."""
    return {**derived, **{key: value for key, value in committed.items() if key not in DERIVED}}


def looser(committed: Mapping[str, Any], derived: Mapping[str, float]) -> list[str]:
    """One line per derived gate the committed gates.yaml drops or sets looser than the rule."""
    lines = []
    for key, value in derived.items():
        have = committed.get(key)
        if have is None:
            lines.append(f"{key} is missing (derived: {_number(value)})")
        elif (have < value) if key in LOWER_IS_LOOSER else (have > value):
            lines.append(f"{key} is {_number(have)}, looser than the derived {_number(value)}")
    return lines


def _number(value: float) -> str:
    """Plain decimal digits (0.000028, 537), or repr where six decimals would change the value."""
    if float(value).is_integer():
        return str(int(value))
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text if float(text) == value else repr(value)


SOURCE_LINE = "# Derived from the evidence in: "


def render(gates: Mapping[str, Any], source: str) -> str:
    """gates.yaml text: a header naming the evidence folder and the rule, then one gate per line.
    The folder line is read back by the check that the gates are not looser than the evidence."""
    lines = ["# Quality gates of this pack (gates.yaml, jevassert's format).",
             f"{SOURCE_LINE}{source}",
             "# by `jev-packs derive-gates`, with the rule:",
             f"#   {RULE[0]}", f"#   {RULE[1]}.",
             "# Re-derive after a re-record and review the diff; a failing gate is a regression to",
             "# explain, never a number to lower."]
    for key, value in gates.items():
        if isinstance(value, Mapping):
            lines.append(f"{key}:")
            lines.extend(f"  {sub}: {_yaml(inner)}" for sub, inner in value.items())
        else:
            lines.append(f"{key}: {_yaml(value)}")
    return "\n".join(lines) + "\n"


def _yaml(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_yaml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float):
        return _number(value)
    return str(value)


def source_of(gates_text: str) -> str | None:
    """The evidence folder a derived gates.yaml names (relative to the repo), else None."""
    for line in gates_text.splitlines():
        if line.startswith(SOURCE_LINE):
            return line[len(SOURCE_LINE):].strip() or None
    return None
