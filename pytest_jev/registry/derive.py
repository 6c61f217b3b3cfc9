"""Gates derived from evidence, not hand-tuned.

The rule (the seed registry's, reproduced on its published evidence by the tests):

    min_accuracy          = lower bound of the 95% bootstrap interval - 0.01
    max_ece               = ECE + 0.03, never below 0.05
    max_cost_per_case_usd = cost per case x 2
    max_p95_latency_ms    = p95 latency x 1.5

rounded as the seed registry rounds (rates to 2 decimals, cost to 6, latency down to a whole
millisecond), except where that rounding would fail the baseline itself (a cost below a
micro-dollar): those keep the digits they need. A pack with splits is gated on each split, so
its baseline is the weakest split (lowest interval bound, highest ECE, cost and latency). A
metric the evidence does not have (no usage, no latency) gives no gate. Gates a pack author
wrote beyond these four (per question, coverage) are kept.

A derived gate must be one a re-record of the same backend on an ordinary machine passes, so
some are left out, each with its reason (`Derivation.left_out`, printed by derive-gates and
written into gates.yaml):

- no latency gate for an in-process backend (backend.json's `endpoint: in-process`: sparrow,
  MiniLM, the mock): its p95 of 1-2 ms is the machine's, and a busy machine's re-record
  measured 4.8 ms against a 2 ms gate;
- no latency gate under LATENCY_FLOOR_MS (100 ms): a server that quick is near the machine,
  and its latency is the machine's noise more than the backend's;
- no cost gate for a free backend ($0 per case): `$0.000000 <= $0.000000` tests nothing.

A committed gate looser than the derivation is a regression to explain, never a number to
lower: `looser()` names each such gate for the check item.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..formats.run_json import RunNumbers

LATENCY_FLOOR_MS = 100.0
RULE = ("min_accuracy = CI lower bound - 0.01; max_ece = ECE + 0.03 (at least 0.05);",
        "max_cost_per_case_usd = cost x 2 (none for a free backend);",
        "max_p95_latency_ms = p95 x 1.5 (none for an in-process backend, none under 100 ms)")
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


@dataclass(frozen=True)
class Derivation:
    """The gates the rule gives, and those it leaves out with the reason (gate -> why)."""

    gates: dict[str, float]
    left_out: dict[str, str]


def derivation(base: Baseline, *, in_process: bool = False) -> Derivation:
    """The four gates of the rule, each only when its baseline number is known and a re-record
    of the same backend would pass it (`in_process`: the backend runs inside the test process)."""
    gates: dict[str, float] = {}
    left_out: dict[str, str] = {}
    if base.accuracy_ci_low is not None:
        gates["min_accuracy"] = max(0.0, round(base.accuracy_ci_low - 0.01, 2))
    if base.ece is not None:
        gates["max_ece"] = round(max(base.ece + 0.03, 0.05), 2)
    if base.cost_per_case_usd is not None:
        cost = base.cost_per_case_usd * 2
        if cost == 0:
            left_out["max_cost_per_case_usd"] = "a free backend: a $0 gate says nothing"
        else:
            gates["max_cost_per_case_usd"] = (rounded if (rounded := round(cost, 6)) >= base.cost_per_case_usd
                                              else float(f"{cost:.3g}"))
    if base.p95_latency_ms is not None:
        latency = base.p95_latency_ms * 1.5
        if in_process:
            left_out["max_p95_latency_ms"] = "an in-process backend: its latency is the machine's"
        elif latency < LATENCY_FLOOR_MS:
            left_out["max_p95_latency_ms"] = (f"p95 x 1.5 is {_number(round(latency, 3))} ms, under the "
                                              f"{LATENCY_FLOOR_MS:.0f} ms floor: latencies that short are the "
                                              "machine's noise more than the backend's")
        else:
            gates["max_p95_latency_ms"] = float(math.floor(latency))
    return Derivation(gates, left_out)


def derive(base: Baseline, *, in_process: bool = False) -> dict[str, float]:
    """The gates of the rule (derivation's, without the reasons for those left out)."""
    return derivation(base, in_process=in_process).gates


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


def render(gates: Mapping[str, Any], source: str, left_out: Mapping[str, str] | None = None) -> str:
    """gates.yaml text: a header naming the evidence folder, the rule and the gates it left out,
    then one gate per line. The folder line is read back by the check that the gates are not
    looser than the evidence."""
    lines = ["# Quality gates of this pack (gates.yaml, jevassert's format).",
             f"{SOURCE_LINE}{source}",
             "# by `jev-packs derive-gates`, with the rule:",
             *(f"#   {part}" for part in RULE[:-1]), f"#   {RULE[-1]}.",
             *(f"# Left out: {gate} ({why})" for gate, why in (left_out or {}).items()),
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
