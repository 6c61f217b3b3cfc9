"""A new user's first hour (issue 19): what a run says at its ends. A dry run ends cleanly; a run
in a registry says the registry checks are on, and why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixture_helpers import claims_line, write_answers
from packfiles import write_pack

from conftest import write_pack as write_toy

ROOT = Path(__file__).resolve().parents[1]


def test_a_dry_run_ends_cleanly_with_exit_code_0(pytester: pytest.Pytester) -> None:
    """No `!!! _pytest.outcomes.Exit` banner (pytest.exit's), nothing run, exit code 0."""
    write_pack(pytester.path / "packs")
    result = pytester.runpytest_subprocess("packs", "--jev-dry-run", "--jev-backend=mock")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["jev dry run tiny-pack: 5 calls, *(nothing sent)", "*no tests ran in *"])
    text = result.stdout.str() + result.stderr.str()
    assert "Exit" not in text and "!!!" not in text, text
    assert not (pytester.path / "results").exists()  # nothing was recorded


# -- registry checks are switched on explicitly, and the header says so --------------------------

def _registry(pytester: pytest.Pytester, ini: str) -> None:
    """A recorded pack with its results files and index.json at the rootdir, and `ini`."""
    write_pack(pytester.path / "packs")
    pytester.makeini("[pytest]\n")
    assert pytester.runpytest("packs", "--jev-record", "--jev-backend=mock").ret in (0, 1)
    assert pytester.runpytest("packs", "--jev-write-results", "--jev-backend=mock-0").ret in (0, 1)
    (pytester.path / "index.json").write_text('{"packs": []}\n')
    pytester.makeini(ini)


def _ids(result: pytest.RunResult) -> str:
    return result.stdout.str()


def test_an_index_json_alone_switches_no_registry_checks_on_and_the_header_says_how(pytester: pytest.Pytester
                                                                                     ) -> None:
    _registry(pytester, "[pytest]\njev_backend = mock-0\n")
    result = pytester.runpytest("packs", "--collect-only")
    assert "check[results]" not in _ids(result)
    result.stdout.fnmatch_lines(["jev: index.json is at the rootdir, but registry checks are off: set "
                                 "jev_registry = true in the ini file (or pass --jev-registry) to check results/*"])


def test_jev_registry_switches_them_on_and_the_header_names_where(pytester: pytest.Pytester) -> None:
    _registry(pytester, "[pytest]\njev_backend = mock-0\njev_registry = true\n")
    result = pytester.runpytest("packs", "--collect-only")
    assert "check[results]" in _ids(result)
    result.stdout.fnmatch_lines(["jev: registry checks on (jev_registry in tox.ini): check[results] holds "
                                 "results/ and index.json to the recordings"])
    flag = pytester.runpytest("packs", "--collect-only", "--jev-registry", "-o", "jev_registry=false")
    assert "check[results]" in _ids(flag)
    flag.stdout.fnmatch_lines(["jev: registry checks on (--jev-registry): *"])
    off = pytester.runpytest("packs", "--collect-only", "-o", "jev_registry=false")
    assert "check[results]" not in _ids(off)


def test_registry_checks_hold_only_the_registry_s_results_folder(pytester: pytest.Pytester) -> None:
    """A run into another results folder (a scratch experiment) is not the registry's: no
    check[results] asks it to publish results files, and the header says why."""
    _registry(pytester, "[pytest]\njev_backend = mock-0\njev_registry = true\n")
    result = pytester.runpytest("packs", "--jev-record", "--jev-backend=mock", "--jev-results-dir=scratch")
    assert result.ret == 0, result.stdout.str()
    assert "check[results]" not in result.stdout.str()
    result.stdout.fnmatch_lines(["jev: registry checks off for this run: --jev-results-dir scratch is not the "
                                 "registry's results/ (--jev-registry checks it too)"])
    assert (pytester.path / "scratch" / "mock-0" / "tiny-pack.predictions.jsonl").is_file()
    # asked on the command line, the run's own folder is checked (its results files, not index.json)
    asked = pytester.runpytest("packs", "--jev-backend=mock-0", "--jev-results-dir=scratch", "--jev-registry")
    asked.stdout.fnmatch_lines(["jev: registry checks on (--jev-registry): check[results] holds scratch/ to the "
                                "recordings", "*scratch/mock-0/tiny-pack.json: no results file for this recording; "
                                "refresh with *--jev-results-dir=scratch*"])
    assert asked.ret == pytest.ExitCode.TESTS_FAILED


