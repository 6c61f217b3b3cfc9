"""pytest-jev 0.1.0's own test suite (the `tests/` folder of its sdist: 18 plugin tests through
pytester with a fake `jev_client`, 18 verdict tests) run against this plugin, in a venv that holds
this checkout and typesafe-sdk but not pytest-jev (tests/peer_env.py).

Each of its 36 tests is an item here that passes when the peer test passes under our plugin,
except the differences we keep on purpose (KEPT): those are strict xfails, with the reason, and
our own behaviour in that case has a test of its own below. docs/fixture.md's migration table
explains each. The suite is also run against pytest-jev itself, where all 36 must pass, so a
peer test that fails here fails because of us, not because the suite does not run.
"""

from __future__ import annotations

import ast
import fcntl
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fixture_helpers import outcomes
from peer_env import KEYS, PeerUnavailable, peer_env, peer_python, sdist_dir, unavailable
from pytestjev_env import PytestJevUnavailable, ensure_pytest_jev

import pytest_jev.fixture.live  # noqa: F401  asyncio loads here, not inside a pytester run that would drop it
from pytest_jev.fixture.answers import read_lines

pytestmark = pytest.mark.slow

PLUGIN = "tests/test_plugin.py::"
VERDICTS = "tests/test_verdicts.py::"
PEER_TESTS = [PLUGIN + name for name in (
    "test_holds_and_lacks_pass", "test_failed_claim_shows_the_probability",
    "test_expect_asks_every_claim_in_one_request", "test_expect_reports_every_claim_when_one_fails",
    "test_context_goes_into_the_state", "test_choice_mismatch_shows_the_distribution",
    "test_choice_accepts_bare_labels", "test_score_compares_probability_mass",
    "test_marker_overrides_threshold_and_model", "test_command_line_options_set_defaults",
    "test_ini_options_set_defaults", "test_threshold_below_one_half_is_a_usage_error",
    "test_answers_are_cached_between_runs", "test_cache_is_keyed_on_the_question",
    "test_tests_are_marked_so_they_can_be_deselected", "test_request_errors_fail_the_test",
    "test_without_a_key_jev_tests_are_skipped", "test_jev_require_fails_without_a_key",
)] + [VERDICTS + name for name in (
    "test_claim_thresholds[0.95-True-False]", "test_claim_thresholds[0.8-True-False]",
    "test_claim_thresholds[0.79-False-False]", "test_claim_thresholds[0.5-False-False]",
    "test_claim_thresholds[0.21-False-False]", "test_claim_thresholds[0.2-False-True]",
    "test_claim_thresholds[0.02-False-True]", "test_claim_repr_says_what_it_needed",
    "test_claims_report_lists_every_claim", "test_claims_report_shortens_long_text",
    "test_choice_compares_with_labels", "test_choice_rejects_labels_that_are_not_options",
    "test_choice_explains_a_mismatch", "test_score_comparisons_use_probability_mass",
    "test_score_comparisons_respect_the_threshold", "test_score_reflected_comparisons_match",
    "test_score_rejects_unknown_levels", "test_score_explains_a_failed_comparison",
)]

# The differences we keep on purpose (docs/fixture.md, "Migrating from pytest-jev"), each with the
# test of our own behaviour in that case.
KEPT = {
    PLUGIN + "test_without_a_key_jev_tests_are_skipped":
        "kept: without a key pytest-jev skips a test whose answer is not cached; here answers are committed "
        "files, so an unrecorded answer fails with the command that records it and a recorded one passes "
        "without a key (test_without_a_key_an_unrecorded_answer_fails_and_a_recorded_one_passes)",
    PLUGIN + "test_jev_require_fails_without_a_key":
        "kept: the test fails, as pytest-jev's --jev-require makes it, but with our line (no recorded answer, "
        "and the command that records it) instead of 'pytest-jev: no API key found': replay needs no key "
        "(test_jev_require_changes_nothing_and_says_so)",
}


@pytest.fixture(scope="session")
def sdist() -> Path:
    try:
        return sdist_dir()
    except (PeerUnavailable, OSError, subprocess.SubprocessError) as exc:
        unavailable("pytest-jev 0.1.0's sdist", exc)
        raise AssertionError("unreachable") from exc


