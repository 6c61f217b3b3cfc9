"""The evaluation protocol, black box: frozen splits, rubric drift, tune then held-out with its
guards, reports and their merge, and the statistics checked against scipy and by hand."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packfiles import only_injected_failures, write_pack, write_split_pack

from pytest_jev import stats
from pytest_jev.formats.protocol_json import Thresholds
from pytest_jev.protocol import selective
from pytest_jev.protocol.samples import Answered, Sample
from pytest_jev.protocol.thresholds import LeakageError, write_thresholds

MOCK = ["--jev-backend=mock", "-p", "no:cacheprovider"]


@pytest.fixture
def split_pack(pytester: pytest.Pytester) -> Path:
    folder = write_split_pack(pytester.path / "packs")
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest("packs", "--jev-record", *MOCK)
    assert result.ret in (0, 1), result.stdout.str()
    return folder


def out(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


def test_split_node_ids_show_the_split(pytester: pytest.Pytester, split_pack: Path) -> None:
    ids = pytester.runpytest("packs", "--collect-only", "-q", *MOCK).stdout.str()
    assert "packs/split-pack/pack.yaml::tune::case[s-vi-001]" in ids
    assert "packs/split-pack/pack.yaml::heldout::check[split]" in ids
    only = pytester.runpytest("packs", "--collect-only", "-q", "--jev-split", "heldout", *MOCK).stdout.str()
    assert "::tune::" not in only and "::heldout::case[s-en-" in only
    missing = pytester.runpytest("packs", "--jev-split", "dev", *MOCK)
    missing.stdout.fnmatch_lines(["*pack split-pack has no split 'dev' (it has: tune, heldout)*"])


def test_a_case_of_a_split_is_located_in_the_split_file(pytester: pytest.Pytester, split_pack: Path) -> None:
    rec = pytester.path / "results/mock-0/split-pack.predictions.jsonl"
    rec.write_text("".join(line for line in rec.read_text().splitlines(keepends=True) if '"s-en-020"' not in line))
    result = pytester.runpytest("packs", "--jev-replay", "-rf", *MOCK)
    lines = (split_pack / "tune.jsonl").read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if '"s-en-020"' in text)
    result.stdout.fnmatch_lines([f"*packs/split-pack/tune.jsonl:{line}: case s-en-020: *not in the recording*"])
    assert "cases.jsonl" not in result.stdout.str()


def test_a_protocol_run_over_a_mixed_folder_skips_the_packs_it_does_not_apply_to(pytester: pytest.Pytester,
                                                                               split_pack: Path) -> None:
    write_pack(pytester.path / "packs")  # no splits
    write_split_pack(pytester.path / "packs", 6, pack_id="drift-like", splits=("heldout",))
    assert pytester.runpytest("packs", "--jev-record", *MOCK).ret in (0, 1)
    tuned = pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", "-rs", *MOCK)
    assert tuned.ret == 0, out(tuned)
    tuned.stdout.fnmatch_lines_random([
        "SKIPPED * --jev-tune: tiny-pack declares no splits, so it has no tune split to run",
        "SKIPPED * --jev-tune: drift-like has no tune split: its held-out threshold belongs to the pack "
        "(pack.yaml thresholds); run it with --jev-heldout"])
    assert "::case[" not in "".join(line for line in tuned.stdout.lines if "tiny-pack" in line)
    held = pytester.runpytest("packs", "--jev-heldout", "-rs", *MOCK)
    only_injected_failures(held)
    assert (pytester.path / "results/mock-0/drift-like.report.heldout.json").is_file()
    held.stdout.fnmatch_lines(["SKIPPED * --jev-heldout: tiny-pack declares no splits, so it has no heldout "
                               "split to run"])


def test_a_changed_frozen_split_is_refused_before_anything_is_graded(pytester: pytest.Pytester,
                                                                     split_pack: Path) -> None:
    heldout = split_pack / "heldout.jsonl"
    heldout.write_text(heldout.read_text().replace("[vi 25]", "[vi 25!]"))
    result = pytester.runpytest("packs", "--jev-split", "heldout", "-rs", *MOCK)
    text = out(result)
    assert "Traceback" not in text
    result.stdout.fnmatch_lines([
        "*heldout.jsonl: frozen split 'heldout' changed: Expected sha256 * (24 lines), Got * (24 lines); a frozen "
        "split is never edited: publish a new pack version*"])
    assert result.parseoutcomes()["failed"] == 1  # check[split] only: the rest is refused, not graded
    result.stdout.fnmatch_lines(
        ["SKIPPED [[]*[]] *refused: the frozen split changed: see *::heldout::check[[]split[]]"])


def test_rubric_drift_names_each_changed_question(pytester: pytest.Pytester, split_pack: Path) -> None:
    assert pytester.runpytest("packs", *MOCK).ret == 0  # fingerprints match: check[rubric] passes
    pack_yaml = split_pack / "pack.yaml"
    pack_yaml.write_text(pack_yaml.read_text().replace("Does `message` ask for money back?",
                                                       "Does `message` ask for a refund?"))
    result = pytester.runpytest("packs", "--jev-split", "tune", "-rs", *MOCK)
    result.stdout.fnmatch_lines([
        "*rubric drift: question 'refund' is worded differently from the recording (*mock-0/split-pack."
        "predictions.jsonl:1); re-record with --jev-record=all, or restore the wording*"])
    assert "question 'queue'" not in out(result)
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1 and "passed" in outcomes  # check[rubric] red; cases and gates refused
    result.stdout.fnmatch_lines(["*refused: the recording was made for other wording (rubric drift)*"])


def test_older_lines_are_compared_through_the_request_fingerprint(pytester: pytest.Pytester,
                                                                  split_pack: Path) -> None:
    rec = pytester.path / "results/mock-0/split-pack.predictions.jsonl"
    lines = [json.loads(x) for x in rec.read_text().splitlines()]
    for line in lines:
        del line["rubric_fingerprint"], line["question_fingerprints"]
    rec.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert pytester.runpytest("packs", "--jev-split", "tune", *MOCK).ret == 0
    pack_yaml = split_pack / "pack.yaml"
    pack_yaml.write_text(pack_yaml.read_text().replace("Charges, refunds", "Charges, refunds, fees"))
    result = pytester.runpytest("packs", "--jev-split", "tune", *MOCK)
    result.stdout.fnmatch_lines(["*rubric drift: 24 line(s) were recorded for another request*carry no question "
                                 "fingerprints to say which*"])


def test_a_recording_without_fingerprints_skips_the_check_never_passes_it(pytester: pytest.Pytester,
                                                                           toy: Path) -> None:
    result = pytester.runpytest("packs", "-rs", "-k", "rubric")
    result.assert_outcomes(skipped=1, deselected=16)
    result.stdout.fnmatch_lines(["*rubric drift not checked: *carries no rubric or request fingerprint*"])


def test_a_pinned_rubric_must_match_the_questions(pytester: pytest.Pytester, split_pack: Path) -> None:
    pack_yaml = split_pack / "pack.yaml"
    pack_yaml.write_text(pack_yaml.read_text() + "rubric: sha256:" + "0" * 64 + "\n")
    result = pytester.runpytest("packs", "-k", "spec", *MOCK)
    result.stdout.fnmatch_lines(["*pack.yaml: rubric pinned as sha256:000*, but the questions as written give "
                                 "sha256:*: their wording changed*"])


def report(pytester: pytest.Pytester, split: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((pytester.path / f"results/mock-0/split-pack.report.{split}.json").read_text())
    return doc


def test_tune_then_heldout(pytester: pytest.Pytester, split_pack: Path) -> None:
    tuned = pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", *MOCK)
    assert tuned.ret == 0, out(tuned)
    frozen = json.loads((pytester.path / "results/mock-0/split-pack.thresholds.json").read_text())
    assert frozen["split"] == "tune" and frozen["mode"] == "mock" and frozen["backend"] == "mock-0"
    assert set(frozen["thresholds"]["refund"]) == {"vi", "en"}  # per locale, never blended
    assert frozen["dataset_sha256"] == report(pytester, "tune")["dataset_sha256"]
    for entry in frozen["thresholds"]["queue"].values():
        assert entry["status"] in ("ok", "target-not-reached")
        assert (entry["threshold"] is None) == (entry["status"] == "target-not-reached")
    held = pytester.runpytest("packs", "--jev-heldout", *MOCK)
    only_injected_failures(held)
    held_report = report(pytester, "heldout")
    assert held_report["thresholds_source"] == "frozen thresholds.json of the tune run"
    assert held_report["note"].startswith("mock: ")
    for locale, entry in held_report["questions"]["refund"]["locales"].items():
        tuned_t = frozen["thresholds"]["refund"][locale]["threshold"]
        assert entry["threshold"] == tuned_t
    results = (pytester.path / "results/mock-0/split-pack.results.heldout.jsonl").read_text().splitlines()
    assert len(results) == 24 and "[vi" not in "".join(results)  # per-sample answers, no state content
    assert not any("thresholds" in str(p.name) and p.stat().st_mtime > 0 and "heldout" in p.name
                   for p in (pytester.path / "results/mock-0").iterdir())


@pytest.mark.parametrize("field, value", [("seed", 7), ("backend", "other"), ("mode", "live"),
                                          ("rubric", "sha256:" + "1" * 64), ("dataset_sha256", "0" * 64),
                                          ("served_models", ["someone-else"]), ("protocol_version", 99)])
def test_heldout_refuses_thresholds_frozen_under_other_conditions(pytester: pytest.Pytester, split_pack: Path,
                                                                  field: str, value: Any) -> None:
    assert pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", *MOCK).ret == 0
    path = pytester.path / "results/mock-0/split-pack.thresholds.json"
    frozen = json.loads(path.read_text())
    frozen[field] = value
    path.write_text(json.dumps(frozen))
    result = pytester.runpytest("packs", "--jev-heldout", *MOCK)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # fnmatch would read the brackets of a JSON list as a character class: match the text literally
    assert re.search(re.escape(f"split-pack.thresholds.json: {field} is {json.dumps(value)} in the frozen thresholds"
                               " but ") + r".* in this held-out run", out(result))
    assert "Traceback" not in out(result)
    assert not (pytester.path / "results/mock-0/split-pack.report.heldout.json").exists()


def test_heldout_without_a_tune_run_is_refused(pytester: pytest.Pytester, split_pack: Path) -> None:
    result = pytester.runpytest("packs", "--jev-heldout", *MOCK)
    result.stdout.fnmatch_lines(["*split-pack.thresholds.json: no frozen thresholds: the tune split has not been "
                                 "tuned for this backend; run the tune split first*"])


def test_tuning_again_after_a_heldout_report_is_refused(pytester: pytest.Pytester, split_pack: Path) -> None:
    assert pytester.runpytest("packs", "--jev-tune", *MOCK).ret == 0
    only_injected_failures(pytester.runpytest("packs", "--jev-heldout", *MOCK))
    path = pytester.path / "results/mock-0/split-pack.thresholds.json"
    before = path.read_bytes()
    again = pytester.runpytest("packs", "--jev-tune", "--jev-target-precision", "0.5", *MOCK)
    assert again.ret == pytest.ExitCode.TESTS_FAILED
    again.stdout.fnmatch_lines(["*split-pack.thresholds.json is frozen: the held-out split was evaluated with them "
                                "(--jev-heldout, split-pack.report.heldout.json), so tuning again would make its "
                                "numbers no longer held out*"])
    assert path.read_bytes() == before  # no override: the frozen thresholds stay as they were
    # a thresholds file written before freezes were recorded: the held-out report beside it still freezes them
    older = json.loads(before)
    del older["frozen"]
    path.write_text(json.dumps(older))
    unfrozen = pytester.runpytest("packs", "--jev-tune", *MOCK)
    unfrozen.stdout.fnmatch_lines(["*split-pack.report.heldout.json exists: the held-out split has been evaluated*"])
    (pytester.path / "results/mock-0/split-pack.report.heldout.json").write_text("{not json")
    unreadable = pytester.runpytest("packs", "--jev-tune", *MOCK)
    assert unreadable.ret == pytest.ExitCode.TESTS_FAILED
    unreadable.stdout.fnmatch_lines(["*exists (it cannot be read, which counts as frozen: repair it or move it "
                                     "away)*"])


def test_the_code_that_writes_thresholds_refuses_a_heldout_caller(tmp_path: Path) -> None:
    doc = {"split": "tune", "thresholds": {}}
    with pytest.raises(LeakageError, match="a heldout run reached the code that writes"):
        write_thresholds(tmp_path / "t.json", Thresholds.from_json(doc), role="heldout")
    with pytest.raises(LeakageError):
        write_thresholds(tmp_path / "t.json", Thresholds.from_json({**doc, "split": "heldout"}), role="tune")
    assert not (tmp_path / "t.json").exists()
    write_thresholds(tmp_path / "t.json", Thresholds.from_json(doc), role="tune")
    assert json.loads((tmp_path / "t.json").read_text()) == doc


def test_protocol_flags_are_checked(pytester: pytest.Pytester, split_pack: Path) -> None:
    both = pytester.runpytest("packs", "--jev-tune", "--jev-heldout", *MOCK)
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    both.stderr.fnmatch_lines(["*--jev-tune and --jev-heldout are two runs*"])
    other = pytester.runpytest("packs", "--jev-tune", "--jev-split", "heldout", *MOCK)
    other.stderr.fnmatch_lines(["*--jev-tune runs the tune split, but --jev-split names 'heldout'*"])


def merge(pytester: pytest.Pytester, *paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_jev", "merge", *map(str, paths), "--out",
                           str(pytester.path / "comparison.json")], capture_output=True, text=True, check=False)


def test_merge_refuses_edited_reports_and_mixing_mock_with_live(pytester: pytest.Pytester, split_pack: Path) -> None:
    assert pytester.runpytest("packs", "--jev-tune", *MOCK).ret == 0
    only_injected_failures(pytester.runpytest("packs", "--jev-heldout", *MOCK))
    mine = pytester.path / "results/mock-0/split-pack.report.heldout.json"
    doc = json.loads(mine.read_text())
    other = pytester.path / "other.json"
    other.write_text(json.dumps({**doc, "backend": "mock-1"}))
    done = merge(pytester, mine, other)
    assert done.returncode == 0, done.stderr
    comparison = json.loads((pytester.path / "comparison.json").read_text())
    assert [b["backend"] for b in comparison["backends"]] == ["mock-0", "mock-1"] and comparison["mode"] == "mock"
    edited = pytester.path / "edited.json"
    edited.write_text(json.dumps({k: v for k, v in doc.items() if k != "mode"}))
    refused = merge(pytester, mine, edited)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "edited.json: not a protocol report: (top level): 'mode' is a required property" in refused.stderr
    live = pytester.path / "live.json"
    live.write_text(json.dumps({**doc, "mode": "live", "backend": "jev-1.13.0", "backend_kind": ["jev"],
                                "note": None}))
    live.write_text(json.dumps({k: v for k, v in json.loads(live.read_text()).items() if k != "note"}))
    mixed = merge(pytester, mine, live)
    assert mixed.returncode == 1 and "mock and live reports never merge" in mixed.stderr
    seeded = pytester.path / "seeded.json"
    seeded.write_text(json.dumps({**doc, "seed": 3, "backend": "x"}))
    differ = merge(pytester, mine, seeded)
    assert differ.returncode == 1 and "seed is 3 here but 0 in" in differ.stderr
    assert "Traceback" not in refused.stderr + mixed.stderr + differ.stderr


def test_reports_are_the_same_with_xdist(pytester: pytest.Pytester, split_pack: Path) -> None:
    seen = []
    for extra in ([], ["-n", "2"]):
        for name in ("thresholds.json", "report.tune.json", "report.heldout.json"):
            (pytester.path / f"results/mock-0/split-pack.{name}").unlink(missing_ok=True)
        assert pytester.runpytest_subprocess("packs", "--jev-tune", *MOCK, *extra).ret == 0
        only_injected_failures(pytester.runpytest_subprocess("packs", "--jev-heldout", *MOCK, *extra))
        seen.append([(pytester.path / f"results/mock-0/split-pack.{name}").read_bytes()
                     for name in ("thresholds.json", "report.tune.json", "report.heldout.json",
                                  "results.heldout.jsonl")])
    assert seen[0] == seen[1]


# -- the statistics ------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3, 7, 10, 49, 98, 500, 12345])
def test_wilson_equals_scipy(n: int) -> None:
    from scipy.stats import binomtest

    for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
        if 0 <= k <= n:
            lo, hi = binomtest(k, n).proportion_ci(method="wilson")
            got = stats.wilson(k, n)
            assert got is not None and abs(got[0] - lo) <= 1e-12 and abs(got[1] - hi) <= 1e-12, (k, n)
    assert stats.wilson(0, 0) is None


def test_equal_width_ece_by_hand() -> None:
    # bins: 0.55 -> [0.5, 0.6) with one wrong; 0.95, 0.95 -> [0.9, 1.0] both right; 0.75 -> [0.7, 0.8) right
    confidence = [0.55, 0.95, 0.95, 0.75]
    correct = [False, True, True, True]
    expected = 1 / 4 * abs(0.55 - 0) + 2 / 4 * abs(0.95 - 1) + 1 / 4 * abs(0.75 - 1)
    assert stats.ece_equal_width(confidence, correct) == pytest.approx(expected, abs=1e-15)
    assert stats.ece_equal_width([1.0, 0.0], [True, False]) == pytest.approx(0.0)  # 1.0 in the last bin
    assert stats.ece_equal_width([], []) is None


def test_brier_by_hand() -> None:
    noul = [{"true": 0.8, "false": 0.2}, {"true": 0.3, "false": 0.7}]
    # binary, on P(true): (0.8-1)^2 = 0.04; (0.3-0)^2 = 0.09 (the summary's and jevassert's Brier)
    assert stats.brier_multiclass(noul, ["true", "false"]) == pytest.approx((0.04 + 0.09) / 2)
    choice = [{"a": 0.5, "b": 0.3, "c": 0.2}]
    assert stats.brier_multiclass(choice, ["b"]) == pytest.approx(0.25 + 0.49 + 0.04)
    assert stats.brier_multiclass([{"a": 1.0}], ["b"]) == pytest.approx(2.0)  # no probability for gold: a full miss


def sample(cid: str, decision: str | None, p: float, gold: str = "billing", locale: str = "en",
           error: str | None = None) -> Sample:
    answers = {} if decision is None else {"q": Answered(gold, decision, p, {decision: p})}
    return Sample(cid, locale, (), {"q": gold}, error, 10.0, 5, 0, answers)


def test_selective_metrics_count_failures_and_unknown_as_abstentions() -> None:
    samples = [sample("a", "billing", 0.9), sample("b", "billing", 0.7), sample("c", "technical", 0.95),
               sample("d", "unknown", 0.99), sample("e", None, 0.0, error="HTTP 500"),
               sample("f", "technical", 0.6, gold="technical")]
    m = selective.metrics(samples, "q", "choice", ["billing", "technical", "unknown"], 0.8)
    assert m["samples"] == {"total": 6, "answered": 5, "decided": 2, "failed": 1, "unknown_answers": 1}
    assert m["coverage"]["k"] == 2 and m["coverage"]["n"] == 6  # a, c: d is unknown, e failed, b/f below 0.8
    assert m["selective_precision"]["value"] == 0.5  # a right, c wrong
    billing = m["per_label"]["billing"]
    assert billing["precision"]["value"] == 1.0 and (billing["recall"]["k"], billing["recall"]["n"]) == (1, 5)
    assert m["failures_by_code"] == {"HTTP 500": 1}
    assert m["coverage"]["ci"] == list(stats.wilson(2, 6))  # type: ignore[arg-type]


def test_tuning_picks_the_lowest_threshold_reaching_the_target() -> None:
    good = [sample(f"g{i}", "billing", 0.60 + i / 100) for i in range(20)]  # p 0.60..0.79, all right
    bad = [sample(f"b{i}", "technical", 0.55) for i in range(5)]  # p 0.55, wrong
    found = selective.tune(good + bad, "q", target=0.9, min_covered=10)
    assert found.threshold == 0.56 and found.decided == 20 and found.precision == 1.0
    assert selective.tune(good + bad, "q", target=0.9, min_covered=21).status == "target-not-reached"
    tight = selective.tune(good, "q", target=0.9, min_covered=10)
    assert tight.threshold == 0.5  # everything decided is right from the first grid point
    assert math.isinf(selective.NEVER)
