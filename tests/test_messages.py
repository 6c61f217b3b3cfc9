"""What users read: failure text that says what is wrong, every problem of a file in one run,
counts that name their unit, messages that point at the right line (issue 19)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import write_pack

EVERY_GATE = """\
min_accuracy: 0.99
max_ece: 0.01
max_cost_per_case_usd: 0.000001
max_p95_latency_ms: 1
min_accuracy_ci_lower: 0.99
min_coverage_at_precision: {precision: 0.99, min_coverage: 0.9}
per_question:
  queue: {min_accuracy: 0.99, max_ece: 0.01}
"""


def _wide(monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    """A terminal `columns` wide, off CI (pytest prints the short summary whole on CI)."""
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)


# -- 19.5: failure text that reads as true -----------------------------------------------------

def test_every_failed_gate_says_what_is_wrong(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    write_pack(pytester.path, wrong={2, 5}, gates=EVERY_GATE)
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    _wide(monkeypatch, 200)
    result = pytester.runpytest("packs", "--jev-price-input", "1", "--jev-price-output", "1", "-p", "no:cacheprovider")
    out = result.stdout.str()
    wrong = {  # the first line of each failure: the violation, not the requirement
        "min_accuracy": "accuracy 0.833, below the 0.990 required",
        "max_ece": "ece 0.228, above the 0.010 allowed",
        "max_cost_per_case_usd": "cost/case $0.000320, above the $0.000001 allowed",
        "max_p95_latency_ms": "p95 latency 100 ms, above the 1 ms allowed",
        "min_accuracy_ci_lower": "accuracy CI lower bound 0.694, below the 0.990 required",
        "min_coverage_at_precision": "no threshold on the grid (0.50-0.95) reaches the 0.99 precision required",
        "per_question.queue.min_accuracy": "queue accuracy 0.833, below the 0.990 required",
        "per_question.queue.max_ece": "queue ece 0.233, above the 0.010 allowed",
    }
    lines = out.splitlines()
    for gate, text in wrong.items():
        header = next(i for i, line in enumerate(lines) if line.strip("_ ") == f"gate {gate}")
        assert lines[header + 1] == text, (gate, lines[header + 1])
        assert f"FAILED packs/toy/pack.yaml::gate[{gate}] - {text}" in lines, gate
    assert "<=" not in out.split("short test summary")[1] and " >= 0.990" not in out
    # the terminal's gates line says the same
    assert "FAIL max_ece (ece 0.228, above the 0.010 allowed)" in out
    # where it is declared, in the body, relative to where pytest started
    assert "  packs/toy/gates.yaml:2: max_ece: 0.01" in lines
    assert "  packs/toy/gates.yaml:3: max_cost_per_case_usd: 0.000001" in lines
    assert str(pytester.path) not in out.split("collected")[1]


def test_a_passing_gate_reads_as_true(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, wrong={2, 5}, gates="min_accuracy: 0.5\nmax_ece: 0.5\n")
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    out = pytester.runpytest("packs", "-p", "no:cacheprovider").stdout.str()
    assert ("gates: PASS min_accuracy (accuracy 0.833, at least the 0.500 required); "
            "PASS max_ece (ece 0.228, within the 0.500 allowed)") in out


def test_a_verdict_never_prints_two_different_numbers_alike() -> None:
    from pytest_jev.gates import verdict

    assert verdict("accuracy", 0.3496, 0.35, at_least=True) == "accuracy 0.3496, below the 0.3500 required"
    assert verdict("ece", 0.25, 0.25, at_least=False) == "ece 0.250, within the 0.250 allowed"


@pytest.mark.parametrize("columns", [80, 60])
def test_the_short_summary_starts_with_the_reason(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                   columns: int) -> None:
    """pytest cuts the short summary at the terminal's width: what is wrong comes first there,
    not a path (and no path is absolute)."""
    toy = write_pack(pytester.path, wrong={2}, gates="max_ece: 0.01\n")
    write_pack(pytester.path, pack_id="bad", wrong={2})
    cases = pytester.path / "packs/bad/cases.jsonl"
    cases.write_text(cases.read_text().replace('"queue": "technical"', '"queue": "nope"', 1))
    rec = pytester.path / "results/jev-1.13.0/toy.predictions.jsonl"
    lines = [json.loads(x) for x in rec.read_text().splitlines()]
    lines[4]["answers"]["refund"]["noul"] = 1.5
    rec.write_text("".join(json.dumps(x) + "\n" for x in lines))
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    _wide(monkeypatch, columns)
    out = pytester.runpytest("packs", "-p", "no:cacheprovider", "-rfs").stdout.str()
    summary = out.split("short test summary info")[1].splitlines()[1:]
    said = {line.split(" - ")[0]: line.split(" - ", 1)[1] for line in summary if " - " in line}
    expected = {"FAILED packs/bad/pack.yaml::check[spec]": 'expect.queue is "nope", not one of',
                "FAILED packs/toy/pack.yaml::gate[max_ece]": "ece 0.",
                "FAILED packs/toy/pack.yaml::case[toy-0005]": "refund: noul 1.5 outside [0, 1]"}
    for node, reason in expected.items():
        shown = said[node].rstrip(".")
        assert reason.startswith(shown) or shown.startswith(reason), (node, said[node])
        assert len(shown) >= 10, (node, said[node])  # not cut before the reason
    if columns == 80:
        assert said["FAILED packs/toy/pack.yaml::gate[max_ece]"] == "ece 0.189, above the 0.010 allowed"
        assert said["FAILED packs/toy/pack.yaml::case[toy-0005]"] == "refund: noul 1.5 outside [0, 1]"
    # failures and skip reasons: paths relative to where pytest started (the header names the rootdir)
    assert str(pytester.path) not in out.split("collected")[1]
    assert toy.exists()


# -- 19.9: smaller ones ------------------------------------------------------------------------

@pytest.mark.parametrize("old, new, line, says", [
    ("      billing: payments and invoices\n", "      yes: payments and invoices\n", 18,
     "questions.queue.options: the key yes is read by YAML as the boolean true, not the text 'yes'; "
     "quote it: 'yes':"),
    ("levels: [low, high, unknown]", "levels: [no, high, unknown]", 24,
     "questions.urgency.levels.0: the value no is read by YAML as the boolean false, not the text 'no'; "
     "quote it: 'no'"),
    ("  fields: [message]", "  fields: [on]", 9,
     "state.fields.0: the value on is read by YAML as the boolean true, not the text 'on'; quote it: 'on'"),
    ("version: 0.1.0", "version: 1.0", 3,
     "version: the value 1.0 is read by YAML as the number 1.0, not the text '1.0'; quote it: '1.0'"),
])
def test_a_yaml_word_read_as_a_boolean_says_to_quote_it(pytester: pytest.Pytester, old: str, new: str, line: int,
                                                        says: str) -> None:
    toy = write_pack(pytester.path)
    pack = toy / "pack.yaml"
    assert old in pack.read_text()
    pack.write_text(pack.read_text().replace(old, new, 1))
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    out = pytester.runpytest("packs", "-p", "no:cacheprovider").stdout.str()
    assert f"packs/toy/pack.yaml:{line}: {says}" in out.splitlines(), out
    assert "is not of type 'string'" not in out


def test_a_quoted_yes_is_a_label(pytester: pytest.Pytester) -> None:
    """The fix the message gives works: 'yes' quoted is the option label yes."""
    from pytest_jev.packs import load_pack

    toy = write_pack(pytester.path)
    pack = toy / "pack.yaml"
    pack.write_text(pack.read_text().replace("      billing: payments", "      'yes': payments", 1))
    rows = [json.loads(x) for x in (toy / "cases.jsonl").read_text().splitlines()]
    for row in rows:
        row["expect"]["queue"] = "yes" if row["expect"]["queue"] == "billing" else row["expect"]["queue"]
    (toy / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert list(load_pack(toy).questions["queue"].options) == ["yes", "technical", "unknown"]


@pytest.mark.parametrize("broken, line, says", [
    ('    instructions "Which team should handle `message`?"', 16,
     "invalid YAML: could not find expected ':' for the key that starts on this line"),
    ("    instructions: [a, b", 16, "invalid YAML: did not find expected ',' or ']' for the [ opened on this line"),
    ("    instructions: 'Which team should handle", 16,
     "invalid YAML: found unexpected end of stream for the quoted text that starts on this line"),
    ("    instructions: Which team: billing", 16, "invalid YAML: mapping values are not allowed in this context"),
])
def test_a_yaml_syntax_error_names_the_line_of_its_cause(tmp_path: Path, broken: str, line: int, says: str) -> None:
    from pytest_jev.errors import PackError
    from pytest_jev.packs import load_pack

    toy = write_pack(tmp_path)
    lines = (toy / "pack.yaml").read_text().splitlines()
    assert lines[15].startswith("    instructions:")
    lines[15] = broken
    (toy / "pack.yaml").write_text("\n".join(lines) + "\n")
    with pytest.raises(PackError) as caught:
        load_pack(toy)
    assert caught.value.line == line and says in caught.value.what, caught.value.one_line()


def test_a_wilson_bound_at_zero_or_all_is_exactly_zero_or_one() -> None:
    from scipy.stats import binomtest

    from pytest_jev import stats

    for n in range(1, 400):
        low, high = stats.wilson(0, n)  # type: ignore[misc]
        assert low == 0.0 and repr(low) == "0.0", (n, low)
        low, high = stats.wilson(n, n)  # type: ignore[misc]
        assert high == 1.0, (n, high)
        ref = binomtest(1, n).proportion_ci(method="wilson")
        assert stats.wilson(1, n) == pytest.approx((ref.low, ref.high), abs=1e-12)  # a real small bound stays
    assert 0 < stats.wilson(1, 10**6)[0] < 1e-6  # type: ignore[index]


# -- 19.6: one run reports every problem of a file -------------------------------------------

def _rows(toy: Path) -> list[dict]:
    return [json.loads(x) for x in (toy / "cases.jsonl").read_text().splitlines()]


def _write_rows(toy: Path, rows: list[dict]) -> None:
    (toy / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _failure(pytester: pytest.Pytester, *args: str) -> list[str]:
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    return pytester.runpytest("packs", "-p", "no:cacheprovider", *args).stdout.str().splitlines()


def test_every_problem_of_a_case_file_is_reported_in_one_run(pytester: pytest.Pytester,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _wide(monkeypatch, 200)
    toy = write_pack(pytester.path)
    rows = _rows(toy)
    rows[4]["expect"]["queue"] = "sales"  # line 5: an undeclared label
    rows[6]["id"] = rows[1]["id"]  # line 7: a duplicate id
    _write_rows(toy, rows)
    out = _failure(pytester)
    assert ('packs/toy/cases.jsonl:5: expect.queue is "sales", not one of [\'billing\', \'technical\', '
            "'unknown']; give one declared label per question (noul: true/false)") in out
    assert "packs/toy/cases.jsonl:7: duplicate case id 'toy-0002' (first on line 2); give every case a unique id" in out
    assert ("FAILED packs/toy/pack.yaml::check[spec] - expect.queue is \"sales\", not one of ['billing', "
            "'technical', 'unknown'] (cases.jsonl:5) (and 1 more problem below)") in out


def test_problems_past_the_cap_are_counted(pytester: pytest.Pytester) -> None:
    toy = write_pack(pytester.path, n=30)
    rows = _rows(toy)
    for row in rows[:25]:
        row["expect"]["urgency"] = "extreme"
    _write_rows(toy, rows)
    out = _failure(pytester)
    shown = [line for line in out if line.startswith("packs/toy/cases.jsonl:") and "extreme" in line]
    assert [line.split(":")[1] for line in shown] == [str(i) for i in range(1, 21)]
    assert "... and 5 more problems (the first 20 are shown)" in out


@pytest.mark.parametrize("xdist", [False, True])
def test_on_ci_the_short_summary_and_junit_message_are_the_headline_alone(pytester: pytest.Pytester,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         xdist: bool) -> None:
    """On CI (and with -vv) pytest prints a failure's crash message whole in its short summary:
    that message is the headline, so the problem lines are shown once, in the report above."""
    monkeypatch.setenv("CI", "true")
    toy = write_pack(pytester.path)
    rows = _rows(toy)
    for row in rows[:3]:
        row["expect"]["urgency"] = "extreme"
    _write_rows(toy, rows)
    extra = ["-n", "2"] if xdist else []
    out = _failure(pytester, "--junitxml=junit.xml", *extra)
    headline = ("expect.urgency is \"extreme\", not one of ['low', 'high', 'unknown'] (cases.jsonl:1) "
                "(and 2 more problems below)")
    failed = out.index(f"FAILED packs/toy/pack.yaml::check[spec] - {headline}")
    assert not out[failed + 1].startswith("packs/toy/cases.jsonl:")
    assert sum(line.startswith("packs/toy/cases.jsonl:2: ") for line in out) == 1
    _, cases = _junit(pytester.path / "junit.xml")
    assert cases["check[spec]"] == ("Failure", headline)
    body = (pytester.path / "junit.xml").read_text()
    assert "packs/toy/cases.jsonl:3: expect.urgency is \"extreme\"" in body
    assert f"packs/toy/cases.jsonl:1: {headline}" in _failure(pytester, "--tb=line", *extra)


def test_every_problem_of_pack_yaml_is_reported_in_one_run(pytester: pytest.Pytester) -> None:
    toy = write_pack(pytester.path)
    pack = toy / "pack.yaml"
    text = pack.read_text().replace("      billing: payments and invoices\n", "      yes: payments and invoices\n")
    text = text.replace("      technical: bugs and errors\n", "      no: bugs and errors\n")
    pack.write_text(text.replace("license: CC0-1.0", "license: ''"))
    out = _failure(pytester)
    assert any(line.startswith("packs/toy/pack.yaml:4: license: ") for line in out), out
    assert any(line.startswith("packs/toy/pack.yaml:18: questions.queue.options: the key yes ") for line in out)
    assert any(line.startswith("packs/toy/pack.yaml:19: questions.queue.options: the key no ") for line in out)


def test_gates_and_case_problems_are_reported_together(pytester: pytest.Pytester) -> None:
    toy = write_pack(pytester.path, gates="min_acuracy: 0.9\nmax_ece: 2\n")
    rows = _rows(toy)
    rows[2]["expect"]["refund"] = "yes"
    _write_rows(toy, rows)
    out = _failure(pytester)
    assert any(line.startswith("packs/toy/gates.yaml:1: unknown gate 'min_acuracy'") for line in out), out
    assert any(line.startswith("packs/toy/gates.yaml:2: max_ece: 2 is greater than the maximum of 1") for line in out)
    assert any(line.startswith('packs/toy/cases.jsonl:3: expect.refund is "yes"') for line in out)


def test_every_problem_of_a_recording_is_reported_in_one_run(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path)
    rec = pytester.path / "results/jev-1.13.0/toy.predictions.jsonl"
    lines = rec.read_text().splitlines()
    second = json.loads(lines[1])["case_id"]
    lines[1] = lines[1][:-3]  # line 2: not JSON
    doc = json.loads(lines[3])
    doc["latency_ms"] = -1  # line 4: a negative latency
    lines[3] = json.dumps(doc)
    rec.write_text("\n".join(lines) + "\n")
    out = _failure(pytester)
    assert any(line.startswith("results/jev-1.13.0/toy.predictions.jsonl:2: not valid JSON") for line in out), out
    broken = next(line for line in out if ".jsonl:2: not valid JSON" in line)
    assert " column " in broken and " at at " not in broken, broken
    assert f"; re-record the case {second!r} (--jev-record)" in broken, broken
    assert ("results/jev-1.13.0/toy.predictions.jsonl:4: bad line: latency_ms -1 is not a finite number >= 0; "
            "re-record the case (--jev-record)") in out


# -- 19.7: one unit in every count; mismatches visible to CI dashboards ------------------------

def test_every_count_names_its_unit_and_they_agree(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, wrong={2, 5})
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    full = pytester.runpytest("packs", "-p", "no:cacheprovider")
    full.stdout.fnmatch_lines([
        "12 cases: 2 mismatched, 0 invalid, 0 errors; 36 items graded, 0 missing (an item: one question of one case)",
        "*- jev mismatches: 6 items in 2 cases, valid answers that disagree with the gold label -*",
        "*14 passed, 1 skipped, 2 mismatched in*",
    ])
    assert "jev mismatches (" not in full.stdout.str()
    quiet = pytester.runpytest("packs", "-p", "no:cacheprovider", "-q")
    quiet.stdout.fnmatch_lines(["jev toy v0.1.0: accuracy 0.833 (*) against a 0.389 majority-label baseline, "
                                "ECE 0.228, 36 items, 2 cases mismatched, *"])


def _junit(path: Path) -> tuple[dict[str, object], dict[str, tuple[str, str]]]:
    """(suite counts, test name -> (result kind, message)) as a JUnit reader sees them."""
    from junitparser import JUnitXml

    xml = JUnitXml.fromfile(str(path))
    suites = list(xml) if not hasattr(xml, "testcases") else [xml]
    counts: dict[str, object] = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    cases: dict[str, tuple[str, str]] = {}
    for suite in suites:
        for key in counts:
            counts[key] = int(counts[key]) + int(getattr(suite, key) or 0)  # type: ignore[call-overload]
        for case in suite:
            kinds = [(type(r).__name__, r.message or "") for r in case.result]
            cases[case.name] = kinds[0] if kinds else ("Passed", "")
    return counts, cases


@pytest.mark.parametrize("xdist", [False, True])
def test_a_mismatch_is_a_skipped_testcase_with_its_reason_in_junit_xml(pytester: pytest.Pytester,
                                                                       xdist: bool) -> None:
    """Jenkins, GitLab and GitHub test reports count and show a testcase's <skipped> with its
    message; a property they do not show. --jev-strict makes the same cases <failure>s."""
    write_pack(pytester.path, wrong={2, 5})
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    extra = ["-n", "2"] if xdist else []
    result = pytester.runpytest("packs", "-p", "no:cacheprovider", "--junitxml=junit.xml", *extra)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*14 passed, 1 skipped, 2 mismatched*"])
    counts, cases = _junit(pytester.path / "junit.xml")
    assert counts == {"tests": 17, "failures": 0, "errors": 0, "skipped": 3}
    kind, message = cases["case[toy-0002]"]
    assert kind == "Skipped"
    assert message == ('mismatch: refund: expected true, got false (p=0.90); queue: expected "unknown", got '
                       '"billing" (p=0.90); urgency: expected "unknown", got "low" (p=0.90)')
    assert cases["case[toy-0005]"][0] == "Skipped" and cases["case[toy-0001]"] == ("Passed", "")

    strict = pytester.runpytest("packs", "-p", "no:cacheprovider", "--junitxml=strict.xml", "--jev-strict", *extra)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    counts, cases = _junit(pytester.path / "strict.xml")
    assert counts == {"tests": 17, "failures": 2, "errors": 0, "skipped": 1}
    assert cases["case[toy-0002]"][0] == "Failure" and "refund expected true got false" in cases["case[toy-0002]"][1]


def test_a_bulk_item_with_mismatches_says_how_many_in_junit_xml(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, wrong={2, 5})
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    result = pytester.runpytest("packs", "-p", "no:cacheprovider", "--junitxml=junit.xml", "--jev-case-items=none")
    result.stdout.fnmatch_lines(["*- jev mismatches: 6 items in 2 cases, *", "*1 mismatched*"])
    counts, cases = _junit(pytester.path / "junit.xml")
    assert cases["cases[bulk]"] == ("Skipped", "mismatch: 2 of 12 cases disagree with their gold labels "
                                                "(6 items); the terminal summary and --jev-json list them")
    assert counts["failures"] == 0


# -- 19.10: the baseline beside the accuracy ---------------------------------------------------

def test_the_summary_prints_the_majority_label_baseline(pytester: pytest.Pytester) -> None:
    """toy's gold: refund true on even cases (6 of 12), queue and urgency cycle their 3 labels
    (4 of 12 each): always answering the commonest label scores (6 + 4 + 4) / 36."""
    write_pack(pytester.path, wrong={2, 5})
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    full = pytester.runpytest("packs", "-p", "no:cacheprovider")
    baseline = (6 + 4 + 4) / 36
    full.stdout.fnmatch_lines(["overall * 36   0.833*", f"majority-label baseline * {baseline:.3f}"])
    quiet = pytester.runpytest("packs", "-p", "no:cacheprovider", "-q")
    quiet.stdout.fnmatch_lines([f"jev toy v0.1.0: accuracy 0.833 (*) against a {baseline:.3f} majority-label "
                                "baseline, ECE *"])
    xdist = pytester.runpytest("packs", "-p", "no:cacheprovider", "-q", "-n", "2")  # shipped from the workers
    xdist.stdout.fnmatch_lines([f"jev toy v0.1.0: accuracy 0.833 (*) against a {baseline:.3f} majority-label "
                                "baseline, ECE *"])


def test_an_accuracy_no_better_than_the_baseline_says_so(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, wrong=set(range(1, 9)))
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    out = pytester.runpytest("packs", "-p", "no:cacheprovider").stdout.str()
    assert "majority-label baseline                   0.389   no better than the baseline" in out.splitlines()


@pytest.mark.parametrize("detail, ok, said", [
    ("ece 0.314 <= 0.140", False, "ece 0.314, above the 0.140 allowed"),
    ("ece 0.114 <= 0.140", True, "ece 0.114, within the 0.140 allowed"),
    ("accuracy 0.304 >= 0.350", False, "accuracy 0.304, below the 0.350 required"),
    ("accuracy CI lower 0.694 >= 0.990", False, "accuracy CI lower 0.694, below the 0.990 required"),
    ("cost/case $0.000320 <= $0.000001", False, "cost/case $0.000320, above the $0.000001 allowed"),
    ("p95 17ms <= 25ms", True, "p95 17ms, within the 25ms allowed"),
    ("coverage 0.42 at precision >= 0.95 (threshold 0.80) >= 0.60", False,
     "coverage 0.42 at precision >= 0.95 (threshold 0.80), below the 0.60 required"),
    ("no threshold on the grid reaches precision >= 0.99", False, "no threshold on the grid reaches precision >= 0.99"),
    ("no usage data in recording", None, "no usage data in recording"),
])
def test_a_report_says_what_a_gate_found(detail: str, ok: bool | None, said: str) -> None:
    """The reports (results/<backend>/<pack>.md) print a results file's gates, whose detail is
    jevassert's rule ("ece 0.314 <= 0.140", kept for parity), as what holds or what is wrong."""
    from pytest_jev.gates import reworded

    assert reworded(detail, ok) == said