def _shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every xdist worker of this session shares (the session's own when serial)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def run_peer_suite(python: Path, sdist: Path, folder: Path) -> dict[str, dict[str, str]]:
    """pytest-jev's tests/ and pyproject.toml (its pytest settings) copied to `folder`/suite and run
    there by `python`: node id -> {"outcome", "message"} from the JUnit XML. The pytester folders
    go beside it, not inside: under the suite's pyproject.toml, every inner run would take that
    folder as its rootdir and share one .pytest_cache (pytest-jev's cache tests then fail)."""
    suite = folder / "suite"
    shutil.copytree(sdist / "tests", suite / "tests")
    shutil.copy(sdist / "pyproject.toml", suite / "pyproject.toml")
    report = folder / "junit.xml"
    done = subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "--color=no",
                           f"--junitxml={report}", f"--basetemp={folder / 'tmp'}"], cwd=suite, env=peer_env(),
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode in (0, 1) and report.is_file(), done.stdout[-4000:] + done.stderr[-4000:]
    found = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        nodeid = case.get("classname", "").replace(".", "/") + ".py::" + case.get("name", "")
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            child = case.find(kind)
            if child is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[kind]
                message = (child.get("message") or "") + "\n" + (child.text or "")
                break
        found[nodeid] = {"outcome": outcome, "message": message}
    return found


def _once(tmp_path_factory: pytest.TempPathFactory, name: str, run: Any) -> dict[str, dict[str, str]]:
    """`run(folder)` once per session, whichever xdist worker asks first; the others read its result."""
    shared = _shared(tmp_path_factory)
    result = shared / f"{name}.json"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not result.is_file():
                folder = shared / name
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                result.write_text(json.dumps(run(folder)))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    loaded: dict[str, dict[str, str]] = json.loads(result.read_text())
    return loaded


def _suite(sdist: Path, tmp_path_factory: pytest.TempPathFactory, side: str, what: str,
           python_of: Callable[[], Path]) -> dict[str, dict[str, str]]:
    """pytest-jev's suite run by the python `python_of()` gives (skipped, naming `what`, when that
    environment cannot be built)."""
    try:
        python = python_of()
    except (PeerUnavailable, PytestJevUnavailable, OSError, subprocess.SubprocessError) as exc:
        unavailable(what, exc)
        raise AssertionError("unreachable") from exc
    return _once(tmp_path_factory, f"peer-suite-{side}", lambda folder: run_peer_suite(python, sdist, folder))