def test_this_repository_switches_its_registry_checks_on_in_pyproject() -> None:
    """.ci/run's `pytest packs/ --jev-replay` keeps checking the registry: the ini says so."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    ini = text.split("[tool.pytest.ini_options]", 1)[1].split("\n[", 1)[0]
    assert "\njev_registry = true\n" in ini


# -- replay finds what was just recorded -----------------------------------------------------------

def test_replay_finds_the_one_backend_folder_that_holds_the_recording_and_says_which(
        pytester: pytest.Pytester) -> None:
    """One's own project, no jev_backend in its ini: record with sparrow, then a plain `pytest packs/`
    grades that recording (it used to fail: `no recording ... (tried packs/x/predictions.jsonl)`)."""
    write_pack(pytester.path / "packs")
    pytester.makeini("[pytest]\n")
    recorded = pytester.runpytest_subprocess("packs", "--jev-record", "--jev-backend=sparrow", "-p",
                                             "no:cacheprovider")
    assert recorded.ret in (0, 1), recorded.stdout.str()
    [folder] = [p.parent for p in (pytester.path / "results").glob("*/tiny-pack.predictions.jsonl")]
    assert folder.name.startswith("sparrow-")
    replay = pytester.runpytest_subprocess("packs", "-p", "no:cacheprovider")
    text = replay.stdout.str()
    assert "no recording" not in text
    outcomes = replay.parseoutcomes()
    assert outcomes.get("skipped", 0) == 0 and outcomes["passed"] >= 3, text
    replay.stdout.fnmatch_lines([f"jev: tiny-pack: graded results/{folder.name}/, the one backend folder with its "
                                 "recording (no --jev-backend or jev_backend names one)"])
    quiet = pytester.runpytest_subprocess("packs", "-q", "-p", "no:cacheprovider")
    quiet.stdout.fnmatch_lines([f"jev: tiny-pack: graded results/{folder.name}/, the one backend folder with its*"])


def test_with_several_backend_folders_replay_lists_them_and_how_to_choose(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path / "packs")
    pytester.makeini("[pytest]\n")
    assert pytester.runpytest("packs", "--jev-record", "--jev-backend=mock").ret in (0, 1)
    shutil.copytree(pytester.path / "results" / "mock-0", pytester.path / "results" / "mock-7")
    folders = sorted(p.parent.name for p in (pytester.path / "results").glob("*/tiny-pack.predictions.jsonl"))
    assert folders == ["mock-0", "mock-7"]
    replay = pytester.runpytest("packs", "-p", "no:randomly")
    assert replay.ret == pytest.ExitCode.TESTS_FAILED
    replay.stdout.fnmatch_lines([
        "*pack 'tiny-pack' has recordings in 2 backend folders (results/mock-0/, results/mock-7/) and no "
        "--jev-backend or jev_backend names one; pass --jev-backend=mock-0 (or set jev_backend = mock-0 in the ini "
        "file) to grade that one"])
    chosen = pytester.runpytest("packs", "--jev-backend=mock-7")
    assert "has recordings in 2 backend folders" not in chosen.stdout.str()
    assert chosen.parseoutcomes().get("skipped", 0) == 0


# -- the jev fixture's hints name the backend that answers -------------------------------------------

SPARROW_SERVED = "sparrow-nano-general-v1.1"
BOT = '''
def test_recorded(jev):
    assert jev.holds("a reply", "apologizes")


def test_new(jev):
    assert jev.holds("a reply", "is new")
'''


def test_an_unrecorded_answer_suggests_the_backend_its_file_was_recorded_with(pytester: pytest.Pytester) -> None:
    """The answers file was recorded with sparrow: the command that records the missing answer names
    sparrow (it named jev, which fails without a key), and the fixture's repr names the backend and
    model that answered (it said model=jev-latest while sparrow answered)."""
    write_answers(pytester.path, "test_bot", [claims_line("a reply", {"apologizes": 0.3}, backend="sparrow",
                                                          served=SPARROW_SERVED, tests=("test_recorded",))])
    pytester.makepyfile(test_bot=BOT)
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*no recorded answer for test_bot.py::test_new: holds 'is new' (any backend, "
                                 "jev_answers/test_bot.jsonl); record it with `pytest test_bot.py::test_new "
                                 "--jev-record=new_episodes --jev-backend=sparrow`"])
    result.stdout.fnmatch_lines([f"jev = <jev backend=sparrow model={SPARROW_SERVED} threshold=0.8>"])
    assert "model=jev-latest" not in result.stdout.str()


def test_the_suggested_command_records_offline_and_then_the_test_replays(pytester: pytest.Pytester) -> None:
    """The command the hint gives runs without a key (sparrow is embedded) and records the answer."""
    write_answers(pytester.path, "test_bot", [claims_line("a reply", {"apologizes": 0.3}, backend="sparrow",
                                                          served=SPARROW_SERVED, tests=("test_recorded",))])
    pytester.makepyfile(test_bot=BOT)
    pytester.makeini("[pytest]\n")
    recorded = pytester.runpytest_subprocess("test_bot.py::test_new", "--jev-record=new_episodes",
                                             "--jev-backend=sparrow", "-p", "no:cacheprovider")
    assert "no recorded answer" not in recorded.stdout.str()
    assert recorded.ret in (0, 1)
    lines = (pytester.path / "jev_answers" / "test_bot.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and all('"backend": "sparrow"' in text for text in lines)


def test_with_a_backend_named_the_repr_names_it_before_any_answer(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bot="def test_it(jev):\n    assert repr(jev) == '<jev backend=mock model=jev-latest "
                                 "threshold=0.8>'\n")
    pytester.makeini("[pytest]\n")
    assert pytester.runpytest("-p", "no:cacheprovider", "--jev-backend=mock").ret == 0


def test_an_overridden_jev_client_keeps_pytest_jev_s_repr(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('''
import pytest

class Fake:
    def system_one(self, *, state, questions, model=None):
        raise AssertionError("not asked")

@pytest.fixture(scope="session")
def jev_client():
    return Fake()
''')
    pytester.makepyfile(test_bot="def test_it(jev):\n    assert repr(jev) == '<jev model=jev-latest threshold=0.8>'\n")
    pytester.makeini("[pytest]\n")
    assert pytester.runpytest("-p", "no:cacheprovider").ret == 0


# -- this suite says once, up front, that the compatibility corpus is missing ------------------------

def _suite_header(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "tests/test_metrics.py", "--collect-only",
                           "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, check=False,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_missing_compatibility_corpus_is_said_once_in_the_header(tmp_path: Path) -> None:
    """In a fresh clone the corpus (../shared/compat/jev-packs) is not there and 14 tests skip for it;
    the header says so in one line, with the variable that points at it (-rs alone told it)."""
    missing = tmp_path / "no-corpus"
    out = _suite_header({**os.environ, "JEV_COMPAT_DIR": str(missing)})
    lines = [line for line in out.splitlines() if "compatibility corpus" in line]
    assert lines == [f"jev-packs tests: the compatibility corpus (jevassert's packs and results) is not at {missing}: "
                     "the tests that compare with it skip (set JEV_COMPAT_DIR to its folder)"]
    there = tmp_path / "corpus"
    there.mkdir()
    assert "compatibility corpus" not in _suite_header({**os.environ, "JEV_COMPAT_DIR": str(there)})


def test_a_misspelled_backend_is_refused_before_replay_with_a_guess(pytester: pytest.Pytester) -> None:
    (pytester.path / "results" / "bench").mkdir(parents=True)
    result = pytester.runpytest("--jev-backend=sparow")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: unknown backend 'sparow': no backend kind of that name, and no folder "
                                 "results/sparow; did you mean 'sparrow'? use one of: jev, mock, sparrow*"])
    # a name that is no kind but a folder of results/ is a backend folder, as before
    assert pytester.runpytest("--jev-backend=bench").ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_a_misspelled_baseline_is_refused_before_the_run_with_a_guess(pytester: pytest.Pytester) -> None:
    (pytester.path / "results" / "bench").mkdir(parents=True)
    result = pytester.runpytest("--jev-backend=bench", "--jev-baseline=sparow")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: unknown baseline 'sparow': no backend kind of that name, no folder "
                                 "results/sparow, and no file or folder sparow; did you mean 'sparrow'? use one of: "
                                 "jev, mock, sparrow*, or a folder of results/, or a recording file or folder"])
    # a kind, a folder of results/ or a path is a baseline, as before
    for baseline in ("sparrow", "bench", "old/"):
        assert pytester.runpytest("--jev-backend=bench", f"--jev-baseline={baseline}").ret \
            == pytest.ExitCode.NO_TESTS_COLLECTED



def test_a_jev_model_version_names_the_recording_a_jevassert_pack_pins(pytester: pytest.Pytester) -> None:
    """jevassert keeps the pinned (`tested`) model's recording in the pack's folder: no results/
    folder of that name exists, and the name is still no typo, as backend or as baseline."""
    folder = write_toy(pytester.path, recording="packs/toy")
    (folder / "toy.predictions.jsonl").rename(folder / "predictions.jsonl")
    pack = folder / "pack.yaml"
    pack.write_text(pack.read_text().replace("tested: null", "tested: jev-1.13.0"))
    (folder / "evidence.md").write_text("# evidence\n")
    result = pytester.runpytest("packs", "--jev-backend=jev-1.13.0", "--jev-baseline=jev-1.13.0", "-p",
                                "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["jev flips toy vs jev-1.13.0: 36 items, 0 regressed, 0 fixed, *"])
