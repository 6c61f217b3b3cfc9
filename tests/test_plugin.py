"""Black-box runs of the plugin in pytester: items, outcomes, summary, options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_pack


def test_pack_collects_into_readable_items(pytester: pytest.Pytester, toy: Path) -> None:
    result = pytester.runpytest("packs", "--collect-only", "-q")
    out = result.stdout.str()
    assert "packs/toy/pack.yaml::check[spec]" in out
    assert "packs/toy/pack.yaml::check[recording]" in out
    assert "packs/toy/pack.yaml::case[toy-0001]" in out
    assert "packs/toy/pack.yaml::gate[min_accuracy]" in out
    assert "packs/toy/pack.yaml::gate[max_ece]" in out
    assert "17 tests collected" in out  # 3 checks + 12 cases + 2 gates


def test_mismatches_get_their_own_outcome_and_section(pytester: pytest.Pytester, toy: Path) -> None:
    result = pytester.runpytest("packs", "--jev-replay")
    result.assert_outcomes(passed=14, skipped=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*14 passed, 1 skipped, 2 mismatched*"])
    result.stdout.fnmatch_lines(["*jev mismatches: 6 items in 2 cases*",
                                 'packs/toy/pack.yaml::case[[]toy-0002[]] refund: expected true, got false '
                                 '(p=0.90)*message number 2*'])


def test_verbose_shows_mismatch_word(pytester: pytest.Pytester, toy: Path) -> None:
    result = pytester.runpytest("packs", "-v")
    result.stdout.fnmatch_lines(["*case[[]toy-0001[]] PASSED*", "*case[[]toy-0005[]] MISMATCH*"])


def test_strict_turns_mismatches_into_failures(pytester: pytest.Pytester, toy: Path) -> None:
    result = pytester.runpytest("packs", "--jev-strict")
    result.assert_outcomes(passed=14, failed=2, skipped=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*case toy-0002: refund expected true got false (p=0.90)*"])
    result.stdout.fnmatch_lines(["*jev mismatches: 6 items in 2 cases*"])  # failed items still list their mismatches
    assert "Traceback" not in result.stdout.str()


def test_failing_gate_names_metric_value_interval_threshold_recording(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, wrong={1, 2, 3, 4, 5, 6, 7}, gates="min_accuracy: 0.9\n")
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    result = pytester.runpytest("packs", "-k", "gate")
    result.assert_outcomes(failed=1, deselected=15)
    result.stdout.fnmatch_lines([
        "accuracy 0.417, below the 0.900 required",
        "  packs/toy/gates.yaml:1: min_accuracy: 0.9",
        "  metric accuracy = 0.416667 (95% CI *)",
        "  recording results/jev-1.13.0/toy.predictions.jsonl (backend jev-1.13.0)",
    ])


def test_uncomputable_gate_is_skipped_with_reason(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, gates="min_accuracy_ci_lower: 0.1\nmax_p95_latency_ms: 500\n")
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    rec = pytester.path / "results/jev-1.13.0/toy.predictions.jsonl"
    lines = [json.loads(x) for x in rec.read_text().splitlines()]
    rec.write_text("".join(json.dumps({**x, "latency_ms": None}) + "\n" for x in lines))
    result = pytester.runpytest("packs", "--jev-bootstrap", "0", "-rs", "-k", "gate")
    result.assert_outcomes(skipped=2, deselected=15)
    result.stdout.fnmatch_lines(["*min_accuracy_ci_lower not computable: bootstrap disabled*",
                                 "*max_p95_latency_ms not computable: no latency data in recording*"])


def test_interval_gate_without_items_names_that_not_the_bootstrap(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, gates="min_accuracy_ci_lower: 0.1\n")
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    rec = pytester.path / "results/jev-1.13.0/toy.predictions.jsonl"
    lines = [json.loads(x) for x in rec.read_text().splitlines()]
    rec.write_text("".join(json.dumps({**x, "answers": None, "error": "timeout"}) + "\n" for x in lines))
    result = pytester.runpytest("packs", "-rs", "-k", "gate")
    result.assert_outcomes(skipped=1, deselected=15)
    result.stdout.fnmatch_lines(["*min_accuracy_ci_lower not computable: no items in recording*"])


def test_no_gates_skips_gate_items(pytester: pytest.Pytester, toy: Path) -> None:
    result = pytester.runpytest("packs", "--jev-no-gates", "-k", "gate")
    result.assert_outcomes(skipped=2, deselected=15)
    result.stdout.fnmatch_lines(["*gates: skipped (--jev-no-gates)*"])


def test_summary_printed_once_with_metrics(pytester: pytest.Pytester, toy: Path) -> None:
    result = pytester.runpytest("packs")
    out = result.stdout.str()
    assert out.count("jev: toy v0.1.0") == 1
    result.stdout.fnmatch_lines([
        "12 cases: 2 mismatched, 0 invalid, 0 errors; 36 items graded, 0 missing (an item: one question of one case)",
        "refund * noul * 12 *0.833*",
        "overall * 36 *0.833*",
        "bootstrap 95% (1000 resamples, seed 0): accuracy *",
        "cost/case $0.000013 *",
        "latency p50 100ms, p95 100ms",
        "author thresholds: auto-accepted *",
        "gates: PASS min_accuracy (accuracy 0.833, at least the 0.500 required); PASS max_ece*",
    ])


def test_json_report_has_jevassert_keys(pytester: pytest.Pytester, toy: Path) -> None:
    pytester.runpytest("packs", "--jev-json", "out/metrics.json", "--jev-target-precision", "0.8")
    data = json.loads((pytester.path / "out/metrics.json").read_text())
    (run,) = data["runs"]
    keys = ("pack version record_model tested n_cases n_items case_errors missing_items accuracy accuracy_ci "
            "ece ece_ci suggestion mean_decision_prob cost_per_case_usd total_cost_usd p50_latency_ms "
            "p95_latency_ms per_question coverage threshold_coverage gates gates_skipped recorded_models "
            "pricing backend recording").split()
    assert [k for k in keys if k not in run] == []
    assert run["pack"] == "toy" and run["backend"] == "jev-1.13.0"
    assert run["recording"] == "results/jev-1.13.0/toy.predictions.jsonl"
    assert run["accuracy"] == 30 / 36
    assert run["suggestion"]["threshold"] == 0.5
    assert [g["gate"] for g in run["gates"]] == ["min_accuracy", "max_ece"]


def test_junitxml_and_exitfirst_work(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, wrong=set(range(1, 13)), gates="min_accuracy: 0.9\n")
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    result = pytester.runpytest("packs", "--junitxml=junit.xml", "-x", "--jev-strict")
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    xml = (pytester.path / "junit.xml").read_text()
    assert 'name="case[toy-0001]"' in xml and "refund expected" in xml


def test_recording_option_takes_a_file_or_folder(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, recording="elsewhere")
    by_file = pytester.runpytest("packs", "--jev-recording", "elsewhere/toy.predictions.jsonl")
    by_file.assert_outcomes(passed=16, skipped=1)
    by_dir = pytester.runpytest("packs", "--jev-recording", "elsewhere")
    by_dir.assert_outcomes(passed=16, skipped=1)


def test_pack_predictions_file_is_the_fallback(pytester: pytest.Pytester) -> None:
    folder = write_pack(pytester.path, recording="packs/toy")
    (folder / "toy.predictions.jsonl").rename(folder / "predictions.jsonl")
    pytester.runpytest("packs").assert_outcomes(passed=16, skipped=1)


def test_missing_recording_names_paths_and_command(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, recording=None)
    write_pack(pytester.path, pack_id="other", recording="results/b1")
    result = pytester.runpytest("packs", "--jev-backend", "b1", "-rs")
    result.assert_outcomes(passed=17, failed=1, skipped=16)  # its cases and gates point at check[recording]
    result.stdout.fnmatch_lines([
        "*no recording for pack 'toy': *results/b1/toy.predictions.jsonl does not exist, and no folder of *results "
        "has a backend.json naming backend 'b1'; record one with `pytest *packs/toy --jev-record --jev-backend=b1`*",
        "SKIPPED [[]15[]] packs/toy/pack.yaml:1: no usable recording: see packs/toy/pack.yaml::check[[]recording[]]"])


def test_replay_never_opens_a_socket(pytester: pytest.Pytester, toy: Path) -> None:
    pytester.makeconftest("""
