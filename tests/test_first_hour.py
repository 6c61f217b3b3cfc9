"""A new user's first hour (issue 19): what a run says at its ends. A dry run ends cleanly; a run
in a registry says the registry checks are on, and why."""

from __future__ import annotations

from pathlib import Path

import pytest
from packfiles import write_pack

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
                                 "registry's results/"])
    assert (pytester.path / "scratch" / "mock-0" / "tiny-pack.predictions.jsonl").is_file()


def test_this_repository_switches_its_registry_checks_on_in_pyproject() -> None:
    """.ci/run's `pytest packs/ --jev-replay` keeps checking the registry: the ini says so."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    ini = text.split("[tool.pytest.ini_options]", 1)[1].split("\n[", 1)[0]
    assert "\njev_registry = true\n" in ini
