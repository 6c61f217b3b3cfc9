"""What a failed gate item says after its headline: the gates.yaml line, the metric with its
interval, the recording graded, and for a gate on flips the baseline it was compared with."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..gates import FLIP_GATES

if TYPE_CHECKING:
    from ..evaluate import PackResult
    from ..run_result import GateResult


def gate_failure_lines(gate: GateResult, result: PackResult) -> list[str]:
    interval = (f" (95% CI {gate.interval[0]:.3f}-{gate.interval[1]:.3f})" if gate.interval else "")
    value = "n/a" if gate.value is None else f"{gate.value:.6g}"
    threshold = "n/a" if gate.threshold is None else _plain(gate.threshold)
    where = f"{result.pack.gates_file}:{gate.line}" if gate.line else str(result.pack.gates_file)
    backend = result.run.backend
    return [
        f"  {where}: {gate.gate}: {threshold}",
        f"  metric {gate.metric} = {value}{interval}",
        f"  recording {result.run.recording}" + (f" (backend {backend})" if backend else ""),
        *([f"  baseline {flips.baseline.recording} ({flips.baseline.name})"]
          if gate.gate in FLIP_GATES and (flips := result.run.flips) is not None else []),
    ]


def _plain(value: float) -> str:
    """A gate's threshold as gates.yaml would write it: 0.000001, not 1e-06."""
    return f"{value:.10f}".rstrip("0").rstrip(".") if value == value and abs(value) < 1e15 else repr(value)