import socket
def _refuse(*a, **k):
    raise RuntimeError("network used during replay")
socket.socket = _refuse
socket.create_connection = _refuse
""")
    # in a subprocess: the patched socket module must not leak into other tests
    result = pytester.runpytest_subprocess("packs", "--jev-replay", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=14, skipped=1)
    assert "network used" not in result.stdout.str()


def test_bulk_mode_grades_in_one_item_and_lists_mismatches(pytester: pytest.Pytester, toy: Path) -> None:
    result = pytester.runpytest("packs", "--jev-case-items=none")
    result.assert_outcomes(passed=4, skipped=1)
    result.stdout.fnmatch_lines(["*jev mismatches: 6 items in 2 cases*",
                                 "packs/toy/pack.yaml::case[[]toy-0002[]] refund: expected true, got false*",
                                 "*4 passed, 1 skipped, 1 mismatched*"])


def test_auto_cut_over_follows_the_size_limit(pytester: pytest.Pytester, toy: Path) -> None:
    result = pytester.runpytest("packs", "--collect-only", "-q", "-o", "jev_case_items_max=5")
    result.stdout.fnmatch_lines(["packs/toy/pack.yaml::cases[[]bulk[]]", "*6 tests collected*"])


def test_bad_option_value_is_a_usage_error(pytester: pytest.Pytester, toy: Path) -> None:
    result = pytester.runpytest("packs", "--jev-bootstrap", "many")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--jev-bootstrap='many' is not a whole number >= 0*"])


def test_single_pack_folder_and_single_item_selection(pytester: pytest.Pytester, toy: Path) -> None:
    pytester.runpytest("packs/toy").assert_outcomes(passed=14, skipped=1)
    one = pytester.runpytest("packs/toy/pack.yaml::case[toy-0003]", "packs/toy/pack.yaml::gate[max_ece]")
    one.assert_outcomes(passed=2)  # pytest itself collects only the named items


def test_ini_twins_are_read_and_cli_wins(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, recording="results/one")
    write_pack(pytester.path, pack_id="toy2", recording="results/two")
    pytester.makeini("[pytest]\njev_backend = one\n")
    result = pytester.runpytest("packs/toy", "--jev-json", "a.json")
    result.assert_outcomes(passed=16, skipped=1)
    assert json.loads((pytester.path / "a.json").read_text())["runs"][0]["backend"] == "one"
    pytester.runpytest("packs/toy2", "--jev-backend", "two").assert_outcomes(passed=16, skipped=1)


def test_price_flags_and_backend_json_pricing(pytester: pytest.Pytester, toy: Path) -> None:
    (pytester.path / "results/jev-1.13.0/backend.json").write_text(
        json.dumps({"pricing_usd_per_mtok": {"input": 2.0, "output": 10.0}}))
    pytester.runpytest("packs", "--jev-json", "a.json")
    run = json.loads((pytester.path / "a.json").read_text())["runs"][0]
    assert run["pricing"] == {"input_usd_per_mtok": 2.0, "output_usd_per_mtok": 10.0}
    assert run["total_cost_usd"] == (12 * 300 * 2.0 + 12 * 20 * 10.0) / 1e6
    pytester.runpytest("packs", "--jev-json", "b.json", "--jev-price-input", "1", "--jev-price-output", "0")
    run = json.loads((pytester.path / "b.json").read_text())["runs"][0]
    assert run["pricing"] == {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 0.0}


def test_unknown_price_leaves_cost_unknown_not_jev_priced(pytester: pytest.Pytester, toy: Path) -> None:
    # what the recorder writes for a model without a list price (e.g. anthropic:<new model>)
    (pytester.path / "results/jev-1.13.0/backend.json").write_text(
        json.dumps({"pricing": {"input_usd_per_mtok": None, "output_usd_per_mtok": None}}))
    (toy / "gates.yaml").write_text("max_cost_per_case_usd: 0.0005\n")
    result = pytester.runpytest("packs", "--jev-json", "a.json", "-rs")
    result.assert_outcomes(passed=12, skipped=2)
    result.stdout.fnmatch_lines([
        "cost: unknown, no price for this backend (3600 input + 240 output tokens; pass --jev-price-input*",
        "*gate max_cost_per_case_usd not computable: no price known for this backend*"])
    run = json.loads((pytester.path / "a.json").read_text())["runs"][0]
    assert run["cost_per_case_usd"] is None and run["input_tokens"] == 3600
    priced = pytester.runpytest("packs", "--jev-price-input", "2", "--jev-price-output", "10")
    priced.assert_outcomes(passed=12, failed=1, skipped=1)  # 300 in + 20 out tokens a case: $0.0008 > $0.0005


def test_pack_without_gates_file_has_no_gate_items(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, gates=None)
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    result = pytester.runpytest("packs")
    result.assert_outcomes(passed=14, skipped=1)
    result.stdout.fnmatch_lines(["*gates: none declared in gates.yaml*"])


def test_missing_changelog_is_a_warning_not_a_failure(pytester: pytest.Pytester, toy: Path) -> None:
    (toy / "CHANGELOG.md").unlink()
    result = pytester.runpytest("packs")
    result.assert_outcomes(passed=14, warnings=1, skipped=1)
    result.stdout.fnmatch_lines(["*PackWarning: *packs/toy/CHANGELOG.md: missing (SPEC.md asks every pack for one)*"])


def test_a_run_without_packs_does_not_import_heavy_modules(pytester: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_plain="""
import sys
def test_light():
    heavy = [m for m in ("numpy", "jsonschema", "yaml", "httpx", "jinja2", "scipy") if m in sys.modules]
    assert heavy == []
    # the file models of runs, the protocol, the registry and backend.json (~30 ms to define) wait for a pack
    models = [m for m in sys.modules if m.startswith("pytest_jev.formats.")]
    assert sorted(models) == ["pytest_jev.formats.answers_line", "pytest_jev.formats.recording_line",
                              "pytest_jev.formats.values"]
