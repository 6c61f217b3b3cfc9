"""The terminal summary: one block per run, then the mismatch list. Printed once, by the controller.

Verbosity shortens it as it shortens pytest's own output: the full block by default, one
line per run under -q, nothing but problems under -qq.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import node_name_part, printable
from ..run_result import RunResult, Suggestion

if TYPE_CHECKING:
    from ..formats.protocol_json import ProtocolRun, Rate


def _f(value: Any, spec: str = ".3f", none: str = "-") -> str:
    return none if value is None else format(value, spec)


def _title(run: RunResult) -> str:
    split = f"::{run.split}" if run.split else ""
    return f"{run.pack}{split} v{run.version}"


def run_lines(run: RunResult) -> Iterator[str]:
    """The block of one (pack, split, recording) run, like `jevassert check` prints it."""
    models = ", ".join(run.recorded_models) or run.record_model
    tested = f"tested {run.tested}" if run.tested else "provisional"
    backend = f"backend {run.backend}, " if run.backend else ""
    yield f"recording {run.recording} ({backend}model {models}, {tested}, mode {run.mode})"
    yield (f"{run.n_cases} cases: {run.mismatched_cases} mismatched, {run.invalid_cases} invalid, "
           f"{run.case_errors} errors; {run.n_items} items graded, {run.missing_items} missing "
           "(an item: one question of one case)")
    if run.state_unchecked:
        yield (f"note: {run.state_unchecked} lines carry no fingerprint that ties them to their case's state "
               "(jevassert's lines carry none): an answer to a state that has changed since cannot be told apart; "
               "re-record to add one (--jev-record=all)")
    yield ""
    yield f"{'question':<24} {'type':<7} {'n':>6} {'acc':>7} {'p(dec)':>7} {'ece':>7} {'brier':>7}"
    for q in run.per_question:
        yield (f"{q.qid:<24} {q.type:<7} {q.n:>6} {q.accuracy:>7.3f} {q.mean_decision_prob:>7.3f} "
               f"{q.ece:>7.3f} {_f(q.brier):>7}")
    yield (f"{'overall':<24} {'':<7} {run.n_items:>6} {run.accuracy:>7.3f} {run.mean_decision_prob:>7.3f} "
           f"{run.ece:>7.3f}")
    if run.majority_baseline is not None:  # always answering each question's commonest gold label
        beats = "" if run.accuracy > run.majority_baseline else "   no better than the baseline"
        yield f"{'majority-label baseline':<24} {'':<7} {'':>6} {run.majority_baseline:>7.3f}{beats}"
    if run.accuracy_ci and run.ece_ci:
        a, e = run.accuracy_ci, run.ece_ci
        yield (f"bootstrap 95% ({run.bootstrap_resamples} resamples, seed {run.seed}): "
               f"accuracy {a[0]:.3f}-{a[1]:.3f}, ECE {e[0]:.3f}-{e[1]:.3f}")
    else:
        yield "bootstrap off: no intervals"
    for locale, numbers in (run.locales or {}).items():  # locales are never pooled alone
        ci = numbers.accuracy_ci
        yield (f"locale {locale}: accuracy {_f(numbers.accuracy)}"
               + (f" (Wilson 95% {ci[0]:.3f}-{ci[1]:.3f})" if ci else "")
               + f", {numbers.n_items} items, {numbers.n_cases} cases")
    if run.n_items < 50:
        yield f"note: {run.n_items} items only: the interval is wide and ECE is coarse"
    yield _cost_line(run)
    if run.latency.p95_ms is not None:
        yield f"latency p50 {run.latency.p50_ms:.0f}ms, p95 {run.latency.p95_ms:.0f}ms"
    else:
        yield "latency: not recorded"
    yield "coverage (accept when p >= t): " + "  ".join(
        f"{r.threshold:.2f}: {r.coverage:.3f}/{_f(r.precision)}" for r in run.coverage)
    tc = run.author_coverage
    if tc is not None:
        yield (f"author thresholds: auto-accepted {tc.n_auto}/{tc.n_total} ({tc.coverage:.3f}), "
               f"precision {_f(tc.precision)}; labels without a floor go to review")
    if run.target_precision is not None and run.suggestion_by_locale is not None:
        for locale, found in run.suggestion_by_locale.items():
            yield f"threshold for precision >= {run.target_precision:.2f} [{locale}]: {_suggested(found)}"
    elif run.target_precision is not None:
        yield f"threshold for precision >= {run.target_precision:.2f}: {_suggested(run.suggestion)}"
    yield _gates_line(run)
    if run.protocol is not None:
        yield from protocol_lines(run.protocol)


def _suggested(s: Suggestion | None) -> str:
    return (f"p >= {s.threshold:.2f} -> coverage {s.coverage:.3f}, precision {s.precision:.3f} (n={s.n_accepted})"
            if s else "none on the grid (0.50-0.99, at least 10 accepted)")


def _ci(rate: Rate) -> str:
    if rate.value is None:
        return "-"
    ci = rate.ci
    return f"{rate.value:.3f} ({ci[0]:.3f}-{ci[1]:.3f})" if ci else f"{rate.value:.3f}"


def protocol_lines(protocol: ProtocolRun) -> Iterator[str]:
    """The protocol run's selective metrics, per question and locale (locales never blended)."""
    report = protocol.report
    refused = " (refused: see check[protocol])" if protocol.problems else ""
    yield (f"protocol {protocol.role}{refused}: thresholds from {report.thresholds_source}; "
           f"{report.samples.total} samples, {report.samples.failed} failed calls")
    for qid, question in report.questions.items():
        for locale, entry in question.locales.items():
            t = (f"{entry.threshold:.2f}" if entry.threshold is not None else
                 "abstain" if (entry.rule or "").startswith("abstain") else "none")
            yield (f"  {qid} [{locale}] t={t}: coverage {_ci(entry.coverage)}, selective precision "
                   f"{_ci(entry.selective_precision)}, decided {entry.samples.decided}/{entry.samples.total}")
    thresholds = protocol.thresholds
    if thresholds is not None:
        missed = [f"{qid} [{loc}]" for qid, per in thresholds.thresholds.items() for loc, e in per.items()
                  if e.threshold is None]
        if missed:
            yield f"  target precision {thresholds.target_precision} not reached for: {', '.join(missed)}"


