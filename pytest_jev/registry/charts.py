"""Geometry of the small inline SVG charts (reliability diagram, coverage-precision curve): pure
functions from result data to coordinates, so templates only draw and tests can read the numbers.

Charts are drawn in a fixed viewBox (W x H) with a margin for the axes; the page scales them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..formats.run_json import CurvePoint, ReliabilityBin

W, H, PAD = 160, 120, 18  # viewBox size and the margin left and below for axis labels


def _x(value: float, lo: float = 0.0, hi: float = 1.0) -> float:
    return round(PAD + (value - lo) / (hi - lo) * (W - PAD - 4), 2)


def _y(value: float) -> float:
    return round(H - PAD - value * (H - PAD - 4), 2)


def reliability(bins: Sequence[ReliabilityBin]) -> dict[str, Any]:
    """Bars of observed accuracy per probability bin (width = bin, opacity grows with its share
    of items), a dot at each bin's mean probability, and the diagonal of perfect calibration."""
    total = sum(int(b.n) for b in bins) or 1
    bars = []
    for b in bins:
        x0, x1 = _x(b.lo), _x(b.hi)
        top = _y(b.accuracy)
        bars.append({"x": x0, "y": top, "w": round(x1 - x0 - 1, 2), "h": round(_y(0) - top, 2),
                     "opacity": round(0.25 + 0.75 * int(b.n) / total, 3),
                     "cx": _x(b.mean_p), "cy": _y(b.mean_p),
                     "title": f"p {b.lo:.1f}-{b.hi:.1f}: {b.n} items, mean p {b.mean_p:.3f}, "
                              f"accuracy {b.accuracy:.3f}"})
    return {"w": W, "h": H, "bars": bars, "diagonal": f"{_x(0)},{_y(0)} {_x(1)},{_y(1)}", **_axes(0.0, 1.0)}


def coverage_curve(points: Sequence[CurvePoint]) -> dict[str, Any]:
    """Precision (y) against coverage (x) as the acceptance threshold rises from 0.50 to 0.99."""
    drawn = [(p.t, p.coverage, p.precision) for p in points if p.precision is not None]
    line = " ".join(f"{_x(coverage)},{_y(precision)}" for _, coverage, precision in drawn)
    marks = [{"cx": _x(coverage), "cy": _y(precision),
              "title": f"p >= {t:.2f}: coverage {coverage:.3f}, precision {precision:.3f}"}
             for t, coverage, precision in drawn if round(t * 100) % 10 == 0]
    return {"w": W, "h": H, "line": line, "marks": marks, **_axes(0.0, 1.0)}


def _axes(lo: float, hi: float) -> dict[str, Any]:
    return {"x0": _x(lo), "x1": _x(hi), "y0": _y(0), "y1": _y(1), "pad": PAD}


# --- the scoreboard's charts -------------------------------------------------------------------

TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
ROW_W, ROW_H = 240, 18  # an accuracy interval row of the scoreboard (one per backend)


def _at(value: float, width: float) -> float:
    """x of a rate on the common 0-1 axis of a pack's interval rows."""
    return round(4 + min(max(value, 0.0), 1.0) * (width - 8), 2)


def interval_row(low: float | None, value: float | None, high: float | None, baseline: float | None = None,
                 width: float = ROW_W) -> dict[str, Any]:
    """One backend's accuracy and 95% interval on the pack's common 0-1 axis (faint gridlines at
    the quarters, a dashed tick at the baseline), so the rows of one pack line up like a forest
    plot and overlapping intervals are visible at a glance."""
    row: dict[str, Any] = {"w": width, "h": ROW_H, "mid": ROW_H / 2,
                           "grid": [_at(t, width) for t in TICKS],
                           "base": None if baseline is None else _at(baseline, width), "cx": None}
    if value is not None:
        row.update(cx=_at(value, width), x1=_at(low if low is not None else value, width),
                   x2=_at(high if high is not None else value, width))
    return row


def interval_axis(width: float = ROW_W) -> dict[str, Any]:
    """The labelled 0-1 axis drawn once above a pack's interval rows."""
    return {"w": width, "h": 14, "ticks": [{"x": _at(t, width), "label": f"{t:g}"} for t in TICKS]}


CW, CH = 420, 230  # cost vs accuracy chart
C_LEFT, C_TOP, C_BOTTOM, C_RIGHT = 34, 10, 34, 12  # margins: accuracy labels, top, cost labels, right
FREE_W = 60  # the band at the left edge where free (zero-cost) backends sit


def _cy(acc: float) -> float:
    return round(CH - C_BOTTOM - min(max(acc, 0.0), 1.0) * (CH - C_BOTTOM - C_TOP), 2)


def _decades(costs: Sequence[float]) -> tuple[int, int]:
    """The whole decades spanning the positive costs (1e-6 .. 1e-2 when there are none)."""
    if not costs:
        return -6, -2
    lo, hi = math.floor(math.log10(min(costs))), math.ceil(math.log10(max(costs)))
    return lo, max(hi, lo + 1)


def cost_accuracy(points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Accuracy (y, 0-1, with the 95% interval as a whisker) against cost per case (x, log scale).

    Each point: `key` (the label drawn beside it), `cost` (None: not drawn), `accuracy`, `ci`
    ([lo, hi] or None), `frontier` (bool), `title`. A free backend (cost 0) has no place on a log
    axis: it sits in a band at the left edge marked "free", spread out in the given order."""
    positive = [float(p["cost"]) for p in points if p["cost"] is not None and p["cost"] > 0]
    d_lo, d_hi = _decades(positive)
    x0, x1 = C_LEFT + FREE_W + 26, CW - C_RIGHT - 10

    def cx(cost: float) -> float:
        return round(x0 + (math.log10(cost) - d_lo) / (d_hi - d_lo) * (x1 - x0), 2)

    free = [p for p in points if p["cost"] == 0]
    drawn, line = [], []
    for p in points:
        if p["cost"] is None or p["accuracy"] is None:
            continue
        if p["cost"] == 0:
            x = round(C_LEFT + FREE_W * (free.index(p) + 1) / (len(free) + 1), 2)
        else:
            x = cx(float(p["cost"]))
        ci = p.get("ci") or [p["accuracy"], p["accuracy"]]
        point = {"x": x, "y": _cy(p["accuracy"]), "ylo": _cy(ci[0]), "yhi": _cy(ci[1]), "key": p["key"],
                 "frontier": bool(p["frontier"]), "title": p["title"]}
        drawn.append(point)
        if point["frontier"]:
            line.append((float(p["cost"]), point))
    line.sort(key=lambda item: (item[0], item[1]["y"] * -1))
    return {"w": CW, "h": CH, "points": drawn, "frontier": " ".join(f"{q['x']},{q['y']}" for _, q in line),
            "free": {"x0": C_LEFT, "x1": C_LEFT + FREE_W, "label_x": round(C_LEFT + FREE_W / 2, 2)},
            "plot": {"x0": x0, "x1": x1, "y0": _cy(0.0), "y1": _cy(1.0)},
            "xticks": [{"x": cx(10.0**d), "label": _cost_tick(d)} for d in range(d_lo, d_hi + 1)],
            "yticks": [{"y": _cy(t), "label": f"{t:g}"} for t in TICKS],
            "bottom": CH - 6}


def _cost_tick(decade: int) -> str:
    return f"${10.0**decade:.{max(0, -decade)}f}"
