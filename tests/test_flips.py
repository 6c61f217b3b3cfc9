"""--jev-baseline: a recording against a baseline, item by item, as pytest runs it.

The flip counts of a small pack are counted by hand below; the statistics themselves are
tested against independent computations in test_flips_stats.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import answer_line, gold, write_pack

BASE = "results/jev-1.13.0"
NOW = "results/jev-1.14.0"


def _lines(pack_id: str, n: int, wrong: dict[int, set[str]], skip: set[int] = frozenset()) -> list[dict[str, Any]]:
    """Recording lines of cases 1..n: each answered right, except the questions `wrong[i]` names."""
    out = []
    for i in range(1, n + 1):
        if i in skip:
            continue
        cid = f"{pack_id}-{i:04d}"
        right = answer_line(cid, gold(i), right=True)
        bad = answer_line(cid, gold(i), right=False)
        answers = {q: (bad if q in wrong.get(i, ()) else right)["answers"][q] for q in right["answers"]}
        out.append({**right, "answers": answers})
    return out


def write_recording(root: Path, folder: str, lines: list[dict[str, Any]], pack_id: str = "toy",
                    model: str = "jev-1.14.0") -> Path:
    path = root / folder / f"{pack_id}.predictions.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({**line, "model": model}) + "\n" for line in lines))
    return path


ALL = {"refund", "queue", "urgency"}


def two_recordings(root: Path, gates: str | None = None, n: int = 12, base_skip: set[int] = frozenset()) -> Path:
    """The hand-counted pair. Baseline: cases 2 and 5 wholly wrong. Current: case 5 wholly wrong,
    case 7 wrong on refund only, case 9 wholly wrong. So: case 2 fixed x3, case 5 both wrong x3,
    case 7 regressed x1 (both right x2), case 9 regressed x3, 8 other cases both right x24."""
    folder = write_pack(root, n=n, gates=gates, recording=None)
    write_recording(root, BASE, _lines("toy", n, {2: ALL, 5: ALL}, skip=base_skip), model="jev-1.13.0")
    write_recording(root, NOW, _lines("toy", n, {5: ALL, 7: {"refund"}, 9: ALL}))
    return folder


def run_json(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    result = pytester.runpytest("packs", "--jev-backend=jev-1.14.0", "--jev-json=out.json", "-p", "no:randomly",
                                *args)
    doc = json.loads((pytester.path / "out.json").read_text())
    return result, doc


def test_flip_counts_are_the_hand_counted_ones(pytester: pytest.Pytester) -> None:
    two_recordings(pytester.path)
    result, doc = run_json(pytester, "--jev-baseline=jev-1.13.0")
    flips = doc["runs"][0]["flips"]
    assert (flips["items"], flips["both_right"], flips["both_wrong"], flips["fixed"], flips["regressed"]) == (
        36, 26, 3, 3, 4)
    assert flips["regression_rate"] == 4 / 30  # of the 30 items the baseline had right
    assert flips["accuracy_delta"] == (3 - 4) / 36
    assert flips["current_accuracy"] == 29 / 36 and flips["baseline_accuracy"] == 30 / 36
    assert flips["mcnemar_p"] == 1.0
    assert flips["only_current"] == [] and flips["only_baseline"] == [] and flips["unpaired_items"] == 0
    assert flips["baseline"]["name"] == "jev-1.13.0" and flips["current"]["name"] == "jev-1.14.0"
    assert flips["baseline"]["recording"] == f"{BASE}/toy.predictions.jsonl"
    regressed = [(x["case"], x["question"]) for x in flips["regressed_items"]]
    assert regressed == [("toy-0007", "refund"), ("toy-0009", "refund"), ("toy-0009", "queue"),
                         ("toy-0009", "urgency")]
    assert [x["case"] for x in flips["fixed_items"]] == ["toy-0002"] * 3
    first = flips["regressed_items"][0]
    assert first == {"case": "toy-0007", "question": "refund", "expected": False, "baseline": False,
                     "baseline_probability": 0.9, "current": True, "current_probability": 0.9,
                     "state": '{"message": "message number 7"}'}
    ci = flips["accuracy_delta_ci"]
    assert ci[0] < flips["accuracy_delta"] < ci[1]
    out = result.stdout.str()
    line = (f"jev flips toy vs jev-1.13.0: 36 items, 4 regressed, 3 fixed, accuracy -2.8 pp "
            f"(95% CI {100 * ci[0]:+.1f} to {100 * ci[1]:+.1f}), exact McNemar p = 1.000")
    assert line in out
    assert "paired bootstrap over 12 cases (1000 resamples, seed 0)" in out
    assert "jev regressions: 4 items in 2 cases, right in the baseline, wrong now" in out  # units named
    assert ('packs/toy/pack.yaml::case[toy-0007] refund: expected false, baseline false (p=0.90), now true '
            '(p=0.90) | {"message": "message number 7"}') in out  # its node id, as a mismatch line gives it
    assert result.parseoutcomes() == {"passed": 12, "skipped": 1, "mismatched": 1, "regressed": 2}  # 5 M; 7, 9 R


def test_without_a_baseline_nothing_changes(pytester: pytest.Pytester) -> None:
    two_recordings(pytester.path, gates="max_regressions: 0\n")
    result, doc = run_json(pytester)
    assert "flips" not in doc["runs"][0]
    assert "jev flips" not in result.stdout.str()
    assert not any("check[baseline]" in line for line in result.stdout.lines)
    assert result.parseoutcomes() == {"passed": 11, "mismatched": 3, "skipped": 2}


def test_a_regressed_case_is_red_under_strict_and_marked_in_verbose_output(pytester: pytest.Pytester) -> None:
    two_recordings(pytester.path)
    result = pytester.runpytest("packs", "--jev-backend=jev-1.14.0", "--jev-baseline=jev-1.13.0", "-v")
    assert re.search(r"case\[toy-0009\] REGRESSED", result.stdout.str())
    strict = pytester.runpytest("packs", "--jev-backend=jev-1.14.0", "--jev-baseline=jev-1.13.0", "--jev-strict")
    assert strict.parseoutcomes() == {"passed": 12, "skipped": 1, "failed": 3}
    assert "regressed: case toy-0007 refund: expected false, baseline false (p=0.90), now true (p=0.90)" in (
        strict.stdout.str())


def test_cases_only_one_recording_has_are_counted_and_named(pytester: pytest.Pytester) -> None:
    two_recordings(pytester.path, base_skip={11, 12})
    # an error line in the baseline: that case's items are unpaired, not dropped
    path = pytester.path / BASE / "toy.predictions.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    lines[0] = {**lines[0], "answers": None, "error": "timeout"}
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result, doc = run_json(pytester, "--jev-baseline=jev-1.13.0")
    flips = doc["runs"][0]["flips"]
    assert flips["only_current"] == ["toy-0011", "toy-0012"] and flips["only_baseline"] == []
    assert flips["unpaired_items"] == 3 and flips["items"] == 36 - 3 - 6
    out = result.stdout.str()
    assert "2 case(s) only in the current recording, not compared: toy-0011, toy-0012" in out
    assert "3 item(s) answered usably by one recording only, not compared" in out
    assert "check[baseline] PASSED" in pytester.runpytest("packs", "--jev-backend=jev-1.14.0",
                                                          "--jev-baseline=jev-1.13.0", "-v").stdout.str()


def test_the_baseline_may_be_a_recording_file_or_folder(pytester: pytest.Pytester) -> None:
    two_recordings(pytester.path)
    for given in (f"{BASE}/toy.predictions.jsonl", BASE):
        _, doc = run_json(pytester, f"--jev-baseline={given}")
        flips = doc["runs"][0]["flips"]
        assert (flips["fixed"], flips["regressed"]) == (3, 4)
        assert flips["baseline"]["name"] == f"{BASE}/toy.predictions.jsonl"


def test_a_missing_baseline_fails_check_baseline_in_one_line(pytester: pytest.Pytester) -> None:
    two_recordings(pytester.path, gates="max_regressions: 5\n")
    result = pytester.runpytest("packs", "--jev-backend=jev-1.14.0", "--jev-baseline=mock", "-rs")
    assert result.parseoutcomes() == {"passed": 11, "mismatched": 3, "failed": 1, "skipped": 2}
    out = result.stdout.str()
    shown = out.replace(str(pytester.path) + "/", "")
    assert ("baseline: no recording for pack 'toy': results/mock/toy.predictions.jsonl does not exist, and no "
            "folder of results has a backend.json naming backend 'mock'; name one with --jev-baseline") in shown
    assert "gate max_regressions not computable: the baseline cannot be compared with: see check[baseline]" in out
    assert "Traceback" not in out


def test_a_baseline_recorded_for_other_wording_is_refused_as_replay_refuses_it(pytester: pytest.Pytester) -> None:
    two_recordings(pytester.path, gates="max_regressions: 5\n")
    path = pytester.path / BASE / "toy.predictions.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    drift = {"rubric_fingerprint": "sha256:" + "0" * 64,
             "question_fingerprints": {"refund": "sha256:" + "1" * 64, "queue": "sha256:x", "urgency": "sha256:y"}}
    path.write_text("".join(json.dumps({**x, **drift}) + "\n" for x in lines))
    result = pytester.runpytest("packs", "--jev-backend=jev-1.14.0", "--jev-baseline=jev-1.13.0", "-rs")
    out = result.stdout.str()
    assert result.parseoutcomes() == {"passed": 11, "mismatched": 3, "failed": 1, "skipped": 2}
    assert "baseline refused: the recording was made for other wording (rubric drift)" in out
    assert "rubric drift: question 'refund' is worded differently from the recording" in out
    assert "jev flips" not in out


def test_a_baseline_whose_case_states_changed_is_refused_as_replay_refuses_it(pytester: pytest.Pytester) -> None:
    """Issue 18: a line whose state fingerprint is not its case's state's answers a message the
    case no longer has. Replay refuses such a line of its own recording; a baseline with one is
    refused whole, through the same evaluate.refusal (no flip report is built on it)."""
    two_recordings(pytester.path, gates="max_regressions: 5\n")
    path = pytester.path / BASE / "toy.predictions.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    lines[2]["state_fingerprint"] = "sha256:" + "0" * 64  # toy-0003, recorded for another message
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = pytester.runpytest("packs", "--jev-backend=jev-1.14.0", "--jev-baseline=jev-1.13.0", "-rfs")
    out = result.stdout.str()
    assert result.parseoutcomes() == {"passed": 11, "mismatched": 3, "failed": 1, "skipped": 2}
    result.stdout.fnmatch_lines(["*FAILED packs/toy/pack.yaml::check[[]baseline[]]*"])
    assert "baseline refused: the recording answers states its cases no longer have" in out
    assert (f"{BASE}/toy.predictions.jsonl: 1 line(s) answer a state their case no longer has "
            "(first: line 3, case toy-0003); re-record those cases") in out
    assert "jev flips" not in out and "Traceback" not in out
    # the same line in the recording replay grades fails that case alone, the rest graded
    shutil.copy(path, pytester.path / NOW / "toy.predictions.jsonl")
    own = pytester.runpytest("packs", "--jev-backend=jev-1.14.0")
    own.stdout.fnmatch_lines(["*1 line(s) answer a state their case no longer has (first: line 3, case toy-0003)*"])
    assert "case[toy-0003]" in own.stdout.str() and own.parseoutcomes()["failed"] == 2


def test_a_refusal_replay_adds_applies_to_the_baseline_too(pytester: pytest.Pytester) -> None:
    """The baseline is read, graded and refused through evaluate.refusal, as the recording
    replay grades: a refusal added there (issue 18's changed case states, say) refuses it too."""
    two_recordings(pytester.path)
    pytester.makeconftest("""
import pytest_jev.evaluate as evaluate
def pytest_configure(config):
    original = evaluate.refusal
    def refusal(prep, **options):
        if "1.13" in prep.shown_path:
            return "check[states]", "the case states changed", ("states changed: toy-0001",)
        return original(prep, **options)
    evaluate.refusal = refusal
""")
    result = pytester.runpytest_subprocess("packs", "--jev-backend=jev-1.14.0", "--jev-baseline=jev-1.13.0")
    out = result.stdout.str()
    assert "baseline refused: the case states changed" in out and "states changed: toy-0001" in out
    assert "jev flips" not in out


def test_a_regressed_item_comes_first_in_its_cases_reason_and_strict_headline(pytester: pytest.Pytester,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Case 5: refund wrong in both, queue and urgency regressed. What got worse leads: the skip
    reason (what -v and JUnit show, cut to the width) and, under --jev-strict, the headline."""
    monkeypatch.setenv("COLUMNS", "200")
    write_pack(pytester.path, n=6, gates=None, recording=None)
    write_recording(pytester.path, BASE, _lines("toy", 6, {5: {"refund"}}), model="jev-1.13.0")
    write_recording(pytester.path, NOW, _lines("toy", 6, {5: ALL}))
    args = ("packs", "--jev-backend=jev-1.14.0", "--jev-baseline=jev-1.13.0", "-p", "no:randomly")
    verbose = pytester.runpytest(*args, "-v")
    verbose.stdout.fnmatch_lines(["*case[[]toy-0005[]] REGRESSED (mismatch: queue: *, regressed (right in the "
                                  "baseline)*"])
    strict = pytester.runpytest(*args, "--jev-strict")
    strict.stdout.fnmatch_lines(["FAILED packs/toy/pack.yaml::case[[]toy-0005[]] - regressed: case toy-0005 queue:*"])


def test_a_regressed_case_is_a_skipped_testcase_that_says_so_in_junit_xml(pytester: pytest.Pytester) -> None:
    """A regression, like a mismatch, reaches CI dashboards: a <skipped> testcase whose message
    marks the regressed item (issue 19.7 with issue 20's flips)."""
    from junitparser import JUnitXml

    two_recordings(pytester.path)
    pytester.runpytest("packs", "--jev-backend=jev-1.14.0", "--jev-baseline=jev-1.13.0", "--junitxml=out.xml",
                       "-p", "no:randomly")
    said = {case.name: [(type(r).__name__, r.message or "") for r in case.result]
            for suite in JUnitXml.fromfile(str(pytester.path / "out.xml")) for case in suite}
    kind, message = said["case[toy-0007]"][0]
    assert kind == "Skipped" and message.startswith("mismatch: refund: expected false, got true (p=0.90), regressed "
                                                    "(right in the baseline)")
    kind, message = said["case[toy-0005]"][0]  # wrong in both: a mismatch, no regression
    assert kind == "Skipped" and "regressed" not in message


@pytest.mark.parametrize(("gates", "outcome", "detail"), [
    ("max_regressions: 3\n", "failed", "4 regressions, above the 3 allowed"),
    ("max_regressions: 4\n", "passed", None),
    ("max_regression_rate: 0.1\n", "failed", "regression rate 0.133 (4 regressed of 30 right in the baseline), "
                                             "above the 0.100 allowed"),
    ("max_regression_rate: 0.2\n", "passed", None),
])
def test_regression_gates_are_red_or_green(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, gates: str,
                                           outcome: str, detail: str | None) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the short summary whole
    monkeypatch.delenv("CI", raising=False)
    two_recordings(pytester.path, gates=gates)
    result = pytester.runpytest("packs", "--jev-backend=jev-1.14.0", "--jev-baseline=jev-1.13.0")
    assert result.parseoutcomes().get(outcome, 0) >= 1
    out = result.stdout.str()
    if detail is not None:  # what is wrong, first: in the failure and the short summary
        assert detail in out.splitlines()
        assert f"FAILED packs/toy/pack.yaml::gate[{gates.split(':')[0]}] - {detail}" in out
        assert "regressed: case toy-0009 urgency" in out  # the failing gate lists the regressed items
        assert "  baseline results/jev-1.13.0/toy.predictions.jsonl (jev-1.13.0)" in out.splitlines()  # against what
        assert result.ret == pytest.ExitCode.TESTS_FAILED
    else:
        assert result.ret == pytest.ExitCode.OK


def _drop(root: Path) -> None:
    """A current recording wrong on 6 of 12 cases the baseline has right: a real drop."""
    write_pack(root, n=12, gates=None, recording=None)
    write_recording(root, BASE, _lines("toy", 12, {}), model="jev-1.13.0")
    write_recording(root, NOW, _lines("toy", 12, dict.fromkeys((1, 3, 4, 6, 8, 10), ALL)))


@pytest.mark.parametrize(("floor", "outcome"), [(-0.1, "failed"), (-0.9, "passed")])
def test_min_accuracy_delta_fails_only_when_the_whole_interval_is_below_it(pytester: pytest.Pytester, floor: float,
                                                                            outcome: str) -> None:
    _drop(pytester.path)
    (pytester.path / "packs/toy/gates.yaml").write_text(f"min_accuracy_delta: {floor}\n")
    result, doc = run_json(pytester, "--jev-baseline=jev-1.13.0")
    ci = doc["runs"][0]["flips"]["accuracy_delta_ci"]
    assert (ci[1] < floor) == (outcome == "failed")
    gate = doc["runs"][0]["gates"][0]
    assert gate["gate"] == "min_accuracy_delta" and gate["ok"] is (outcome == "passed")
    assert re.search(rf"accuracy difference -0.500 \(95% CI {ci[0]:+.3f} to {ci[1]:+.3f}\): CI upper", gate["detail"])
    assert result.parseoutcomes()[outcome] >= 1
    said = (f"the whole interval is below the {floor:.3f} required (its upper end {ci[1]:.3f})" if outcome == "failed"
            else f"not wholly below the {floor:.3f} required")  # what is wrong, or what holds
    assert f"accuracy difference -0.500 (95% CI {ci[0]:+.3f} to {ci[1]:+.3f}): {said}" in result.stdout.str()


def test_flip_gates_are_skipped_with_the_reason_without_a_baseline(pytester: pytest.Pytester) -> None:
    _drop(pytester.path)
    (pytester.path / "packs/toy/gates.yaml").write_text(
        "max_regressions: 0\nmax_regression_rate: 0\nmin_accuracy_delta: 0\n")
    result = pytester.runpytest("packs", "--jev-backend=jev-1.14.0", "-rs")
    assert result.parseoutcomes() == {"passed": 8, "mismatched": 6, "skipped": 4}
    out = result.stdout.str()
    for line, gate in enumerate(("max_regressions", "max_regression_rate", "min_accuracy_delta"), 1):
        assert (f"packs/toy/gates.yaml:{line}: gate {gate} not computable: no baseline to compare with "
                "(pass --jev-baseline NAME|PATH)") in out
    quiet = pytester.runpytest("packs", "--jev-backend=jev-1.14.0", "-q")  # the -q line counts them apart
    quiet.stdout.fnmatch_lines(["jev toy v0.1.0: *, 3 gates, 0 failed, 3 skipped (*)"])
    off = pytester.runpytest("packs", "--jev-backend=jev-1.14.0", "--jev-baseline=jev-1.13.0", "--jev-bootstrap=0",
                             "-rs")
    assert "gate min_accuracy_delta not computable: bootstrap disabled (--jev-bootstrap 0)" in off.stdout.str()


def test_bad_flip_gates_are_refused_at_their_line(pytester: pytest.Pytester) -> None:
    _drop(pytester.path)
    (pytester.path / "packs/toy/gates.yaml").write_text("max_regressions: 2\nmax_regression_rate: 1.5\n")
    result = pytester.runpytest("packs", "--jev-backend=jev-1.14.0")
    assert "packs/toy/gates.yaml:2" in result.stdout.str() and "max_regression_rate" in result.stdout.str()
    assert result.parseoutcomes() == {"failed": 1}


def test_two_workers_give_what_one_process_gives(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    two_recordings(pytester.path, gates="max_regressions: 3\nmin_accuracy_delta: -0.5\n")
    write_pack(pytester.path, pack_id="other", n=20, gates=None, recording=None)
    write_recording(pytester.path, BASE, _lines("other", 20, {3: ALL}), pack_id="other", model="jev-1.13.0")
    write_recording(pytester.path, NOW, _lines("other", 20, {4: {"queue"}}), pack_id="other")
    seen = []
    for i, extra in enumerate((["-n", "0"], ["-n", "2"])):
        result = pytester.runpytest_subprocess("packs", "--jev-backend=jev-1.14.0", "--jev-baseline=jev-1.13.0",
                                               f"--jev-json=run{i}.json", "-p", "no:cacheprovider", *extra)
        out = result.stdout.str()
        flips = out[out.index("jev flips: each recording"):out.rindex("jev: metrics of")]
        runs = json.loads((pytester.path / f"run{i}.json").read_text())["runs"]
        seen.append((result.parseoutcomes(), flips, [run["flips"] for run in runs], [run["gates"] for run in runs]))
    assert seen[0] == seen[1]
    assert seen[0][0] == {"passed": 35, "failed": 1, "skipped": 2, "mismatched": 1, "regressed": 3}
    assert [f["pack"] for f in seen[0][2]] == ["other", "toy"]


# -- the committed registry, and the jev-packs commands --------------------------------------

REPO = Path(__file__).resolve().parents[1]
MINILM, SPARROW = "minilm-l6-int8-zeroshot-1.0.0", "sparrow-0.2.0-nano-general-v1.1"


def copy_registry(root: Path, *packs: str) -> None:
    for pack in packs:
        shutil.copytree(REPO / "packs" / pack, root / "packs" / pack)
    for folder in (MINILM, SPARROW):
        (root / "results" / folder).mkdir(parents=True)
        shutil.copy(REPO / "results" / folder / "backend.json", root / "results" / folder)
        for pack in packs:
            shutil.copy(REPO / "results" / folder / f"{pack}.predictions.jsonl", root / "results" / folder)


def test_a_regression_gate_on_a_committed_pack_goes_red(pytester: pytest.Pytester) -> None:
    """MiniLM against the sparrow baseline on moderation: 259 items regressed, 236 fixed; a gate of
    at most 100 regressions is red and lists them; the difference's interval (-4.1 to +1.3 pp) is
    not wholly below -5 pp, so that gate stays green."""
    copy_registry(pytester.path, "moderation")
    gates = pytester.path / "packs/moderation/gates.yaml"
    gates.write_text(gates.read_text() + "max_regressions: 100\nmin_accuracy_delta: -0.05\n")
    result = pytester.runpytest("packs", f"--jev-backend={MINILM}", f"--jev-baseline={SPARROW}", "-k", "gate",
                                "-p", "no:randomly", "--jev-json=out.json")
    out = result.stdout.str()
    gates = {g["gate"]: g for g in json.loads((pytester.path / "out.json").read_text())["runs"][0]["gates"]}
    assert gates["max_regressions"]["ok"] is False and gates["min_accuracy_delta"]["ok"] is True
    assert "259 regressions, above the 100 allowed" in out
    assert gates["max_regressions"]["detail"] == "259 regressed <= 100"  # jevassert's form, kept in JSON
    assert "FAILED packs/moderation/pack.yaml::gate[max_regressions]" in out
    assert '  regressed: case md-0001 action: expected "allow", baseline "allow" (p=0.35), now "remove" (p=0.76)' in out
    assert "... and 239 more (the summary lists them)" in out
    assert ("jev flips moderation vs sparrow-0.2.0-nano-general-v1.1: 1725 items, 259 regressed, 236 fixed, "
            "accuracy -1.3 pp (95% CI -4.1 to +1.3), exact McNemar p = 0.323") in out
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_jev_packs_flips_writes_the_report_as_markdown(pytester: pytest.Pytester) -> None:
    two_recordings(pytester.path)
    # a hostile case: its state reaches a table cell as text, never as markup or a new column
    path = pytester.path / "packs/toy/cases.jsonl"
    cases = [json.loads(x) for x in path.read_text().splitlines()]
    cases[8]["state"]["message"] = "a | b <script>x</script>"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    done = subprocess.run([sys.executable, "-m", "pytest_jev", "flips", "jev-1.14.0", "jev-1.13.0", "--pack",
                           "packs/toy"], cwd=pytester.path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith("### jev flips: toy, jev-1.14.0 against jev-1.13.0\n")
    assert "`jev flips toy vs jev-1.13.0: 36 items, 4 regressed, 3 fixed, accuracy -2.8 pp (95% CI" in text
    assert "| **now right** | 26 both right | 3 fixed |\n| **now wrong** | 4 regressed | 3 both wrong |" in text
    assert "<details><summary>Regressed items (4)</summary>" in text
    assert '| toy-0009 | queue | "billing" | "billing" (0.90) | "technical" (0.90) |' in text
    assert "a \\| b &lt;script&gt;x&lt;/script&gt;" in text and "<script>" not in text
    missing = subprocess.run([sys.executable, "-m", "pytest_jev", "flips", "jev-1.14.0", "jev-0.1.0", "--pack",
                              "packs/toy"], cwd=pytester.path, capture_output=True, text=True, check=False)
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith("jev-packs: baseline: no recording for pack 'toy'")
    assert "name one with B:" in missing.stderr and len(missing.stderr.splitlines()) == 1


def test_jev_packs_power_says_what_a_pack_can_tell_and_how_many_cases_a_difference_needs() -> None:
    from pytest_jev.stats import effective_pairs, mcnemar_power

    done = subprocess.run([sys.executable, "-m", "pytest_jev", "power", "packs/support-triage", "--difference", "0.02"],
                          cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "support-triage: 520 cases x 3 questions = 1,560 items"
    assert "discordance 0.413 between minilm-l6-int8-zeroshot-1.0.0 and sparrow-0.2.0-nano-general-v1.1" in lines[1]
    assert "it tells accuracy differences of 4.6 pp or more from none" in lines[2]
    needed = int(re.search(r"it needs ([0-9,]+) cases", lines[3]).group(1).replace(",", ""))  # type: ignore[union-attr]
    deff = float(re.search(r"design effect ([0-9.]+)", lines[1]).group(1))  # type: ignore[union-attr]
    psi = 644 / 1560  # the items MiniLM and sparrow answer differently (results/flips: 246 + 398)
    assert deff == 1.0
    assert mcnemar_power(effective_pairs(needed, 3, 1.0), psi, 0.02) >= 0.80
    assert mcnemar_power(effective_pairs(needed - 1, 3, 1.0), psi, 0.02) < 0.80


@pytest.mark.parametrize(("given", "said"), [
    ("2", "2 is not a fraction between 0 and 1 (0.02 = 2 points); for 2 points give 0.02"),
    ("0", "0 is not a fraction between 0 and 1 (0.02 = 2 points)"),
    ("two", "'two' is not a number; give a fraction (0.02 = 2 points)"),
])
def test_jev_packs_power_refuses_a_difference_that_is_no_fraction(given: str, said: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest_jev", "power", "packs/support-triage", "--difference", given],
                          cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == f"jev-packs power: error: argument --difference: {said}"
    assert "Traceback" not in done.stderr


def test_a_pack_with_one_backend_gets_the_stated_default(tmp_path: Path) -> None:
    write_pack(tmp_path, n=40, gates=None, recording=None)
    done = subprocess.run([sys.executable, "-m", "pytest_jev", "power", "packs/toy", "--root", "."], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "discordance 0.20 assumed" in done.stdout and "design effect 1" in done.stdout


def test_refresh_check_finds_a_stale_missing_or_orphaned_flip_report(tmp_path: Path) -> None:
    from pytest_jev.registry import flip_files

    copy_registry(tmp_path, "semantic-drift")
    for folder in (MINILM, SPARROW):  # the evidence folder the gates name holds results the check reads
        for name in ("semantic-drift.heldout.json",):
            shutil.copy(REPO / "results" / folder / name, tmp_path / "results" / folder)
    assert flip_files.stale_problem(tmp_path) == (
        f"results/flips/{MINILM}/semantic-drift.heldout.json: missing; regenerate them with `jev-packs refresh`")
    written = flip_files.write(tmp_path)
    assert [p.name for p in written] == ["semantic-drift.heldout.json", "semantic-drift.heldout.md"]
    assert flip_files.stale_problem(tmp_path) is None
    assert written[0].read_bytes() == (REPO / f"results/flips/{MINILM}/semantic-drift.heldout.json").read_bytes()
    report = written[0]
    report.write_text(report.read_text().replace('"regressed": 15', '"regressed": 14'))
    assert "semantic-drift.heldout.json: stale" in str(flip_files.stale_problem(tmp_path))
    flip_files.write(tmp_path)
    orphan = tmp_path / "results/flips/someone/semantic-drift.heldout.json"
    orphan.parent.mkdir()
    orphan.write_text("{}")
    assert "someone/semantic-drift.heldout.json: no published comparison makes it any more" in str(
        flip_files.stale_problem(tmp_path))
    flip_files.write(tmp_path)
    assert not orphan.exists() and flip_files.stale_problem(tmp_path) is None


def test_the_readme_example_is_what_the_committed_recordings_give() -> None:
    from dataclasses import replace

    from pytest_jev.formats.flips_json import FlipReport
    from pytest_jev.registry.power import split_powers
    from pytest_jev.report.flip_text import flip_sentence, power_words
    from pytest_jev.stats import cases_needed

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    report = FlipReport.read(REPO / "results/flips" / MINILM / "moderation.json")
    named = replace(report, baseline=replace(report.baseline, name="sparrow"))  # as --jev-baseline=sparrow names it
    assert flip_sentence(named) in readme
    assert f"  power: {power_words(report.power)}" in readme
    assert report.regressed_items[0].case == "md-0001" and "packs/moderation/pack.yaml::case[md-0001] action:" in readme
    regressed_cases = len({x.case for x in report.regressed_items})
    assert (f" jev regressions: {len(report.regressed_items)} items in {regressed_cases} cases, right in the "
            "baseline, wrong now ") in readme
    from pytest_jev.packs import load_pack

    ((_, power, _),) = split_powers(load_pack(REPO / "packs/support-triage"), REPO)
    assert power.detectable_difference is not None
    needed = cases_needed(0.02, power.discordance, power.items_per_case, power.design_effect)
    assert (f"support-triage, 520 cases, tells differences of {100 * power.detectable_difference:.1f} points or "
            f"more; 2 points need\n{needed:,} cases") in readme


def test_a_replay_without_a_baseline_loads_neither_scipy_nor_the_flip_report(pytester: pytest.Pytester) -> None:
    two_recordings(pytester.path)
    pytester.makeconftest("""
import sys
def pytest_sessionfinish(session):
    loaded = [m for m in ("scipy", "pytest_jev.flips", "pytest_jev.formats.flips_json", "pytest_jev.report.flip_text",
                          "pytest_jev.fixture.baseline") if m in sys.modules]
    print("LOADED", loaded)
""")
    plain = pytester.runpytest_subprocess("packs", "--jev-backend=jev-1.14.0", "-s")
    assert "LOADED []" in plain.stdout.str()
    compared = pytester.runpytest_subprocess("packs", "--jev-backend=jev-1.14.0", "--jev-baseline=jev-1.13.0", "-s")
    assert "LOADED ['scipy', 'pytest_jev.flips', 'pytest_jev.formats.flips_json'," in compared.stdout.str()
