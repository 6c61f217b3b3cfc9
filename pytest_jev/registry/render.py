"""jinja2 rendering of the registry's documents (per-backend reports, evidence.md, the scoreboard).

Templates live in the top-level `templates/` folder, reached from the package as
`pytest_jev/templates` (a link in the checkout, a real folder in the wheel). Everything HTML is
autoescaped; numbers are formatted here, once, so every document shows them alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ..formats.run_json import ResultsFile
from ..gates import reworded
from . import charts

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def f3(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def cost(value: Any, digits: int = 6) -> str:
    return "-" if value is None else f"${value:.{digits}f}"


def ms(value: Any) -> str:
    return "-" if value is None else f"{value:.0f}ms"


@cache
def environment(html: bool) -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=html,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=False, lstrip_blocks=False)
    env.globals.update(f3=f3, cost=cost, ms=ms, reworded=reworded)
    return env


def render(template: str, context: Mapping[str, Any], *, html: bool = False) -> str:
    return str(environment(html).get_template(template).render(**context))


OPTIONAL: dict[str, Any] = {
    "split": None, "mode": "live", "rubric": None, "rubric_status": "unchecked", "recorded_at": None,
    "predictions": "?", "predictions_sha256": "", "threshold_coverage": None, "gates": [],
    "recorded_models": [], "total_cost_usd": None, "detail": None}


def with_defaults(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A results file's JSON with the keys jevassert's files (or older ones) lack filled in as absent."""
    return {**OPTIONAL, **doc}


def report_markdown(results: ResultsFile, title: str = "jev-packs report") -> str:
    """The human report of a results file (also the pack's evidence.md for its pinned model): the
    template lays out the file as written."""
    detail = results.detail
    drawn = None
    if detail is not None:
        drawn = {"reliability": charts.reliability(detail.reliability), "curve": charts.coverage_curve(detail.curve)}
    return render("report.md.j2", {"r": with_defaults(results.to_json()), "title": title,
                                   "locales": detail.locales if detail is not None else {}, "charts": drawn})
