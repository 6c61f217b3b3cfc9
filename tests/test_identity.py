"""Every number knows what it depends on (issue 18): state fingerprints in recording lines, the
identity every results, report and thresholds file carries (pack content, data files, protocol
settings), compared by one function, and the dataset's manifest.

Each test here fails on the code before this change: the point of each is a refusal or a field
that did not exist."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packfiles import only_injected_failures, set_message, write_pack, write_split_pack

from pytest_jev.fileio import canonical_json
from pytest_jev.formats.recording_line import RecordingLine
from pytest_jev.packs import load_pack
from pytest_jev.record.plan import plan

MOCK = ["--jev-backend=mock", "-p", "no:cacheprovider"]


def out(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def write_lines(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


@pytest.fixture
def tiny(pytester: pytest.Pytester) -> Path:
    """A 5-case pack without splits, recorded with the mock into results/mock-0/."""
    folder = write_pack(pytester.path / "packs")
    pytester.makeini("[pytest]\n")
    assert pytester.runpytest("packs", "--jev-record", *MOCK).ret in (0, 1)
    return folder


RECORDING = "results/mock-0/tiny-pack.predictions.jsonl"


# -- 1. state fingerprints ------------------------------------------------------------------------

def test_every_line_we_record_carries_the_fingerprint_of_its_cases_state(pytester: pytest.Pytester,
                                                                          tiny: Path) -> None:
    pack = load_pack(tiny)
    states = {case.id: dict(case.state) for case in pack.cases}
    for line in lines_of(pytester.path / RECORDING):
        expected = "sha256:" + hashlib.sha256(canonical_json(states[line["case_id"]]).encode()).hexdigest()
        assert line["state_fingerprint"] == expected
        assert RecordingLine(line).state_fingerprint == expected


def test_a_line_recorded_for_another_state_is_refused_naming_case_line_and_command(pytester: pytest.Pytester,
                                                                                     tiny: Path) -> None:
    assert pytester.runpytest("packs", "--jev-replay", *MOCK).ret == 0
    set_message(tiny, "c-003", "A message the recording never saw.")
    result = pytester.runpytest("packs", "--jev-replay", "-rf", *MOCK)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    command = "pytest 'packs/tiny-pack/pack.yaml::case[c-003]' --jev-record --jev-backend=mock"
    result.stdout.fnmatch_lines([
        f"{RECORDING}: 1 line(s) answer a state their case no longer has (first: line 3, case c-003); "
        f"re-record just those cases: {command}",
        f"{RECORDING}:3: case c-003: stale: its state changed after this line was recorded; re-record just the "
        f"stale cases: {command}"])
    result.stdout.fnmatch_lines_random(["FAILED packs/tiny-pack/pack.yaml::check[[]recording[]]*",
                                        "FAILED packs/tiny-pack/pack.yaml::case[[]c-003[]]*"])
    assert result.parseoutcomes()["failed"] == 2 and "Traceback" not in out(result)
    # the stale answer is not graded: its items are missing, and the run says so
    result.stdout.fnmatch_lines(["5 cases: * mismatched, * invalid, 1 errors; 12 items graded, 3 missing *"])
    # the command re-records exactly that case, and replay is green again
    recorded = pytester.runpytest("packs/tiny-pack/pack.yaml::case[c-003]", "--jev-record", *MOCK)
    recorded.stdout.fnmatch_lines(["*jev recorded tiny-pack (1 selected cases): 1 called, 0 reused*"])
    assert pytester.runpytest("packs", "--jev-replay", *MOCK).ret == 0


NOTE = "carry no fingerprint that ties them to their case's state"


def test_older_lines_are_checked_through_their_request_fingerprint(pytester: pytest.Pytester, tiny: Path) -> None:
    """Lines recorded before state fingerprints carry the request fingerprint, which covers the
    state: recomputed from today's questions and state it says whether the state changed."""
    rec = pytester.path / RECORDING
    old = lines_of(rec)
    for line in old:
        del line["state_fingerprint"]
    write_lines(rec, old)
    result = pytester.runpytest("packs", "--jev-replay", *MOCK)
    assert result.ret == 0, out(result)
    assert not [line for line in result.stdout.lines if NOTE in line]
    set_message(tiny, "c-003", "A message the recording never saw.")
    stale = pytester.runpytest("packs", "--jev-replay", "-rf", *MOCK)
    assert stale.ret == pytest.ExitCode.TESTS_FAILED
    stale.stdout.fnmatch_lines([f"{RECORDING}: 1 line(s) answer a state their case no longer has (first: line 3, "
                                "case c-003); re-record just those cases: *"])
    assert stale.parseoutcomes()["failed"] == 2