def test_no_committed_report_prints_a_failed_gate_as_its_rule() -> None:
    reports = sorted(Path(__file__).resolve().parents[1].glob("results/*/*.md"))
    failed = [line for path in reports for line in path.read_text().splitlines() if line.startswith("- **FAIL**")]
    assert failed, "the minilm column fails some of the sparrow-derived gates"
    assert not [line for line in failed if re.search(r" (<=|>=) \S+$", line)]


def test_a_key_without_its_colon_is_reported_at_the_key_not_the_line_below(tmp_path: Path) -> None:
    from pytest_jev.errors import PackError
    from pytest_jev.packs import load_pack

    toy = write_pack(tmp_path)
    lines = (toy / "pack.yaml").read_text().splitlines()
    key = next(i for i, text in enumerate(lines) if text.startswith("  ") and not text.startswith("   ")
               and text.rstrip().endswith(":") and i > 0 and lines[i + 1].startswith("    "))
    lines[key] = lines[key].rstrip()[:-1]  # `  queue:` -> `  queue`
    (toy / "pack.yaml").write_text("\n".join(lines) + "\n")
    with pytest.raises(PackError) as caught:
        load_pack(toy)
    assert caught.value.line == key + 1, caught.value.one_line()
    assert f"a key without its colon (mapping values are not allowed in this context, noticed on line {key + 2})" \
        in caught.value.what, caught.value.one_line()


def test_a_tab_that_indents_a_line_is_named(tmp_path: Path) -> None:
    from pytest_jev.errors import PackError
    from pytest_jev.packs import load_pack

    toy = write_pack(tmp_path)
    (toy / "gates.yaml").write_text("min_accuracy: 0.5\nper_question:\n\tqueue: {min_accuracy: 0.5}\n")
    with pytest.raises(PackError) as caught:
        load_pack(toy)
    assert caught.value.one_line().endswith(
        "gates.yaml:3: invalid YAML: a tab indents this line (found character that cannot start any token); "
        "indent with spaces: YAML does not allow tabs there"), caught.value.one_line()
