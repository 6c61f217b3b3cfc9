"""Differential: the same pytest-jev style suite and `jev_client` fake under pytest-jev 0.1.0 (in its
own venv, tests/pytestjev_env.py) and under our fixture, serial and with -n 2: every test must get
the same outcome and every failure the same text (the `E` lines pytest prints)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fixture_helpers import failure_text, outcomes
from fixture_suite import FAKE_CONFTEST, SUITE
from jevassert_env import clean_env
from pytestjev_env import VERSION, PytestJevUnavailable, ensure_pytest_jev

pytestmark = pytest.mark.slow

CONFIGS = {
    "defaults": [],
    "flag-threshold": ["--jev-threshold=0.9"],
    "ini-threshold": ["-o", "jev_threshold=0.7"],
    "not-jev": ["-m", "not jev"],
    "only-jev": ["-m", "jev", "--jev-model=jev-strict"],
}
SUMMARY = re.compile(r"^jev: \d+ questions? · .*? · \$[0-9.]+")


@pytest.fixture(scope="module")
def theirs() -> Path:
    """The python of pytest-jev's venv. Unavailable, the differential FAILS (it must never pass by
    skipping) unless JEV_ALLOW_NO_PYTEST_JEV=1 turns that into a skip."""
    try:
        return ensure_pytest_jev()
    except (PytestJevUnavailable, OSError, subprocess.SubprocessError) as exc:
        why = f"pytest-jev {VERSION} is not available for the differential tests: {exc}"
    if os.environ.get("JEV_ALLOW_NO_PYTEST_JEV") == "1":
        pytest.skip(why)
    pytest.fail(f"{why}\nSet JEV_ALLOW_NO_PYTEST_JEV=1 to skip instead, or PYTEST_JEV_PYTHON=/path/to/python.",
                pytrace=False)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pytest-jev-suite")
    (folder / "test_suite.py").write_text(SUITE)
    (folder / "conftest.py").write_text(FAKE_CONFTEST)
    (folder / "pytest.ini").write_text("[pytest]\n")
    return folder


def run(python: Path | str, project: Path, *args: str) -> str:
    """One pytest run with only the plugins named (pytest-jev's and ours are both `pytest_jev.plugin`)."""
    env = {**clean_env(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_ADDOPTS": ""}
    done = subprocess.run([str(python), "-m", "pytest", "-p", "pytest_jev.plugin", "-p", "no:cacheprovider", "-rA",
                           "--color=no", *args], cwd=project, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode in (0, 1, 5), done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def summary(out: str) -> str:
    """pytest-jev's summary line up to the cost (the rest names where the time went)."""
    found = [m.group(0) for line in out.splitlines() if (m := SUMMARY.match(line))]
    return found[0] if found else ""


@pytest.mark.parametrize("config", list(CONFIGS))
def test_same_outcomes_and_failure_text_as_pytest_jev(theirs: Path, project: Path, config: str) -> None:
    args = CONFIGS[config]
    expected = run(theirs, project, *args)
    ours = run(sys.executable, project, *args)
    assert outcomes(ours) == outcomes(expected)
    assert len(outcomes(expected)) == (1 if config == "not-jev" else 48 if config == "only-jev" else 49)
    assert failure_text(ours) == failure_text(expected)
    assert summary(ours) == summary(expected)
    parallel = run(sys.executable, project, "-p", "xdist.plugin", "-n", "2", *args)
    assert outcomes(parallel) == outcomes(expected)
    assert failure_text(parallel) == failure_text(expected)
    assert summary(parallel) == summary(expected)