def test_the_state_witness_tells_a_changed_state_only_when_the_questions_are_the_same(pytester: pytest.Pytester,
                                                                                      tiny: Path) -> None:
    from pytest_jev.recording_file import load_recording
    from pytest_jev.rubric import StateWitness

    rec = pytester.path / RECORDING
    old = lines_of(rec)
    for line in old:
        del line["state_fingerprint"]
    old[3]["rubric_fingerprint"] = "sha256:" + "1" * 64  # c-004: recorded for other wording
    write_lines(rec, old)
    set_message(tiny, "c-003", "A message the recording never saw.")
    set_message(tiny, "c-004", "Another message the recording never saw.")
    pack = load_pack(tiny)
    recording = load_recording(rec)
    witness = StateWitness(pack)
    assert [witness.verdict(recording.lines[case.id], case) for case in pack.cases] == [True, True, False, None, True]


def test_lines_with_no_fingerprint_replay_and_are_reported_once(pytester: pytest.Pytester, tiny: Path) -> None:
    rec = pytester.path / RECORDING
    old = lines_of(rec)
    for line in old:
        del line["state_fingerprint"], line["request_fingerprint"]
    write_lines(rec, old)
    result = pytester.runpytest("packs", "--jev-replay", *MOCK)
    assert result.ret == 0, out(result)
    notes = [line for line in result.stdout.lines if NOTE in line]
    assert notes == [f"note: 5 lines {NOTE} (jevassert's lines carry none): an answer to a state that has changed "
                     "since cannot be told apart; re-record to add one (--jev-record=all)"]


def test_jevasserts_lines_keep_replaying_with_the_note(pytester: pytest.Pytester, toy: Path) -> None:
    result = pytester.runpytest("packs")
    assert result.ret == 0
    assert sum(NOTE in line for line in result.stdout.lines) == 1


def test_a_corrupted_request_fingerprint_is_asked_again_not_kept(tmp_path: Path) -> None:
    folder = write_pack(tmp_path / "packs", 2)
    pack = load_pack(folder)
    rec = tmp_path / "rec.jsonl"
    line = {"case_id": "c-001", "model": "m", "latency_ms": 1.0, "usage": None, "error": None,
            "answers": {"queue": {"type": "choice", "choice": "billing",
                                  "probabilities": {"billing": 0.8, "technical": 0.1, "unknown": 0.1}},
                        "refund": {"type": "noul", "noul": 0.9},
                        "urgency": {"type": "score", "probabilities": {"0": 0.1, "1": 0.8, "2": 0.1}}}}
    write_lines(rec, [{**line, "request_fingerprint": 5}, {**line, "case_id": "c-002"}])
    planned = plan(pack, "mock", rec)
    assert [r.case_id for r in planned.todo] == ["c-001"]  # corrupt: asked again; jevassert's (none): kept


# -- 2, 3, 11. the identity -------------------------------------------------------------------------

def merge(pytester: pytest.Pytester, *paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_jev", "merge", *map(str, paths), "--out",
                           str(pytester.path / "comparison.json")], capture_output=True, text=True, check=False)


def copy_backend(pytester: pytest.Pytester, name: str, pack_id: str) -> None:
    """A second backend folder holding the same recording (a column of another backend)."""
    src, dst = pytester.path / "results/mock-0", pytester.path / f"results/{name}"
    dst.mkdir(parents=True)
    for file in ("backend.json", f"{pack_id}.predictions.jsonl"):
        shutil.copy(src / file, dst / file)


@pytest.fixture
def drift_like(pytester: pytest.Pytester) -> Path:
    """A pack with a held-out split only: its thresholds are pack.yaml's (as semantic-drift's)."""
    folder = write_split_pack(pytester.path / "packs", 8, pack_id="drift-like", splits=("heldout",))
    pytester.makeini("[pytest]\n")
    assert pytester.runpytest("packs", "--jev-record", *MOCK).ret in (0, 1)
    return folder


def test_a_threshold_edited_without_a_version_bump_never_merges(pytester: pytest.Pytester, drift_like: Path) -> None:
    assert pytester.runpytest("packs", "--jev-heldout", *MOCK).ret in (0, 1)
    copy_backend(pytester, "mock-1", "drift-like")
    pack_yaml = drift_like / "pack.yaml"
    pack_yaml.write_text(pack_yaml.read_text().replace("{true: 0.8, false: 0.8}", "{true: 0.5, false: 0.5}"))
    assert pytester.runpytest("packs", "--jev-heldout", "--jev-backend=mock-1", "-p", "no:cacheprovider").ret in (0, 1)
    first = pytester.path / "results/mock-0/drift-like.report.heldout.json"
    second = pytester.path / "results/mock-1/drift-like.report.heldout.json"
    assert json.loads(first.read_text())["identity"]["content_sha256"] != \
        json.loads(second.read_text())["identity"]["content_sha256"]
    done = merge(pytester, first, second)
    assert done.returncode == 1
    assert re.search(r"mock-1/drift-like\.report\.heldout\.json: identity\.content_sha256 is \"sha256:[0-9a-f]{64}\" "
                     r"here but \"sha256:[0-9a-f]{64}\" in .*mock-0/drift-like\.report\.heldout\.json \(what "
                     r"pack\.yaml says the numbers depend on \(questions, options, levels, thresholds\)\)",
                     done.stderr), done.stderr