@pytest.fixture(scope="session")
def ours(sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """pytest-jev's suite against this checkout's plugin."""
    return _suite(sdist, tmp_path_factory, "ours", "the venv with this checkout and typesafe-sdk", peer_python)


@pytest.fixture(scope="session")
def theirs(sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """pytest-jev's suite against pytest-jev 0.1.0 itself (tests/pytestjev_env.py's venv)."""
    return _suite(sdist, tmp_path_factory, "theirs", "pytest-jev 0.1.0", ensure_pytest_jev)


def test_the_suite_is_the_36_tests_named_here(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    assert sorted(ours) == sorted(PEER_TESTS)
    assert sorted(theirs) == sorted(PEER_TESTS)


def test_every_peer_test_passes_on_pytest_jev_itself(theirs: dict[str, dict[str, str]]) -> None:
    assert {nodeid: got["outcome"] for nodeid, got in theirs.items() if got["outcome"] != "passed"} == {}


@pytest.mark.parametrize("peer_test", [
    pytest.param(nodeid, marks=pytest.mark.xfail(strict=True, reason=KEPT[nodeid])) if nodeid in KEPT else nodeid
    for nodeid in PEER_TESTS])
def test_peer(ours: dict[str, dict[str, str]], peer_test: str) -> None:
    got = ours.get(peer_test, {"outcome": "not collected", "message": ""})
    assert got["outcome"] == "passed", f"{peer_test}: {got['outcome']}\n{got['message'][-3000:]}"


def test_at_least_34_of_36_pass_and_only_the_kept_differences_fail(ours: dict[str, dict[str, str]]) -> None:
    failing = {nodeid for nodeid, got in ours.items() if got["outcome"] != "passed"}
    assert failing == set(KEPT) and len(ours) - len(failing) >= 34


# -- what pytest-jev's sdist names must import, and every flag and ini key of it ------------------

def _all_of(path: Path) -> list[str]:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{path} has no __all__")


def test_pytest_jev_public_names_import_from_us(sdist: Path) -> None:
    import importlib

    import pytest_jev

    public = _all_of(sdist / "src" / "pytest_jev" / "__init__.py")
    assert {"Jev", "Claim", "Claims", "ChoiceVerdict", "ScoreVerdict", "__version__"} <= set(public)
    for name in public:
        assert name in pytest_jev.__all__ and getattr(pytest_jev, name) is not None, name
    from importlib.metadata import version

    assert pytest_jev.__version__ == version("jev-packs")
    # every `from pytest_jev... import X` in pytest-jev's tests and examples
    used: dict[str, set[str]] = {}
    for path in [*(sdist / "tests").glob("*.py"), *(sdist / "examples").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pytest_jev"):
                used.setdefault(str(node.module), set()).update(alias.name for alias in node.names)
    assert used == {"pytest_jev.verdicts": {"ChoiceVerdict", "Claim", "Claims", "ScoreVerdict"}}
    import pytest_jev.fixture

    for module, names in used.items():
        for name in names:  # the very classes the jev fixture returns
            assert getattr(importlib.import_module(module), name) is getattr(pytest_jev.fixture, name)
            assert getattr(pytest_jev, name) is getattr(pytest_jev.fixture, name)
    assert pytest_jev.Jev is importlib.import_module("pytest_jev.fixture.judge").Jev


def test_import_pytest_jev_stays_cheap() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys, pytest_jev; print(sorted(m for m in sys.modules "
                           "if m.split('.')[0] in ('pytest_jev', 'numpy', 'httpx', 'pytest', 'jsonschema')))"],
                          capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout.replace("'", '"')))
    assert "pytest_jev.fixture" not in loaded and not {"numpy", "httpx", "pytest", "jsonschema"} & loaded


def _options_of(sdist: Path) -> tuple[set[str], set[str]]:
    """(flags, ini keys) pytest-jev's plugin registers."""
    flags, inis = set(), set()
    for node in ast.walk(ast.parse((sdist / "src" / "pytest_jev" / "plugin.py").read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args \
                and isinstance(node.args[0], ast.Constant):
            if node.func.attr == "addoption":
                flags.add(node.args[0].value)
            elif node.func.attr == "addini":
                inis.add(node.args[0].value)
    return flags, inis


NOTES = {
    "--jev-provider": "jev: --jev-provider=typesafe (pytest-jev): used only when recording: --jev-record would "
                      "record with --jev-backend=jev",
    "--jev-no-cache": "jev: --jev-no-cache (pytest-jev): an overridden jev_client is asked again, not answered "
                      "from .pytest_cache; recorded answers replay as committed (--jev-record=all asks them again)",
    "--jev-require": "jev: --jev-require (pytest-jev): nothing to require: an answer that is not recorded fails "
                     "its test, key or no key",
}


def test_every_pytest_jev_flag_and_ini_key_is_accepted_and_says_what_it_does(
        sdist: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI line written for pytest-jev, every flag of it at once, and then every ini key: the run
    goes as it would without them, and each new flag says in one line what it did."""
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    flags, inis = _options_of(sdist)
    assert flags == {"--jev-model", "--jev-threshold", "--jev-provider", "--jev-no-cache", "--jev-require"}
    assert inis == {"jev_model", "jev_threshold", "jev_provider", "jev_require"}
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("--jev-model", "jev-1.13", "--jev-threshold", "0.9", "--jev-provider", "typesafe",
                                "--jev-no-cache", "--jev-require")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*- jev -*", *NOTES.values()])
    pytester.makeini("[pytest]\njev_model = jev-1.13\njev_threshold = 0.9\njev_provider = openrouter\n"
                     "jev_require = true\n")
    result = pytester.runpytest("-W", "error::pytest.PytestConfigWarning")  # an unknown ini key would warn
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["jev: jev_provider = openrouter (ini) (pytest-jev): used only when recording: "
                                 "--jev-record would record with --jev-backend=openrouter",
                                 "jev: jev_require = true (ini) (pytest-jev): nothing to require*"])
    assert "--jev-no-cache" not in result.stdout.str()


def test_a_bad_provider_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--jev-provider", "azure")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --jev-provider='azure' is not one of: typesafe, openrouter, auto *"])


# -- our behaviour where we keep a difference ---------------------------------------------------

UNRECORDED = '''
def test_uses_jev(jev):
    assert jev.holds("x", "y")

def test_plain():
    pass
'''


def test_without_a_key_an_unrecorded_answer_fails_and_a_recorded_one_passes(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-jev skips a test it cannot ask Jev for without a key. Here answers are committed:
    without one the test fails (CI never passes by skipping) naming the command that records it;
    recorded (here by the mock backend, offline) it passes with no key and no request."""
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    pytester.makepyfile(test_k=UNRECORDED)
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*jev: no recorded answer for test_k.py::test_uses_jev: holds 'y' (any backend, "
                                 "jev_answers/test_k.jsonl); record it with `pytest test_k.py::test_uses_jev "
                                 "--jev-record=new_episodes --jev-backend=jev`*"])
    assert "skipped" not in result.stdout.str().lower().split("short test summary")[-1]
    recorded = pytester.runpytest("-p", "no:cacheprovider", "-rA", "--jev-record", "--jev-backend=mock")
    assert (pytester.path / "jev_answers" / "test_k.jsonl").is_file()
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    assert "no recorded answer" not in result.stdout.str()
    result.stdout.fnmatch_lines(["jev: 1 question · 0 requests + 1 replayed · 0 input tokens · $0 · *"])
    assert outcomes(result.stdout.str()) == outcomes(recorded.stdout.str())  # the mock's verdict, whatever it is


def test_jev_require_changes_nothing_and_says_so(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """--jev-require (and jev_require) fail what is not answered, as they do in pytest-jev, because
    that is what happens here anyway: the outcome and the failure line are the same with or without."""
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    pytester.makepyfile(test_k=UNRECORDED)
    plain = pytester.runpytest("-p", "no:cacheprovider")
    required = pytester.runpytest("-p", "no:cacheprovider", "--jev-require")
    plain.assert_outcomes(passed=1, failed=1)
    required.assert_outcomes(passed=1, failed=1)

    def failure(result: pytest.RunResult) -> list[str]:
        return [line for line in result.stdout.lines if line.startswith("jev: no recorded answer")]

    assert failure(required) == failure(plain) and len(failure(plain)) == 1
    required.stdout.fnmatch_lines([NOTES["--jev-require"]])
    assert "--jev-require" not in plain.stdout.str()


# -- --jev-provider: the backend that records -----------------------------------------------------

def test_provider_names_the_backend_as_pytest_jev_chooses_it() -> None:
    from pytest_jev.errors import OptionError
    from pytest_jev.options import provider_backend

    assert provider_backend("typesafe", {}) == "jev" and provider_backend("openrouter", {}) == "openrouter"
    both = {"OPENROUTER_API_KEY": "or-key", "TYPESAFE_API_KEY": "ts-key"}
    assert provider_backend("auto", both) == "openrouter"  # pytest-jev's auto prefers OpenRouter
    assert provider_backend("auto", {"TYPESAFE_API_KEY": "ts-key", "OPENROUTER_API_KEY": " "}) == "jev"
    with pytest.raises(OptionError, match=r"^pytest-jev: no API key found, set TYPESAFE_API_KEY or "
                                          r"OPENROUTER_API_KEY \(--jev-provider=auto"):
        provider_backend("auto", {})


def test_a_provider_is_parsed_once_into_the_run_s_backend_spec(pytester: pytest.Pytester,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Options carry the provider as an enum, the backend it names as a BackendSpec the catalog
    parsed (only when something is recorded or dry-run), and where each flag was set, which is
    all fixture/migration.py reads."""
    from pytest_jev.backends.kinds import BackendSpec
    from pytest_jev.options import Provider, Source, options_of

    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    options = options_of(pytester.parseconfigure("--jev-provider=openrouter", "--jev-dry-run"))
    assert options.provider is Provider.OPENROUTER and isinstance(options.backend, BackendSpec)
    assert options.backend.kind == "openrouter" and options.backend.known is not None
    assert options.source("jev-provider") is Source.COMMAND_LINE and options.source("jev-backend") is None
    replay = options_of(pytester.parseconfigure("--jev-provider=typesafe"))
    assert replay.provider is Provider.TYPESAFE and replay.backend is None  # replay: any backend's answers
    pytester.makeini("[pytest]\njev_provider = typesafe\njev_require = true\njev_backend = mock\n")
    named = options_of(pytester.parseconfigure("--jev-record"))
    assert named.backend is not None and named.backend.kind == "mock"  # --jev-backend wins
    assert named.source("jev-provider") is named.source("jev-require") is named.source("jev-backend") is Source.INI
    assert named.require and named.source("jev-record") is Source.COMMAND_LINE


def test_recording_with_a_provider(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    pytester.makepyfile(test_k=UNRECORDED)
    result = pytester.runpytest("--jev-record", "--jev-provider=auto")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-jev: no API key found, set TYPESAFE_API_KEY or OPENROUTER_API_KEY *"])
    result = pytester.runpytest("--jev-record", "--jev-provider=typesafe")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *TYPESAFE_API_KEY*"])  # backend jev, whose key is missing
    # --jev-backend wins, and the summary says the provider was not used
    result = pytester.runpytest("-p", "no:cacheprovider", "--jev-record", "--jev-provider=openrouter",
                                "--jev-backend=mock")
    result.stdout.fnmatch_lines(["jev: --jev-provider=openrouter (pytest-jev): not used: --jev-backend=mock names "
                                 "the backend that records"])
    [line] = read_lines(pytester.path / "jev_answers" / "test_k.jsonl").values()
    assert line.backend == "mock"


def test_a_pytest_jev_ci_line_records_with_jev_through_its_provider(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--jev-provider typesafe` records with the `jev` backend: here against a real Jev-compatible
    replica (sparrow-decider serve), with a key as the backend needs one."""
    from servers import sparrow_replica

    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("TYPESAFE_API_KEY", "tsk-test-provider-0123456789")
    pytester.makepyfile(test_k=UNRECORDED)
    with sparrow_replica() as url:
        result = pytester.runpytest("-p", "no:cacheprovider", "--jev-provider", "typesafe", "--jev-require",
                                    "--jev-record", f"--jev-base-url={url.rstrip('/')}")
    result.stdout.fnmatch_lines(["jev: --jev-provider=typesafe (pytest-jev): recording with --jev-backend=jev",
                                 "jev: --jev-require (pytest-jev): *",
                                 "jev: 1 question · 1 request · * s in jev · sparrow-nano-general-v1.1",
                                 "jev: wrote jev_answers/test_k.jsonl: 1 new, 0 re-recorded"])
    [line] = read_lines(pytester.path / "jev_answers" / "test_k.jsonl").values()
    assert line.backend == "jev"


# -- switching: the same project, the same CI line, pytest-jev's venv and then ours ---------------

SWITCH_INI = '''[tool.pytest.ini_options]
jev_model = "jev-latest"
jev_threshold = "0.8"
jev_provider = "typesafe"
jev_require = true
'''
CI_LINE = ["-m", "pytest", "--jev-require", "--jev-provider", "typesafe", "-rA", "--color=no"]


def test_switching_is_one_line_of_requirements(tmp_path: Path) -> None:
    """A project written for pytest-jev (its ini keys, a conftest overriding jev_client, its CI line
    with --jev-require and --jev-provider) runs unchanged once jev-packs replaces pytest-jev: the
    same outcomes and failure text, and the second run answers from the cache as pytest-jev's does."""
    from fixture_helpers import failure_text
    from fixture_suite import FAKE_CONFTEST, SUITE

    try:
        before, after = ensure_pytest_jev(), peer_python()
    except (PytestJevUnavailable, PeerUnavailable, OSError, subprocess.SubprocessError) as exc:
        unavailable("pytest-jev 0.1.0 or the venv with this checkout", exc)
        raise AssertionError("unreachable") from exc
    runs: dict[str, list[str]] = {}
    for name, python in (("pytest-jev", before), ("jev-packs", after)):
        project = tmp_path / name
        (project / "tests").mkdir(parents=True)
        (project / "tests" / "test_suite.py").write_text(SUITE)
        (project / "tests" / "conftest.py").write_text(FAKE_CONFTEST)
        (project / "pyproject.toml").write_text(SWITCH_INI)
        runs[name] = [subprocess.run([str(python), *CI_LINE, *extra], cwd=project, env=peer_env(),
                                     capture_output=True, text=True, timeout=300, check=False).stdout
                      for extra in ([], [], ["--jev-no-cache"])]
    for theirs, ours in zip(runs["pytest-jev"], runs["jev-packs"]):
        assert outcomes(ours) == outcomes(theirs) and len(outcomes(ours)) == 49
        assert failure_text(ours) == failure_text(theirs)
        summary = [line.split(" · ")[:4] for line in (theirs, ours)
                   for line in line.splitlines() if line.startswith("jev: ") and " questions · " in line]
        assert len(summary) == 2 and summary[0] == summary[1]  # questions, requests (+ cached), tokens, cost
    assert " · 0 requests + " in runs["jev-packs"][1] and " cached · " in runs["jev-packs"][1]
