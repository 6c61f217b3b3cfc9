"""The registry's files, black box: --jev-write-results writes results/<backend>/<pack>.json and .md;
in a registry (index.json at the rootdir) check[results] refuses any of them, the gates or the
index entry once they no longer agree with the recording; derive-gates and index commands."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packfiles import write_pack

MOCK = ["--jev-backend=mock-0", "-p", "no:cacheprovider"]
RESULTS = "results/mock-0/tiny-pack.json"


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_jev", *args], cwd=root, capture_output=True, text=True,
                          check=False)


def literal(pattern: str) -> str:
    """An fnmatch pattern whose brackets are literal (JSON lists in messages), `*` still a wildcard."""
    return "".join({"[": "[[]", "]": "[]]"}.get(ch, ch) for ch in pattern)


def out(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


@pytest.fixture
def registry(pytester: pytest.Pytester) -> Path:
    """A one-pack registry: a mock recording, its results files, derived gates and index.json."""
    write_pack(pytester.path / "packs", 12)
    pytester.makeini("[pytest]\n")
    assert pytester.runpytest("packs", "--jev-record", "--jev-backend=mock").ret in (0, 1)
    written = pytester.runpytest("packs", "--jev-write-results", *MOCK)
    assert written.ret == 0, out(written)
    written.stdout.fnmatch_lines(["jev: 2 registry file(s) written (*results/mock-0)"])
    derived = cli(pytester.path, "derive-gates", "packs/tiny-pack", "--backend", "mock-0", "--write")
    assert derived.returncode == 0, derived.stderr
    assert pytester.runpytest("packs", "--jev-write-results", *MOCK).ret == 0  # results carry the new gates
    assert cli(pytester.path, "index").returncode == 0
    return pytester.path


def check(pytester: pytest.Pytester) -> pytest.RunResult:
    return pytester.runpytest("packs", "-p", "no:randomly", *MOCK)


def test_results_file_keeps_jevasserts_keys_and_adds_provenance(registry: Path) -> None:
    doc = json.loads((registry / RESULTS).read_text())
    jevassert = ("pack record_model tested n_cases n_items case_errors missing_items accuracy accuracy_ci ece ece_ci "
                 "suggestion mean_decision_prob cost_per_case_usd total_cost_usd p50_latency_ms p95_latency_ms "
                 "per_question coverage threshold_coverage gates recorded_models pricing").split()
    assert [key for key in jevassert if key not in doc] == []
    recording = registry / "results/mock-0/tiny-pack.predictions.jsonl"
    import hashlib

    assert doc["predictions_sha256"] == hashlib.sha256(recording.read_bytes()).hexdigest()
    assert doc["predictions"] == "results/mock-0/tiny-pack.predictions.jsonl"
    assert doc["backend"] == "mock-0" and doc["mode"] == "mock" and doc["pack_version"] == "0.1.0"
    assert doc["recorded_at"] and len(doc["recorded_at"]) == 10
    assert len(doc["detail"]["correct"]) == 12 and all(len(v) == 3 for v in doc["detail"]["correct"].values())
    assert sum(b["n"] for b in doc["detail"]["reliability"]) == doc["n_items"]
    report = (registry / "results/mock-0/tiny-pack.md").read_text()
    assert f"accuracy **{doc['accuracy']:.3f}**" in report and "<svg" in report and "**mock**" in report


def test_a_consistent_registry_is_green_and_each_pack_has_a_results_check(pytester: pytest.Pytester,
                                                                        registry: Path) -> None:
    result = check(pytester)
    assert result.ret == 0, out(result)
    ids = pytester.runpytest("packs", "--collect-only", "-q", *MOCK).stdout.str()
    assert "packs/tiny-pack/pack.yaml::check[results]" in ids


def test_no_results_check_outside_a_registry(pytester: pytest.Pytester, registry: Path) -> None:
    (registry / "index.json").unlink()
    ids = pytester.runpytest("packs", "--collect-only", "-q", *MOCK).stdout.str()
    assert "check[results]" not in ids


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d.update(accuracy=0.999), "accuracy is 0.999 but a replay gives *"),
    (lambda d: d.update(recorded_models=["someone"]), 'recorded_models is ["someone"] but a replay gives *'),
    (lambda d: d.update(predictions_sha256="0" * 64), "predictions_sha256 is 000* but the recording's is *"),
    (lambda d: d["detail"]["correct"].update({"c-001": "000"}), "the detail * differs from a replay"),
])
def test_a_results_file_that_disagrees_with_its_recording_is_red(pytester: pytest.Pytester, registry: Path,
                                                                 edit: Any, expected: str) -> None:
    path = registry / RESULTS
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc, indent=2))
    result = check(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([literal(f"{RESULTS}: {expected}; refresh with `pytest packs/tiny-pack --jev-replay "
                                 "--jev-backend=mock-0 --jev-write-results` (or `jev-packs refresh`)")])
    assert "Traceback" not in out(result)


def test_a_changed_recording_makes_its_results_stale(pytester: pytest.Pytester, registry: Path) -> None:
    recording = registry / "results/mock-0/tiny-pack.predictions.jsonl"
    lines = recording.read_text().splitlines()
    first = json.loads(lines[0])
    first["latency_ms"] = 12345.0
    recording.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    result = check(pytester)
    result.stdout.fnmatch_lines([f"{RESULTS}: predictions_sha256 is * but the recording's is *"])


def test_a_report_edited_by_hand_and_a_missing_results_file_are_red(pytester: pytest.Pytester,
                                                                    registry: Path) -> None:
    report = registry / "results/mock-0/tiny-pack.md"
    report.write_text(report.read_text().replace("accuracy", "acuracy", 1))
    check(pytester).stdout.fnmatch_lines(["results/mock-0/tiny-pack.md: the report is not the one its results "
                                          "file renders; refresh with *"])
    (registry / RESULTS).unlink()
    check(pytester).stdout.fnmatch_lines([f"{RESULTS}: no results file for this recording; refresh with *"])


def test_another_backends_recording_without_results_is_red(pytester: pytest.Pytester, registry: Path) -> None:
    other = registry / "results/other-1"
    other.mkdir()
    (other / "backend.json").write_text(json.dumps({"backend": "mock", "model": "other-1"}))
    (other / "tiny-pack.predictions.jsonl").write_bytes(
        (registry / "results/mock-0/tiny-pack.predictions.jsonl").read_bytes())
    check(pytester).stdout.fnmatch_lines(["results/other-1/tiny-pack.json: missing for "
                                          "results/other-1/tiny-pack.predictions.jsonl; refresh with `pytest "
                                          "packs/tiny-pack --jev-replay --jev-backend=other-1 --jev-write-results`*"])


def test_the_fix_command_keeps_the_results_dir_it_was_given(pytester: pytest.Pytester, registry: Path) -> None:
    """Issue 19.9: check[results] run with --jev-results-dir says a command that rewrites that
    folder, and running the command as printed makes the check green."""
    shutil.copytree(registry / "results", registry / "published")  # results/ stays the gates' evidence
    stale = registry / "published" / RESULTS.removeprefix("results/")
    stale.write_text(json.dumps({**json.loads(stale.read_text()), "accuracy": 0.5}, indent=2))
    args = ("packs", "-p", "no:randomly", "--jev-results-dir=published", *MOCK)
    red = pytester.runpytest(*args)
    assert red.ret == pytest.ExitCode.TESTS_FAILED, out(red)
    fixes = set(re.findall(r"refresh with `([^`]*)`", out(red)))
    assert fixes == {"pytest packs/tiny-pack --jev-replay --jev-backend=mock-0 --jev-results-dir=published "
                     "--jev-write-results"}, out(red)
    assert "jev-packs refresh" not in out(red)  # it knows only results/
    command = fixes.pop().split()
    assert pytester.runpytest(*command[1:], "-p", "no:cacheprovider").ret == 0
    green = pytester.runpytest(*args)
    assert green.ret == 0, out(green)


def test_derive_gates_prints_a_diff_and_writes_only_when_asked(registry: Path) -> None:
    gates = registry / "packs/tiny-pack/gates.yaml"
    text = gates.read_text()
    assert "# Derived from the evidence in: results/mock-0/" in text
    doc = json.loads((registry / RESULTS).read_text())
    assert f"min_accuracy: {round(doc['accuracy_ci'][0] - 0.01, 2):g}" in text
    assert f"max_ece: {round(max(doc['ece'] + 0.03, 0.05), 2):g}" in text
    gates.write_text(text.replace("min_accuracy:", "min_accuracy: 0.01 #"))
    shown = cli(registry, "derive-gates", "packs/tiny-pack", "--backend", "mock-0")
    assert shown.returncode == 0 and "-min_accuracy: 0.01" in shown.stdout and "(not written" in shown.stdout
    assert "min_accuracy: 0.01 #" in gates.read_text()
    again = cli(registry, "derive-gates", "packs/tiny-pack", "--backend", "mock-0", "--write")
    assert again.returncode == 0 and gates.read_text() == text


def test_gates_looser_than_their_evidence_are_red(pytester: pytest.Pytester, registry: Path) -> None:
    gates = registry / "packs/tiny-pack/gates.yaml"
    lines = [line if not line.startswith("min_accuracy") else "min_accuracy: 0.01"
             for line in gates.read_text().splitlines()]
    gates.write_text("\n".join(lines) + "\n")
    assert pytester.runpytest("packs", "--jev-write-results", *MOCK).ret == 0  # results agree again
    assert cli(registry, "index").returncode == 0
    result = check(pytester)
    result.stdout.fnmatch_lines(["packs/tiny-pack/gates.yaml: min_accuracy is 0.01, looser than the derived 0.* "
                                 "(evidence results/mock-0/); re-derive with `jev-packs derive-gates packs/tiny-pack "
                                 "--backend mock-0 --write` and explain the regression"])


def test_derive_gates_without_a_pinned_model_or_evidence_says_what_to_do(registry: Path) -> None:
    none = cli(registry, "derive-gates", "packs/tiny-pack")
    assert none.returncode == 2 and "pins no model (`tested: null`)" in none.stderr
    assert "--backend" in none.stderr and "Traceback" not in none.stderr
    missing = cli(registry, "derive-gates", "packs/tiny-pack", "--backend", "nobody")
    assert missing.returncode == 2 and "no results folder" in missing.stderr


def test_index_lists_the_pack_and_a_stale_entry_is_red(pytester: pytest.Pytester, registry: Path) -> None:
    index = json.loads((registry / "index.json").read_text())
    [entry] = index["packs"]
    assert entry["id"] == "tiny-pack" and entry["status"] == "provisional" and entry["evidence"] is None
    assert [b["id"] for b in entry["backends"]] == ["mock-0"] and entry["backends"][0]["current"] is True
    assert cli(registry, "index", "--check").returncode == 0
    entry["version"] = "0.0.9"
    (registry / "index.json").write_text(json.dumps(index))
    stale = cli(registry, "index", "--check")
    assert stale.returncode == 1 and "index.json: does not match the packs and results/" in stale.stderr
    check(pytester).stdout.fnmatch_lines(["index.json: the entry of tiny-pack is out of date (version); "
                                          "regenerate it with `jev-packs refresh` (or `jev-packs index`)"])


def test_refresh_regenerates_everything_and_check_names_what_is_stale(pytester: pytest.Pytester,
                                                                      registry: Path) -> None:
    written = cli(registry, "refresh")
    assert written.returncode == 0, written.stdout + written.stderr
    assert "mock-0: written (tiny-pack)" in written.stdout and (registry / "docs/index.html").is_file()
    before = {p: p.read_bytes() for p in [registry / RESULTS, registry / "index.json", registry / "docs/index.html"]}
    again = cli(registry, "refresh")
    assert again.returncode == 0 and {p: p.read_bytes() for p in before} == before  # idempotent, byte for byte
    assert cli(registry, "refresh", "--check").returncode == 0
    assert check(pytester).ret == 0
    doc = json.loads((registry / RESULTS).read_text())
    doc["ece"] = 0.5
    (registry / RESULTS).write_text(json.dumps(doc, indent=2) + "\n")
    stale = cli(registry, "refresh", "--check")
    assert stale.returncode == 1
    assert "mock-0: stale:" in stale.stdout and f"{RESULTS}: ece is 0.5 but a replay gives" in stale.stdout
    assert "docs/index.html: stale" in stale.stdout  # the page no longer is what results/ renders
    # the pack's own check sees its scoreboard block is stale, without rendering the page
    check(pytester).stdout.fnmatch_lines(["*docs/index.html*tiny-pack*stale*"])


# -- gates that do not flap (issue 19, item 4) --------------------------------------------------

def test_derived_gates_leave_out_what_a_rerecord_would_not_pass() -> None:
    from pytest_jev.registry.derive import LATENCY_FLOOR_MS, Baseline, derivation

    embedded = derivation(Baseline(0.40, 0.20, 0.0, 1.3), in_process=True)
    assert embedded.gates == {"min_accuracy": 0.39, "max_ece": 0.23}
    assert embedded.left_out == {
        "max_cost_per_case_usd": "a free backend: a $0 gate says nothing",
        "max_p95_latency_ms": "an in-process backend: its latency is the machine's",
    }
    served = derivation(Baseline(0.80, 0.05, 0.000018, 711.0), in_process=False)
    assert served.gates == {"min_accuracy": 0.79, "max_ece": 0.08, "max_cost_per_case_usd": 0.000036,
                            "max_p95_latency_ms": 1066.0}
    assert served.left_out == {}
    near = derivation(Baseline(0.80, 0.05, 0.000018, 40.0), in_process=False)  # a server on the same machine
    assert "max_p95_latency_ms" not in near.gates
    assert near.left_out["max_p95_latency_ms"] == (
        f"p95 x 1.5 is 60 ms, under the {LATENCY_FLOOR_MS:.0f} ms floor: latencies that short are the machine's "
        "noise more than the backend's")


def test_derive_gates_says_what_it_left_out_and_the_check_agrees(pytester: pytest.Pytester, registry: Path) -> None:
    gates = (registry / "packs/tiny-pack/gates.yaml").read_text()
    assert "max_p95_latency_ms:" not in gates and "max_cost_per_case_usd:" not in gates  # the mock: in-process, free
    assert "# Left out: max_cost_per_case_usd (a free backend: a $0 gate says nothing)" in gates
    shown = cli(registry, "derive-gates", "packs/tiny-pack", "--backend", "mock-0")
    assert shown.returncode == 0, shown.stderr
    assert "left out max_p95_latency_ms: an in-process backend: its latency is the machine's" in shown.stdout
    assert "left out max_cost_per_case_usd: a free backend: a $0 gate says nothing" in shown.stdout
    result = check(pytester)  # check[results]: a gates.yaml without them is not "missing" a gate
    assert result.ret == 0, out(result)