def test_a_results_file_is_stale_once_a_threshold_of_pack_yaml_changes(pytester: pytest.Pytester, tiny: Path) -> None:
    assert pytester.runpytest("packs", "--jev-write-results", *MOCK).ret in (0, 1)
    assert subprocess.run([sys.executable, "-m", "pytest_jev", "index", "--root", str(pytester.path)],
                          capture_output=True, check=False).returncode == 0
    check = pytester.runpytest("packs", "--jev-replay", "--jev-registry", "-k", "results", *MOCK)
    assert check.ret == 0, out(check)
    pack_yaml = tiny / "pack.yaml"
    pack_yaml.write_text(pack_yaml.read_text() + "thresholds:\n  refund: {true: 0.6, false: 0.6}\n")
    stale = pytester.runpytest("packs", "--jev-replay", "--jev-registry", "-k", "results", *MOCK)
    assert stale.ret == pytest.ExitCode.TESTS_FAILED
    stale.stdout.fnmatch_lines(["*results/mock-0/tiny-pack.json: identity.content_sha256 is * in the results file "
                                "but * in this run (what pack.yaml says the numbers depend on*; refresh with*"])


def test_reports_tuned_at_other_settings_never_merge_and_heldout_checks_them(pytester: pytest.Pytester) -> None:
    write_split_pack(pytester.path / "packs")
    pytester.makeini("[pytest]\n")
    assert pytester.runpytest("packs", "--jev-record", *MOCK).ret in (0, 1)
    copy_backend(pytester, "mock-1", "split-pack")
    mine = ["--jev-backend=mock-0", "-p", "no:cacheprovider"]
    other = ["--jev-backend=mock-1", "-p", "no:cacheprovider"]
    assert pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", *mine).ret in (0, 1)
    assert pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", "--jev-target-precision", "0.5",
                              *other).ret in (0, 1)
    frozen = json.loads((pytester.path / "results/mock-1/split-pack.thresholds.json").read_text())
    assert frozen["identity"]["protocol"] == {"version": 1, "target_precision": 0.5, "min_covered": 5,
                                              "grid": [0.5, 0.99, 0.01]}
    # held-out takes the frozen settings; one given that differs is refused, naming it
    refused = pytester.runpytest("packs", "--jev-heldout", "--jev-target-precision", "0.9", *other)
    assert refused.ret == pytest.ExitCode.TESTS_FAILED
    refused.stdout.fnmatch_lines(["*split-pack.thresholds.json: identity.protocol.target_precision is 0.5 in the "
                                  "frozen thresholds but 0.9 in this held-out run*"])
    assert not (pytester.path / "results/mock-1/split-pack.report.heldout.json").exists()
    for args in (mine, other):
        assert pytester.runpytest("packs", "--jev-heldout", *args).ret in (0, 1)
    done = merge(pytester, *(pytester.path / f"results/{b}/split-pack.report.heldout.json"
                             for b in ("mock-0", "mock-1")))
    assert done.returncode == 1
    assert "identity.protocol.target_precision is 0.5 here but 0.9 in" in done.stderr, done.stderr


def test_reports_thresholds_and_results_record_the_dataset_version_and_manifest(pytester: pytest.Pytester) -> None:
    folder = write_split_pack(pytester.path / "packs")
    pytester.makeini("[pytest]\n")
    assert pytester.runpytest("packs", "--jev-record", *MOCK).ret in (0, 1)
    tuned = pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", "--jev-write-results", *MOCK)
    assert tuned.ret in (0, 1)
    listing = "".join(f"{hashlib.sha256((folder / name).read_bytes()).hexdigest()}  {name}\n"
                      for name in sorted(("pack.yaml", "tune.jsonl", "heldout.jsonl")))
    manifest = "sha256:" + hashlib.sha256(listing.encode()).hexdigest()  # `sha256sum ... | sha256sum`
    for name in ("thresholds.json", "report.tune.json", "tune.json"):
        doc = json.loads((pytester.path / f"results/mock-0/split-pack.{name}").read_text())
        assert doc["dataset"]["version"] == "0.1.0" and doc["dataset"]["manifest_sha256"] == manifest, name
        assert doc["identity"]["data"] == {n: hashlib.sha256((folder / n).read_bytes()).hexdigest()
                                           for n in ("tune.jsonl", "heldout.jsonl")}
    report = json.loads((pytester.path / "results/mock-0/split-pack.report.tune.json").read_text())
    assert report["seeds"] == {"bootstrap": 0, "backend": 0}  # --jev-seed; the mock's own (backend.json)


# -- 4. held-out numbers only from --jev-heldout at frozen thresholds -----------------------------------

@pytest.fixture
def split_pack(pytester: pytest.Pytester) -> Path:
    folder = write_split_pack(pytester.path / "packs")
    pytester.makeini("[pytest]\n")
    return folder


SPLIT_RECORDING = "results/mock-0/split-pack.predictions.jsonl"