def _cost_line(run: RunResult) -> str:
    cost = run.cost
    if cost.per_case_usd is not None and cost.total_usd is not None:
        source = {"given": "given", "backend.json": "the list price in backend.json",
                  "default": "Jev's list price"}.get(run.price_source or "", run.price_source)
        return (f"cost/case ${cost.per_case_usd:.6f} (total ${cost.total_usd:.4f} at "
                f"${cost.price_input}/M input + ${cost.price_output}/M output tokens), prices: {source}")
    if cost.input_tokens is None:
        return "cost: no token usage in the recording"
    return (f"cost: unknown, no price for this backend ({cost.input_tokens} input + "
            f"{cost.output_tokens} output tokens; pass --jev-price-input and --jev-price-output)")


def _gates_line(run: RunResult) -> str:
    if run.gates_skipped:
        return "gates: skipped (--jev-no-gates)"
    if not run.gates:
        return "gates: none declared in gates.yaml"
    return "gates: " + "; ".join(
        f"{'PASS' if g.ok else 'SKIP' if g.ok is None else 'FAIL'} {g.gate} ({g.verdict or g.detail})"
        for g in run.gates)


def short_line(run: RunResult) -> str:
    """One line per run, for -q."""
    ci = f" ({run.accuracy_ci[0]:.3f}-{run.accuracy_ci[1]:.3f})" if run.accuracy_ci else ""
    failed = len(run.failed_gates)
    skipped = sum(1 for g in run.gates if g.ok is None)  # not computable: never a pass
    gates = ("gates skipped" if run.gates_skipped else
             f"{len(run.gates)} gates, {failed} failed" + (f", {skipped} skipped" if skipped else "") if run.gates
             else "no gates")
    base = (f" against a {run.majority_baseline:.3f} majority-label baseline" if run.majority_baseline is not None
            else "")
    return (f"jev {_title(run)}: accuracy {run.accuracy:.3f}{ci}{base}, ECE {run.ece:.3f}, {run.n_items} items, "
            f"{run.mismatched_cases} cases mismatched, {gates} ({run.recording})")


def flip_line(run: RunResult) -> str:
    """The flip report's one line (--jev-baseline)."""
    from .flip_text import flip_sentence  # every session imports this module: the flip text only with flips

    assert run.flips is not None
    return flip_sentence(run.flips)


def flip_details(run: RunResult) -> Iterator[str]:
    """What the one line leaves out: the interval's method, the power, the unpaired cases."""
    from .flip_text import power_words  # see flip_line

    f = run.flips
    assert f is not None
    yield f"  paired bootstrap over {f.power.cases} cases ({f.bootstrap_resamples} resamples, seed {f.seed})"
    yield f"  power: {power_words(f.power)}"
    for label, ids in (("only in the current recording", f.only_current), ("only in the baseline", f.only_baseline)):
        if ids:
            shown = ", ".join(ids[:5]) + (f", ... ({len(ids) - 5} more)" if len(ids) > 5 else "")
            yield f"  {len(ids)} case(s) {label}, not compared: {shown}"
    if f.unpaired_items:
        yield f"  {f.unpaired_items} item(s) answered usably by one recording only, not compared"