""")
    result = pytester.runpytest_subprocess("-p", "pytest_jev.plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_metrics_that_crash_are_noted_not_raised_at_session_end():
    from types import SimpleNamespace

    from pytest_jev.nodes import PackRun, RunStore
    from pytest_jev.run_result import RunKey

    store = RunStore()
    good = SimpleNamespace(key=RunKey("good", "", "r.jsonl"))
    store.add_result(good)  # type: ignore[arg-type]
    # a prepared run without settings: evaluate.finish raises on the background thread
    broken = PackRun(SimpleNamespace(id="broken"), SimpleNamespace(name="", cases=()), None)  # type: ignore[arg-type]
    broken.prepared = SimpleNamespace(shown_path="b.jsonl")  # type: ignore[assignment]
    broken.start(store, apart=False)
    assert store.results() == [good]
    assert len(store.failures) == 1
    assert store.failures[0].startswith("broken (b.jsonl): metrics failed: AttributeError")


FREEZE_PROBE = """
import gc, json, pathlib
def pytest_runtest_call(item):
    path = pathlib.Path("freeze.json")
    seen = json.loads(path.read_text()) if path.exists() else []
    path.write_text(json.dumps(seen + [gc.get_freeze_count()]))
"""


@pytest.mark.parametrize("threshold, frozen, case_items, n_items",
                         [(12, True, "all", 17), (13, False, "all", 17), (12, True, "none", 6)])
def test_large_runs_freeze_collected_objects_until_the_end(pytester: pytest.Pytester, toy: Path,
                                                           monkeypatch: pytest.MonkeyPatch, threshold: int,
                                                           frozen: bool, case_items: str, n_items: int) -> None:
    import gc

    from pytest_jev.nodes import gcpolicy

    assert gc.get_freeze_count() == 0
    monkeypatch.setattr(gcpolicy, "FREEZE_MIN_CASES", threshold)  # the toy pack has 12 cases
    pytester.makeconftest(FREEZE_PROBE)
    run = pytester.inline_run("packs", f"--jev-case-items={case_items}")
    mismatched = 2 if case_items == "all" else 1  # toy's 2 mismatched cases, or the bulk item holding them
    # check[rubric] skipped (nothing to compare); items holding mismatches are skips to report readers
    run.assertoutcome(passed=n_items - 1 - mismatched, skipped=1 + mismatched)
    counts = json.loads((pytester.path / "freeze.json").read_text())
    assert len(counts) == n_items
    assert all(c > 0 for c in counts) if frozen else all(c == 0 for c in counts)
    assert gc.get_freeze_count() == 0  # handed back when the session ends


EXIT_PROBE = """
import atexit, gc, pathlib
import pytest_jev.nodes.gcpolicy
pytest_jev.nodes.gcpolicy.FREEZE_MIN_CASES = 12  # the toy pack has 12 cases
def pytest_runtest_call(item):
    pathlib.Path("during.txt").write_text(str(gc.get_freeze_count()))