def test_recording_for_a_tune_run_records_the_tune_split_only(pytester: pytest.Pytester, split_pack: Path) -> None:
    result = pytester.runpytest("packs", "--jev-record", "--jev-tune", "--jev-min-covered", "5", *MOCK)
    assert result.ret == 0, out(result)
    recorded = {line["case_id"] for line in lines_of(pytester.path / SPLIT_RECORDING)}
    assert recorded == {case.id for case in load_pack(split_pack).splits["tune"].cases}
    result.stdout.fnmatch_lines(["*jev recorded split-pack (24 selected cases): 24 called, 0 reused*"])


def test_a_plain_run_shows_no_heldout_numbers_until_the_thresholds_are_frozen(pytester: pytest.Pytester,
                                                                             split_pack: Path) -> None:
    assert pytester.runpytest("packs", "--jev-record", *MOCK).ret in (0, 1)
    plain = pytester.runpytest("packs", "--jev-target-precision", "0.6", "-rs", *MOCK)
    assert plain.ret == 0, out(plain)
    text = out(plain)
    assert "jev: split-pack::heldout" not in text and "jev: split-pack::tune" in text
    plain.stdout.fnmatch_lines(["SKIPPED [[]25[]] packs/split-pack/pack.yaml:1: sealed: held-out numbers come only "
                                "from --jev-heldout at frozen thresholds, and results/mock-0/split-pack.thresholds."
                                "json is not frozen yet: run --jev-tune, then --jev-heldout"])
    assert text.count("threshold for precision >= 0.60 [") == 2  # the tune split's vi and en: none from held-out data
    assert pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", *MOCK).ret == 0
    still = pytester.runpytest("packs", "--jev-split", "heldout", *MOCK)
    assert "jev: split-pack::heldout" not in out(still)  # tuned, not yet frozen: still sealed
    only_injected_failures(pytester.runpytest("packs", "--jev-heldout", *MOCK))
    frozen = pytester.runpytest("packs", "--jev-split", "heldout", "--jev-target-precision", "0.6", *MOCK)
    assert "jev: split-pack::heldout" in out(frozen)  # frozen: shown, as --jev-heldout showed it
    assert "threshold for precision" not in out(frozen)


def test_renaming_the_heldout_report_does_not_unlock_tuning(pytester: pytest.Pytester, split_pack: Path) -> None:
    assert pytester.runpytest("packs", "--jev-record", *MOCK).ret in (0, 1)
    assert pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", *MOCK).ret == 0
    only_injected_failures(pytester.runpytest("packs", "--jev-heldout", *MOCK))
    folder = pytester.path / "results/mock-0"
    thresholds = json.loads((folder / "split-pack.thresholds.json").read_text())
    assert thresholds["frozen"] == {"by": "--jev-heldout", "report": "split-pack.report.heldout.json",
                                    "heldout_identity": json.loads((folder / "split-pack.report.heldout.json")
                                                                   .read_text())["identity"]["sha256"]}
    before = (folder / "split-pack.thresholds.json").read_bytes()
    (folder / "split-pack.report.heldout.json").rename(folder / "split-pack.report.heldout.old.json")
    again = pytester.runpytest("packs", "--jev-tune", "--jev-target-precision", "0.5", *MOCK)
    assert again.ret == pytest.ExitCode.TESTS_FAILED
    again.stdout.fnmatch_lines(["*split-pack.thresholds.json is frozen: the held-out split was evaluated with them*"])
    assert (folder / "split-pack.thresholds.json").read_bytes() == before


# -- 5. preflight: refusals that need no answer come before the first call --------------------------------

COUNTING = '''
from pathlib import Path

import pytest

from pytest_jev.backends.mock import MockBackend


class Counting(MockBackend):
    """The mock, writing one line per call to calls.txt beside this conftest."""

    async def answer(self, request):
        with open(Path(__file__).parent / "calls.txt", "a") as calls:
            calls.write(request.case_id + "\\n")
        return await super().answer(request)


@pytest.hookimpl(tryfirst=True)
def pytest_jev_make_backend(spec, options, pack, config):
    return Counting.from_pack(pack)
'''


def calls(pytester: pytest.Pytester) -> int:
    path = pytester.path / "calls.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


