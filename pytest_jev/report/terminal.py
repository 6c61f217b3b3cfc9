"""The terminal summary: one block per run, then the mismatch list. Printed once, by the controller."""

from __future__ import annotations

import json
from typing import Any, Iterator


def _f(value: Any, spec: str = ".3f", none: str = "-") -> str:
    return none if value is None else format(value, spec)


def run_lines(run: dict[str, Any]) -> Iterator[str]:
    """The block of one (pack, recording) run, like `jevassert check` prints it."""
    models = ", ".join(run["recorded_models"]) or run["record_model"]
    tested = f"tested {run['tested']}" if run["tested"] else "provisional"
    backend = f"backend {run['backend']}, " if run.get("backend") else ""
    yield f"recording {run['recording']} ({backend}model {models}, {tested}, mode {run['mode']})"
    yield (f"{run['n_cases']} cases, {run['case_errors']} errors, {run['missing_items']} missing items, "
           f"{run['n_items']} items; {run['mismatched_cases']} cases mismatched, {run['invalid_cases']} invalid")
    yield ""
    yield f"{'question':<24} {'type':<7} {'n':>6} {'acc':>7} {'p(dec)':>7} {'ece':>7} {'brier':>7}"
    for qid, q in run["per_question"].items():
        yield (f"{qid:<24} {q['type']:<7} {q['n']:>6} {q['accuracy']:>7.3f} {q['mean_decision_prob']:>7.3f} "
               f"{q['ece']:>7.3f} {_f(q['brier']):>7}")
    yield (f"{'overall':<24} {'':<7} {run['n_items']:>6} {run['accuracy']:>7.3f} "
           f"{run['mean_decision_prob']:>7.3f} {run['ece']:>7.3f}")
    if run["accuracy_ci"]:
        a, e = run["accuracy_ci"], run["ece_ci"]
        yield (f"bootstrap 95% ({run['bootstrap_resamples']} resamples, seed {run['seed']}): "
               f"accuracy {a[0]:.3f}-{a[1]:.3f}, ECE {e[0]:.3f}-{e[1]:.3f}")
    else:
        yield "bootstrap off: no intervals"
    if run["n_items"] < 50:
        yield f"note: {run['n_items']} items only: the interval is wide and ECE is coarse"
    pricing = run["pricing"]
    if run["cost_per_case_usd"] is not None:
        yield (f"cost/case ${run['cost_per_case_usd']:.6f} (total ${run['total_cost_usd']:.4f} at "
               f"${pricing['input_usd_per_mtok']}/M input + ${pricing['output_usd_per_mtok']}/M output tokens)")
    elif run.get("input_tokens") is None:
        yield "cost: no token usage in the recording"
    else:
        yield (f"cost: unknown, no price for this backend ({run['input_tokens']} input + "
               f"{run['output_tokens']} output tokens; pass --jev-price-input and --jev-price-output)")
    if run["p95_latency_ms"] is not None:
        yield f"latency p50 {run['p50_latency_ms']:.0f}ms, p95 {run['p95_latency_ms']:.0f}ms"
    else:
        yield "latency: not recorded"
    yield "coverage (accept when p >= t): " + "  ".join(
        f"{r['threshold']:.2f}: {r['coverage']:.3f}/{_f(r['precision'])}" for r in run["coverage"])
    tc = run["threshold_coverage"]
    if tc is not None:
        yield (f"author thresholds: auto-accepted {tc['n_auto']}/{tc['n_total']} ({tc['coverage']:.3f}), "
               f"precision {_f(tc['precision'])}; labels without a floor go to review")
    if run["target_precision"] is not None:
        s = run["suggestion"]
        yield (f"threshold for precision >= {run['target_precision']:.2f}: " +
               (f"p >= {s['threshold']:.2f} -> coverage {s['coverage']:.3f}, precision {s['precision']:.3f} "
                f"(n={s['n_accepted']})" if s else "none on the grid (0.50-0.99, at least 10 accepted)"))
    if run["gates_skipped"]:
        yield "gates: skipped (--jev-no-gates)"
    elif not run["gates"]:
        yield "gates: none declared in gates.yaml"
    else:
        yield "gates: " + "; ".join(
            f"{'PASS' if g['ok'] else 'SKIP' if g['ok'] is None else 'FAIL'} {g['gate']} ({g['detail']})"
            for g in run["gates"])


def _mismatch_line(nodeid: str, m: dict[str, Any], state: str) -> str:
    return (f"{nodeid} {m['question']}: expected {json.dumps(m['expected'])}, got {json.dumps(m['got'])} "
            f"(p={m['probability']:.2f}) | {state}")


def write_summary(tr: Any, runs: list[dict[str, Any]], per_case: list[tuple[str, dict[str, Any]]],
                  bulk_nodes: set[str], options: Any) -> None:
    for run in runs:
        tr.write_sep("=", f"jev: {run['pack']} v{run['version']}")
        for line in run_lines(run):
            tr.write_line(line)
    found: list[tuple[str, dict[str, Any], str]] = []  # formatted only when shown
    for nodeid, record in sorted(per_case, key=lambda x: x[0]):
        for m in record["misses"]:
            found.append((nodeid, m, record["state"]))
    bulk_packs = {n.split("::")[0].rstrip("/").split("/")[-1]: n.split("::")[0] for n in bulk_nodes}
    for run in runs:
        prefix = bulk_packs.get(run["pack"])
        if prefix is not None:
            for m in run["mismatches"]:
                found.append((f"{prefix}::case[{m['case']}]", m, ""))
    if not found:
        return
    tr.write_sep("-", f"jev mismatches ({len(found)}): valid answers that disagree with the gold label")
    limit = None if options.verbose > 0 else options.mismatches
    for nodeid, m, state in found[:limit]:
        tr.write_line(_mismatch_line(nodeid, m, state))
    if limit is not None and len(found) > limit:
        tr.write_line(f"... and {len(found) - limit} more (-v lists all; --jev-json keeps every one)")