atexit.register(lambda: pathlib.Path("exit.txt").write_text(str(gc.get_freeze_count())))
"""


def test_command_line_runs_hand_frozen_objects_back_before_exit(pytester: pytest.Pytester, toy: Path) -> None:
    """Frozen during the session, handed back at unconfigure: no private pytest API, no frame walking."""
    pytester.makeconftest(EXIT_PROBE)
    result = pytester.runpytest_subprocess("packs")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*14 passed, 1 skipped, 2 mismatched*"])
    assert int((pytester.path / "during.txt").read_text()) > 0
    assert int((pytester.path / "exit.txt").read_text()) == 0


BROKEN_METRICS = """
import pytest_jev.metrics as m
def boom(*args, **kwargs):
    raise RuntimeError("boom")
m.bootstrap = boom
"""


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]])
def test_metrics_that_fail_make_the_run_red_even_without_gates(pytester: pytest.Pytester, toy: Path,
                                                               xdist: list[str]) -> None:
    pytester.makeconftest(BROKEN_METRICS)
    result = pytester.runpytest_subprocess("packs", *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*gate min_accuracy: metrics failed: RuntimeError: boom*"])
    no_gates = pytester.runpytest_subprocess("packs", "--jev-no-gates", *xdist)
    assert no_gates.ret == pytest.ExitCode.TESTS_FAILED  # every item passed, yet the pack has no numbers
    no_gates.stdout.fnmatch_lines(["jev: toy (*): metrics failed: RuntimeError: boom"])
    assert "Traceback" not in no_gates.stdout.str() + result.stdout.str()


def test_json_report_escapes_a_lone_surrogate_instead_of_crashing(tmp_path: Path) -> None:
    from dataclasses import replace

    from pytest_jev import grade_pack, load_pack, load_recording
    from pytest_jev.report.json import write_runs

    folder = write_pack(tmp_path)
    run = grade_pack(load_pack(folder), load_recording(tmp_path / "results/jev-1.13.0/toy.predictions.jsonl"))
    path = write_runs(tmp_path / "out.json", [replace(run, recorded_models=("m-\ud800",), backend="café")])
    assert json.loads(path.read_text(encoding="ascii"))["runs"][0]["recorded_models"] == ["m-\ud800"]
    write_runs(path, [replace(run, backend="café")])
    assert "café" in path.read_text(encoding="utf-8")  # readable UTF-8 whenever it can be


def test_the_readme_options_table_lists_every_flag_and_its_ini_twin() -> None:
    """README's options table holds each flag options.FLAGS declares, with its ini twin ('-' for
    a flag without one, 'same' for a row of two flags), and no flag FLAGS does not declare."""
    import re

    from pytest_jev.options import FLAGS

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    table = readme.split("\n## Options\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        if line.startswith("| `--jev-") and len(cells) == 3:
            for flag in re.findall(r"`--(jev-[a-z-]+)", cells[0]):
                rows[flag] = cells[1]
    assert sorted(rows) == sorted(flag.name for flag in FLAGS)
    for flag in FLAGS:
        assert rows[flag.name] in ((f"`{flag.dest}`", "same") if flag.ini else ("-",)), flag.name