def tree(root: Path) -> dict[str, bytes]:
    """Every file under results/ (and their bytes): what a refused run must leave as it was."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "results").rglob("*")) if p.is_file()}


@pytest.fixture
def counted(pytester: pytest.Pytester, split_pack: Path) -> Path:
    pytester.makeconftest(COUNTING)
    return split_pack


def refused(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out(result)
    text = result.stderr.str()
    assert "jev preflight: recording refused before any call, nothing was called or written" in text, text
    assert "Traceback" not in out(result)
    return text


def test_a_changed_split_is_refused_before_any_call(pytester: pytest.Pytester, counted: Path) -> None:
    tune = counted / "tune.jsonl"
    tune.write_text(tune.read_text().replace("[vi 1]", "[vi 1!]"))
    text = refused(pytester.runpytest("packs", "--jev-record", "--jev-tune", *MOCK))
    assert "tune.jsonl: frozen split 'tune' changed: Expected sha256" in text
    assert calls(pytester) == 0 and not (pytester.path / "results").exists()


def test_a_changed_pinned_rubric_stops_with_rubric_drift_before_any_call(pytester: pytest.Pytester,
                                                                          counted: Path) -> None:
    from pytest_jev.rubric import rubric_fingerprint

    pack_yaml = counted / "pack.yaml"
    pin = rubric_fingerprint(load_pack(counted).questions_as_sent())
    pack_yaml.write_text(pack_yaml.read_text() + f"rubric: {pin}\n")
    assert pytester.runpytest("packs", "--jev-record", "--jev-tune", "--jev-min-covered", "5", *MOCK).ret == 0
    assert calls(pytester) == 24
    before = tree(pytester.path)
    pack_yaml.write_text(pack_yaml.read_text().replace("Does `message` ask for money back?",
                                                       "Does `message` ask for a refund?"))
    text = refused(pytester.runpytest("packs", "--jev-record=all", "--jev-tune", "--jev-min-covered", "5", *MOCK))
    assert f"rubric drift: {counted / 'pack.yaml'}: rubric pinned as {pin}, but the questions as written give" in text
    assert calls(pytester) == 24 and tree(pytester.path) == before


def test_recording_behind_a_heldout_report_is_refused_before_any_call(pytester: pytest.Pytester,
                                                                       counted: Path) -> None:
    assert pytester.runpytest("packs", "--jev-record", *MOCK).ret in (0, 1)
    assert pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", *MOCK).ret == 0
    assert pytester.runpytest("packs", "--jev-heldout", *MOCK).ret == 0
    asked, before = calls(pytester), tree(pytester.path)
    text = refused(pytester.runpytest("packs", "--jev-record=all", "--jev-tune", *MOCK))
    folder = pytester.path / "results/mock-0"
    assert f"{folder / 'split-pack.thresholds.json'} is frozen: the held-out split was evaluated with them" in text
    assert (f"{folder / 'split-pack.predictions.jsonl'}: recording would ask 24 case(s) of the evaluated splits again "
            "(first: s-vi-001) and rewrite the recording behind the held-out evaluation") in text
    assert calls(pytester) == asked and tree(pytester.path) == before
    # a changed state asks its case again under a bare --jev-record: behind a held-out report, refused too
    heldout = counted / "heldout.jsonl"
    heldout.write_text(heldout.read_text().replace("[en 40]", "[en 40!]"))
    text = refused(pytester.runpytest("packs", "--jev-record", "--jev-split", "heldout", *MOCK))
    assert "frozen split 'heldout' changed" in text and "rewrite the recording behind" in text
    assert calls(pytester) == asked and tree(pytester.path) == before


def test_a_heldout_recording_for_thresholds_that_are_not_its_own_calls_nothing(pytester: pytest.Pytester,
                                                                               counted: Path) -> None:
    none_yet = refused(pytester.runpytest("packs", "--jev-record", "--jev-heldout", *MOCK))
    assert "split-pack.thresholds.json: no frozen thresholds: the tune split has not been tuned" in none_yet
    assert calls(pytester) == 0
    assert pytester.runpytest("packs", "--jev-record", "--jev-tune", "--jev-min-covered", "5", *MOCK).ret == 0
    assert calls(pytester) == 24
    before = tree(pytester.path)
    text = refused(pytester.runpytest("packs", "--jev-record", "--jev-heldout", "--jev-target-precision", "0.5",
                                      *MOCK))
    assert ("split-pack.thresholds.json: identity.protocol.target_precision is 0.5 in the frozen thresholds but 0.9 "
            "in this held-out run") not in text  # the frozen one is 0.9, the given 0.5: named the other way round
    assert ("split-pack.thresholds.json: identity.protocol.target_precision is 0.9 in the frozen thresholds but 0.5 "
            "in this held-out run") in text
    assert calls(pytester) == 24 and tree(pytester.path) == before
    assert pytester.runpytest("packs", "--jev-record", "--jev-heldout", *MOCK).ret == 0  # its own: records
    assert calls(pytester) == 48


# -- 6. served models per split -------------------------------------------------------------------------

def test_heldout_compares_the_models_that_served_each_split(pytester: pytest.Pytester, split_pack: Path) -> None:
    """An alias that rolled over inside one recording: the tune lines served by one model, the
    held-out ones by the next. Thresholds of the first are never applied to the second's answers."""
    assert pytester.runpytest("packs", "--jev-record", *MOCK).ret in (0, 1)
    heldout = {case.id for case in load_pack(split_pack).splits["heldout"].cases}
    rec = pytester.path / SPLIT_RECORDING
    write_lines(rec, [{**line, "model": "mock-0-next"} if line["case_id"] in heldout else line
                      for line in lines_of(rec)])
    assert pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", *MOCK).ret == 0
    frozen = json.loads((pytester.path / "results/mock-0/split-pack.thresholds.json").read_text())
    assert frozen["served_models"] == ["mock-0"]  # the tune lines' own
    result = pytester.runpytest("packs", "--jev-heldout", *MOCK)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert ('split-pack.thresholds.json: served_models is ["mock-0"] in the frozen thresholds but ["mock-0-next"] in '
            "this held-out run") in out(result)
    assert not (pytester.path / "results/mock-0/split-pack.report.heldout.json").exists()