def _regression_line(run: RunResult, m: Any, nodes: Mapping[tuple[str, str], str]) -> str:
    """A regressed item named by its case item's node id, as a mismatch is (pasted, it re-runs the case)."""
    split = f"::{run.split}" if run.split else ""
    where = nodes.get((run.pack, m.case)) or f"{run.pack}{split} case {m.case}"
    return printable(f"{where} {m.question}: expected {json.dumps(m.expected)}, baseline "
                     f"{json.dumps(m.baseline)} (p={m.baseline_probability:.2f}), now {json.dumps(m.current)} "
                     f"(p={m.current_probability:.2f}) | {m.state}")


def write_flips(tr: Any, runs: list[RunResult], options: Any, verbosity: int,
                nodes: Mapping[tuple[str, str], str] | None = None) -> None:
    """The flip line of every run compared with --jev-baseline, then the regressed items (`nodes`:
    (pack, case) -> the case item's node id, for the cases a mismatch names)."""
    compared = [run for run in runs if run.flips is not None]
    if not compared or verbosity <= -2:
        return
    if verbosity > -1:
        tr.write_sep("-", "jev flips: each recording against its --jev-baseline")
    for run in compared:
        tr.write_line(flip_line(run))
        if verbosity > -1:
            for line in flip_details(run):
                tr.write_line(line)
    regressed = [(run, m) for run in compared for m in run.flips.regressed_items]  # type: ignore[union-attr]
    if not regressed or verbosity == -1:
        return
    cases = len({(run.pack, run.split, m.case) for run, m in regressed})
    tr.write_sep("-", f"jev regressions: {len(regressed)} item{'s' if len(regressed) != 1 else ''} in {cases} "
                      f"case{'s' if cases != 1 else ''}, right in the baseline, wrong now")
    limit = None if options.verbose > 0 else options.mismatches
    for run, m in regressed[:limit]:
        tr.write_line(_regression_line(run, m, nodes or {}))
    if limit is not None and len(regressed) > limit:
        tr.write_line(f"... and {len(regressed) - limit} more (-v lists all; --jev-json keeps every one)")


def _mismatch_line(nodeid: str, m: dict[str, Any], state: str) -> str:
    return printable(f"{nodeid} {m['question']}: expected {json.dumps(m['expected'])}, got {json.dumps(m['got'])} "
                     f"(p={m['probability']:.2f}) | {state}")


def write_summary(tr: Any, runs: list[RunResult], per_case: list[tuple[str, dict[str, Any]]],
                  bulk_nodes: set[str], options: Any, verbosity: int = 0) -> None:
    if verbosity <= -2:
        return  # -qq: pytest's own counts line says enough; failures print on their own
    if verbosity == -1:
        for run in runs:
            tr.write_line(short_line(run))
        if per_case or bulk_nodes:
            tr.write_line("jev: mismatches are listed without -q (--jev-json keeps every one)")
        write_flips(tr, runs, options, verbosity)
        return
    for run in runs:
        tr.write_sep("=", f"jev: {_title(run)}")
        for line in run_lines(run):
            tr.write_line(line)
    found: list[tuple[str, dict[str, Any], str]] = []  # formatted only when shown
    nodes: dict[tuple[str, str], str] = {}  # (pack, case) -> node id: a regressed item is a mismatch too
    for nodeid, record in sorted(per_case, key=lambda x: x[0]):
        nodes[(record["pack"], record["case"])] = nodeid
        for m in record["misses"]:
            found.append((nodeid, m, record["state"]))
    bulk_packs = {_pack_of(node): node.rsplit("::", 1)[0] for node in bulk_nodes}
    for run in runs:
        prefix = bulk_packs.get(run.pack)
        if prefix is not None:
            for m in run.mismatches:
                nodes[(run.pack, m.case)] = f"{prefix}::case[{node_name_part(m.case)}]"
                found.append((nodes[(run.pack, m.case)], m.to_json(), ""))
    if found:
        cases = len({nodeid for nodeid, _, _ in found})  # one node id per case, a bulk run's included
        tr.write_sep("-", f"jev mismatches: {len(found)} item{'s' if len(found) != 1 else ''} in {cases} "
                          f"case{'s' if cases != 1 else ''}, valid answers that disagree with the gold label")
        limit = None if options.verbose > 0 else options.mismatches
        for nodeid, m, state in found[:limit]:
            tr.write_line(_mismatch_line(nodeid, m, state))
        if limit is not None and len(found) > limit:
            tr.write_line(f"... and {len(found) - limit} more (-v lists all; --jev-json keeps every one)")
    write_flips(tr, runs, options, verbosity, nodes)


def _pack_of(nodeid: str) -> str:
    """The pack id of a pack item's node id (`packs/x/pack.yaml::cases[bulk]` -> x)."""
    path = nodeid.split("::", 1)[0]
    parts = path.replace("\\", "/").split("/")
    return parts[-2] if len(parts) >= 2 else parts[-1]
