"""A flip report (formats/flips_json.py) in words: its one line, its power in a sentence, and the
whole report as Markdown for a pull-request comment (`jev-packs flips`, results/flips/*.md).
Renders only: every number comes from the report."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import printable

if TYPE_CHECKING:  # every session imports the terminal summary, and with it this module: types only
    from ..formats.flips_json import FlipItem, FlipReport, Power

MARKDOWN_ROWS = 50  # regressed (and fixed) items listed per table; the JSON keeps every one


def pp(x: float) -> str:
    """A difference in percentage points, signed: +1.1."""
    return f"{100 * x:+.1f}"


def p_value(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def title(report: FlipReport) -> str:
    return report.pack + (f"::{report.split}" if report.split else "")


def flip_sentence(report: FlipReport) -> str:
    """`jev flips <pack> vs <baseline>: N items, R regressed, F fixed, accuracy +d pp (95% CI lo to
    hi), exact McNemar p = ...`: the summary's one line per pack."""
    f = report
    ci = (f" (95% CI {pp(f.accuracy_delta_ci[0])} to {pp(f.accuracy_delta_ci[1])})"
          if f.accuracy_delta_ci else " (no interval: bootstrap off)")
    delta = f"accuracy {pp(f.accuracy_delta)} pp{ci}" if f.accuracy_delta is not None else "no paired items"
    return printable(f"jev flips {title(f)} vs {f.baseline.name}: {f.items} items, {f.regressed} regressed, "
                     f"{f.fixed} fixed, {delta}, exact McNemar {p_value(f.mcnemar_p)}")


def power_words(power: Power) -> str:
    """What a comparison of this size can find, in one sentence."""
    at = (f"at {power.cases} cases, discordance {power.discordance:.3f} and design effect {power.design_effect:.2f}"
          + (" (assumed)" if power.source == "default" else ""))
    chance = f"{100 * power.power:.0f}% power, two-sided {power.alpha:g}"
    if power.detectable_difference is not None:
        return (f"{at}, the exact McNemar test finds accuracy differences of "
                f"{100 * power.detectable_difference:.1f} pp or more ({chance})")
    if power.discordance == 0:
        return "the two recordings never disagree: they say nothing about the size of a difference"
    return f"{at}, no difference is found with {chance}: too few cases"


def _cell(value: Any) -> str:
    """A table cell: JSON for labels, HTML-escaped (a case's text never becomes markup), pipes
    escaped, on one line."""
    text = value if isinstance(value, str) else json.dumps(value)
    return html.escape(printable(text), quote=False).replace("|", "\\|")


def _label(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _items_table(items: Sequence[FlipItem], limit: int) -> Iterator[str]:
    yield "| case | question | expected | baseline (p) | now (p) | state |"
    yield "|---|---|---|---|---|---|"
    for x in items[:limit]:
        yield (f"| {_cell(x.case)} | {_cell(x.question)} | {_cell(_label(x.expected))} | "
               f"{_cell(_label(x.baseline))} ({x.baseline_probability:.2f}) | "
               f"{_cell(_label(x.current))} ({x.current_probability:.2f}) | {_cell(x.state)} |")
    if len(items) > limit:
        yield ""
        yield f"... and {len(items) - limit} more (the JSON report lists every one)."


def markdown(report: FlipReport, limit: int = MARKDOWN_ROWS) -> str:
    """The report for a pull-request comment: the one line, the 2x2 table, the interval, the
    test and the power in words, what was not compared, and the flipped items (folded)."""
    f = report
    lines = [f"### jev flips: {_cell(title(f))}, {_cell(f.current.name)} against {_cell(f.baseline.name)}", "",
             f"`{flip_sentence(f)}`", "",
             "| | baseline right | baseline wrong |", "|---|---:|---:|",
             f"| **now right** | {f.both_right} both right | {f.fixed} fixed |",
             f"| **now wrong** | {f.regressed} regressed | {f.both_wrong} both wrong |", ""]
    if f.current_accuracy is not None and f.baseline_accuracy is not None and f.accuracy_delta is not None:
        ci = (f", 95% CI {pp(f.accuracy_delta_ci[0])} to {pp(f.accuracy_delta_ci[1])} pp (a paired bootstrap over "
              f"the {f.power.cases} cases, {f.bootstrap_resamples} resamples, seed {f.seed})"
              if f.accuracy_delta_ci else " (bootstrap off: no interval)")
        lines.append(f"- Accuracy on the {f.items} items both answered: {f.current_accuracy:.3f} now, "
                     f"{f.baseline_accuracy:.3f} in the baseline: {pp(f.accuracy_delta)} pp{ci}.")
    rate = (f" ({100 * f.regression_rate:.1f}% of the items the baseline had right)"
            if f.regression_rate is not None else "")
    lines.append(f"- Regressed {f.regressed}{rate}; fixed {f.fixed}. Exact McNemar test on the "
                 f"{f.fixed + f.regressed} items that changed: {p_value(f.mcnemar_p)}.")
    lines.append(f"- Power: {power_words(f.power)}.")
    for label, ids in (("only in the current recording", f.only_current), ("only in the baseline", f.only_baseline)):
        if ids:
            shown = ", ".join(_cell(i) for i in ids[:10]) + (f", ... ({len(ids) - 10} more)" if len(ids) > 10 else "")
            lines.append(f"- Not compared: {len(ids)} case(s) {label}: {shown}.")
    if f.unpaired_items:
        lines.append(f"- Not compared: {f.unpaired_items} item(s) one recording answered usably and the other not.")
    lines.append(f"- Recordings: now `{_cell(f.current.recording)}` (sha256 {f.current.sha256[:12]}), baseline "
                 f"`{_cell(f.baseline.recording)}` (sha256 {f.baseline.sha256[:12]}); pack {_cell(f.pack)} "
                 f"v{_cell(f.version)}, both for rubric {f.rubric[:19]}.")
    for name, items in (("Regressed", f.regressed_items), ("Fixed", f.fixed_items)):
        if items:
            lines += ["", f"<details><summary>{name} items ({len(items)})</summary>", "",
                      *_items_table(items, limit), "", "</details>"]
    return "\n".join(lines) + "\n"