# -- 7. merge validates every field and the report's own consistency -------------------------------------

@pytest.fixture
def two_reports(pytester: pytest.Pytester, split_pack: Path) -> tuple[Path, Path]:
    """Held-out reports of two backend folders holding the same mock recording."""
    assert pytester.runpytest("packs", "--jev-record", *MOCK).ret in (0, 1)
    copy_backend(pytester, "mock-1", "split-pack")
    for name in ("mock-0", "mock-1"):
        args = [f"--jev-backend={name}", "-p", "no:cacheprovider"]
        assert pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", *args).ret == 0
        only_injected_failures(pytester.runpytest("packs", "--jev-heldout", *args))
    return (pytester.path / "results/mock-0/split-pack.report.heldout.json",
            pytester.path / "results/mock-1/split-pack.report.heldout.json")


def edited(pytester: pytest.Pytester, report: Path, name: str, change: Any) -> Path:
    """A copy of `report` changed by `change(doc)`, outside any backend folder."""
    doc = json.loads(report.read_text())
    change(doc)
    path = pytester.path / name
    path.write_text(json.dumps(doc))
    return path


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    return done.stderr


def test_merge_accepts_reports_that_measured_the_same_thing(pytester: pytest.Pytester,
                                                            two_reports: tuple[Path, Path]) -> None:
    done = merge(pytester, *two_reports)
    assert done.returncode == 0, done.stderr
    comparison = json.loads((pytester.path / "comparison.json").read_text())
    first = json.loads(two_reports[0].read_text())
    assert comparison["identity"] == first["identity"] and comparison["price_source"] is None


def test_merge_refuses_counts_that_do_not_add_up(pytester: pytest.Pytester, two_reports: tuple[Path, Path]) -> None:
    def five(doc: dict[str, Any]) -> None:
        doc["samples"] = {"total": 5, "failed": 0, "answered": 5, "locales": {"en": 3}}

    text = refusal(merge(pytester, two_reports[0], edited(pytester, two_reports[1], "five.json", five)))
    assert "five.json: its counts do not add up: samples.total is 5, but samples.locales {'en': 3} hold 3" in text


def test_merge_refuses_a_report_with_a_locale_removed(pytester: pytest.Pytester,
                                                      two_reports: tuple[Path, Path]) -> None:
    samples = [json.loads(x) for x in (two_reports[1].parent / "split-pack.results.heldout.jsonl")
               .read_text().splitlines()]
    failed_en = sum(1 for s in samples if s["locale"] == "en" and s["error"])

    def no_vi(doc: dict[str, Any]) -> None:
        doc["samples"] = {"total": 12, "failed": failed_en, "answered": 12 - failed_en, "locales": {"en": 12}}
        for question in doc["questions"].values():
            del question["locales"]["vi"]

    text = refusal(merge(pytester, two_reports[0], edited(pytester, two_reports[1], "no-vi.json", no_vi)))
    assert 'no-vi.json: samples.locales is {"en": 12} here but {"en": 12, "vi": 12} in' in text


def test_merge_refuses_a_tune_report_and_the_same_file_or_backend_twice(pytester: pytest.Pytester,
                                                                         two_reports: tuple[Path, Path]) -> None:
    tune = two_reports[1].parent / "split-pack.report.tune.json"
    text = refusal(merge(pytester, two_reports[0], tune))
    assert "split-pack.report.tune.json: a tune report: its numbers come from the data its thresholds were fitted on" \
        in text
    text = refusal(merge(pytester, two_reports[0], two_reports[1], two_reports[0]))
    assert f"{two_reports[0]}: the same report twice (also given as {two_reports[0]})" in text
    copy = edited(pytester, two_reports[0], "copy.json", lambda doc: None)
    assert "copy.json: backend mock-0 twice (also in" in refusal(merge(pytester, two_reports[0], copy))


def test_merge_refuses_a_mock_report_reported_as_live(pytester: pytest.Pytester,
                                                      two_reports: tuple[Path, Path]) -> None:
    def live(doc: dict[str, Any]) -> None:
        doc["mode"] = "live"

    text = refusal(merge(pytester, edited(pytester, two_reports[0], "live-a.json", live),
                         edited(pytester, two_reports[1], "live-b.json", live)))
    assert "live-a.json: mode is live, but its lines were answered by the mock (backend_kind ['mock'])" in text
    # edited beside its recording, the recording says what answered
    doc = json.loads(two_reports[1].read_text())
    del doc["note"]
    two_reports[1].write_text(json.dumps({**doc, "mode": "live", "backend_kind": ["jev"]}))
    text = refusal(merge(pytester, two_reports[1], edited(pytester, two_reports[0], "live-c.json", live)))
    assert "mock-1/split-pack.report.heldout.json: mode is live, but every line of the recording it graded" in text


def test_a_hand_mixed_recording_is_never_reported_nor_merged(pytester: pytest.Pytester,
                                                            two_reports: tuple[Path, Path]) -> None:
    rec = two_reports[1].parent / "split-pack.predictions.jsonl"
    lines = lines_of(rec)
    write_lines(rec, [{**line, "mode": "live", "backend": "jev"} if i % 2 else line for i, line in enumerate(lines)])
    # merge: the report beside it no longer describes it, and a report naming it is refused for the mix
    assert "is not the one it graded" in refusal(merge(pytester, *two_reports))
    sha = hashlib.sha256(rec.read_bytes()).hexdigest()
    doc = json.loads(two_reports[1].read_text())
    two_reports[1].write_text(json.dumps({**doc, "recording_sha256": sha}))
    assert "the recording it graded (split-pack.predictions.jsonl) mixes mock lines with live ones" in \
        refusal(merge(pytester, *two_reports))
    # the run: a protocol run of a mixed split is refused and writes nothing
    two_reports[1].unlink()
    result = pytester.runpytest("packs", "--jev-heldout", "--jev-backend=mock-1", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "the heldout split's lines mix mock lines with live ones" in out(result)
    assert not two_reports[1].exists()


# -- 8. cost only at given prices in the protocol; the price source said everywhere --------------------------

def test_the_protocol_prices_only_at_given_prices_and_says_where_prices_come_from(pytester: pytest.Pytester,
                                                                               split_pack: Path) -> None:
    assert pytester.runpytest("packs", "--jev-record", *MOCK).ret in (0, 1)
    report = pytester.path / "results/mock-0/split-pack.report.tune.json"

    def costs(doc: dict[str, Any]) -> set[Any]:
        return {entry["cost_usd"] for q in doc["questions"].values() for entry in q["locales"].values()}

    tuned = pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", "--jev-json", "run.json", *MOCK)
    assert tuned.ret == 0
    doc = json.loads(report.read_text())
    assert doc["price_source"] is None and costs(doc) == {None}  # the list price in backend.json is not given
    run = json.loads((pytester.path / "run.json").read_text())["runs"][0]
    assert run["price_source"] == "backend.json" and run["total_cost_usd"] == 0.0  # replay: jevassert's rule
    tuned.stdout.fnmatch_lines(["cost/case $0.000000 (total $0.0000 at $0.0/M input + $0.0/M output tokens), "
                                "prices: the list price in backend.json"])
    (pytester.path / "results/mock-0/split-pack.thresholds.json").unlink()  # tune again (nothing frozen)
    priced = ["--jev-price-input", "2", "--jev-price-output", "4"]
    assert pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", *priced, "--jev-json", "run.json",
                              *MOCK).ret == 0
    doc = json.loads(report.read_text())
    samples = [json.loads(x) for x in (pytester.path / "results/mock-0/split-pack.results.tune.jsonl")
               .read_text().splitlines()]
    vi = [s for s in samples if s["locale"] == "vi"]
    expected = (sum(s["input_tokens"] for s in vi) * 2 + sum(s["output_tokens"] for s in vi) * 4) / 1e6
    assert doc["price_source"] == "given"
    assert doc["questions"]["refund"]["locales"]["vi"]["cost_usd"] == pytest.approx(expected, rel=1e-12)
    assert json.loads((pytester.path / "run.json").read_text())["runs"][0]["price_source"] == "given"


def test_a_recording_without_a_backend_json_is_priced_at_jevs_list_price_and_says_so(pytester: pytest.Pytester,
                                                                                    toy: Path) -> None:
    assert pytester.runpytest("packs", "--jev-json", "run.json").ret == 0
    run = json.loads((pytester.path / "run.json").read_text())["runs"][0]
    assert run["price_source"] == "default" and run["pricing"]["input_usd_per_mtok"] == 0.042


def test_merge_never_mixes_price_sources(pytester: pytest.Pytester, two_reports: tuple[Path, Path]) -> None:
    def priced(doc: dict[str, Any]) -> None:
        doc["price_source"] = "given"

    text = refusal(merge(pytester, two_reports[0], edited(pytester, two_reports[1], "priced.json", priced)))
    assert 'priced.json: price_source is "given" here but null in' in text


# -- 9. the mock injects seeded failures, and says so ----------------------------------------------------------

def _unit(*parts: Any) -> float:
    """The mock's seeded roll, computed here on its own: sha256 of the parts joined by ':'."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def test_the_mock_injects_seeded_failures_stated_in_its_backend_json(pytester: pytest.Pytester) -> None:
    split_pack = write_split_pack(pytester.path / "packs", 40)  # 160 cases: the mock fails a few
    pytester.makeini("[pytest]\n")
    recorded = pytester.runpytest("packs", "--jev-record", *MOCK)
    only_injected_failures(recorded)
    info = json.loads((pytester.path / "results/mock-0/backend.json").read_text())
    assert (info["fail_rate"], info["malformed_rate"], info["down_rate"]) == (0.05, 0.02, 0.03)
    assert info["injected_failures"].startswith("seeded (seed 0): 3% of cases down (HTTP 503 on every attempt")
    lines = lines_of(pytester.path / SPLIT_RECORDING)
    down = {line["case_id"] for line in lines if _unit(0, line["case_id"], "down") < 0.03}
    assert down and {line["case_id"] for line in lines if (line["error"] or "").startswith("HTTP 503")} == down
    for line in lines:
        if line["case_id"] in down:
            assert line["attempts"] == 4 and line["answers"] is None  # retried to the limit, then an error line
    assert any(line["retry_reasons"] for line in lines if line["case_id"] not in down)  # transient ones, retried
    # the protocol counts them: a failed call is an abstention, by its code
    assert pytester.runpytest("packs", "--jev-tune", "--jev-min-covered", "5", *MOCK).ret in (0, 1)
    report = json.loads((pytester.path / "results/mock-0/split-pack.report.tune.json").read_text())
    tune_down = down & {case.id for case in load_pack(split_pack).splits["tune"].cases}
    assert report["samples"]["failed"] >= len(tune_down)
    codes = {code for q in report["questions"].values() for e in q["locales"].values()
             for code in e["failures_by_code"]}
    assert ("HTTP 503" in codes) == bool(tune_down)
    # seeded: recording again gives the same answers and failures
    again = pytester.runpytest("packs", "--jev-record=all", "--jev-split", "tune", *MOCK)
    only_injected_failures(again)
    kept = ("case_id", "answers", "error", "attempts", "retry_reasons")
    assert [{k: x[k] for k in kept} for x in lines_of(pytester.path / SPLIT_RECORDING)] == \
        [{k: x[k] for k in kept} for x in lines]


# -- 10. locales are never pooled ----------------------------------------------------------------------------

def test_the_summary_json_and_suggestion_report_each_locale_apart(pytester: pytest.Pytester,
                                                                    split_pack: Path) -> None:
    from scipy.stats import binomtest

    only_injected_failures(pytester.runpytest("packs", "--jev-record", *MOCK))
    result = pytester.runpytest("packs", "--jev-split", "tune", "--jev-target-precision", "0.6", "--jev-json",
                                "run.json", *MOCK)
    assert result.ret == 0, out(result)
    run = json.loads((pytester.path / "run.json").read_text())["runs"][0]
    pack = load_pack(split_pack)
    lines = {line["case_id"]: line for line in lines_of(pytester.path / SPLIT_RECORDING)}
    for locale in ("vi", "en"):  # an independent count: jevassert's decision rules, written out here
        correct = items = 0
        for case in pack.splits["tune"].cases:
            answers = lines[case.id]["answers"] if case.locale == locale else None
            for qid, gold in (case.expect.items() if answers else ()):
                answer = answers[qid]
                got = (answer["noul"] >= 0.5 if qid == "refund" else
                       answer.get("choice") or max(answer["probabilities"], key=answer["probabilities"].get))
                items += 1
                correct += got == gold
        numbers = run["locales"][locale]
        assert (numbers["n_items"], numbers["correct"]) == (items, correct)
        ci = binomtest(correct, items).proportion_ci(method="wilson")
        assert numbers["accuracy_ci"] == pytest.approx([ci.low, ci.high], abs=1e-12)
        result.stdout.fnmatch_lines([f"locale {locale}: accuracy {correct / items:.3f} (Wilson 95% {ci.low:.3f}-"
                                     f"{ci.high:.3f}), {items} items, 12 cases"])
        result.stdout.fnmatch_lines([f"threshold for precision >= 0.60 [[]{locale}[]]: *"])
    assert run["suggestion"] is None and set(run["suggestion_by_locale"]) == {"vi", "en"}
    assert "threshold for precision >= 0.60: " not in out(result)  # never pooled


def test_index_json_calls_a_backend_current_only_while_its_identities_are_the_packs(pytester: pytest.Pytester,
                                                                                    tiny: Path) -> None:
    assert pytester.runpytest("packs", "--jev-write-results", *MOCK).ret in (0, 1)

    def entry() -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "pytest_jev", "index", "--root", str(pytester.path)],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        doc: dict[str, Any] = json.loads((pytester.path / "index.json").read_text())["packs"][0]
        return doc

    before = entry()
    results = json.loads((pytester.path / "results/mock-0/tiny-pack.json").read_text())
    assert before["backends"][0]["current"] is True and before["identities"] == {"": results["identity"]["sha256"]}
    assert before["dataset"] == results["dataset"]
    pack_yaml = tiny / "pack.yaml"
    pack_yaml.write_text(pack_yaml.read_text().replace("Which team should handle", "Which team must handle"))
    after = entry()  # same version, other wording: the published numbers are not the pack's any more
    assert after["version"] == before["version"] and after["backends"][0]["current"] is False
