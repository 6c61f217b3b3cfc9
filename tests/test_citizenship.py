"""pytest citizenship: pack items behave like any test under pytest's own selection and reporting,
on pytest 8 and pytest 9: --lf, --ff, --sw, --deselect, a printed node id run again, -q/-qq,
and recording exactly what collection selected."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_pack

PYTEST8 = "8.4.2"


@pytest.fixture(scope="session")
def pythons() -> dict[str, str]:
    from altpytest import pytest_python

    return {"pytest9": sys.executable, "pytest8": str(pytest_python(PYTEST8))}


@pytest.fixture(params=["pytest9", "pytest8"])
def run(request: pytest.FixtureRequest, pythons: dict[str, str], pytester: pytest.Pytester):
    """Run pytest (the version of the param) in the pytester folder; (exit code, stdout)."""
    python = pythons[request.param]

    def runner(*args: str) -> tuple[int, str]:
        done = subprocess.run([python, "-m", "pytest", "-p", "no:randomly", *args], cwd=pytester.path,
                              capture_output=True, text=True, timeout=120, check=False)
        return done.returncode, done.stdout + done.stderr
    return runner


def counts(out: str) -> dict[str, int]:
    last = [line for line in out.splitlines() if re.search(r"\d+ (passed|failed|deselected|mismatched)", line)][-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", last)}


@pytest.fixture
def strict_toy(pytester: pytest.Pytester) -> Path:
    """The toy pack with two wrong cases, made failures by --jev-strict in the ini file."""
    folder = write_pack(pytester.path, wrong={2, 5})
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\njev_strict = true\n")
    return folder


def test_last_failed_reruns_only_the_failures(run, strict_toy: Path) -> None:
    code, out = run("packs")
    assert code == 1 and counts(out) == {"failed": 2, "passed": 14, "skipped": 1}
    code, out = run("packs", "--lf")
    assert counts(out) == {"failed": 2}, out  # pytest filters the passed items while collecting
    assert "run-last-failure: rerun previous 2 failures" in out


def test_failed_first_runs_the_failures_first(run, strict_toy: Path) -> None:
    run("packs")
    _code, out = run("packs", "--ff", "-v")
    ran = [line.split()[0] for line in out.splitlines()
           if line.startswith("packs/toy/pack.yaml::") and re.search(r" (PASSED|FAILED) ", line)]
    assert ran[:2] == ["packs/toy/pack.yaml::case[toy-0002]", "packs/toy/pack.yaml::case[toy-0005]"], out
    assert len(ran) == 16


def test_stepwise_stops_at_a_failure_and_resumes_there(run, strict_toy: Path) -> None:
    _code, out = run("packs", "--sw")
    assert counts(out) == {"failed": 1, "passed": 3, "skipped": 1}, out  # spec, recording, rubric, case 1, case 2
    _code, out = run("packs", "--sw", "-v")  # resumes at the failure, which fails again: stop there
    assert counts(out) == {"failed": 1, "deselected": 4}, out
    assert re.search(r"^packs/toy/pack\.yaml::case\[toy-0002\] FAILED", out, re.M), out
    _code, out = run("packs", "--sw", "--sw-skip")  # step over it: the next failure is case 5
    assert counts(out) == {"failed": 2, "passed": 2, "deselected": 4}, out


def test_deselect_takes_one_item_out(run, strict_toy: Path) -> None:
    _code, out = run("packs", "--deselect", "packs/toy/pack.yaml::gate[min_accuracy]")
    assert counts(out) == {"failed": 2, "passed": 13, "skipped": 1, "deselected": 1}, out


def test_a_printed_node_id_runs_that_item_alone(run, strict_toy: Path) -> None:
    _code, out = run("packs")
    printed = re.search(r"FAILED (packs/toy/pack\.yaml::case\[toy-0005\])", out)
    assert printed, out
    _code, out = run(printed.group(1), "-v")
    assert counts(out) == {"failed": 1}, out
    assert "packs/toy/pack.yaml::case[toy-0005] FAILED" in out


def test_quiet_shortens_the_summary_as_pytest_does(pytester: pytest.Pytester, toy: Path) -> None:
    full = pytester.runpytest("packs").stdout.str()
    assert "=== jev: toy v0.1.0 ===" in full and "question " in full and "jev mismatches: " in full
    quiet = pytester.runpytest("packs", "-q").stdout.str()
    assert "question " not in quiet and "jev mismatches: " not in quiet
    assert re.search(r"^jev toy v0\.1\.0: accuracy 0\.833 \(0\.\d+-0\.\d+\) against a 0\.\d+ majority-label baseline, "
                     r"ECE 0\.\d+, 36 items, 2 cases mismatched, 2 gates, 0 failed "
                     r"\(results/jev-1\.13\.0/toy\.predictions\.jsonl\)$", quiet, re.M), quiet
    very = pytester.runpytest("packs", "-qq").stdout.str()
    assert "jev" not in very.replace("pytest_jev", ""), very


def test_replay_and_record_together_is_a_usage_error(pytester: pytest.Pytester, toy: Path) -> None:
    result = pytester.runpytest("packs", "--jev-replay", "--jev-record", "--jev-backend=mock")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--jev-replay and --jev-record=new_episodes contradict each other*drop one*"])


def two_packs(root: Path) -> None:
    """alpha and rag-beta, without recordings; the mock backend records them."""
    write_pack(root, pack_id="alpha", recording=None)
    write_pack(root, pack_id="rag-beta", n=6, recording=None)


def recorded(root: Path) -> dict[str, list[str]]:
    """pack id -> case ids in its mock recording."""
    out = {}
    for path in sorted((root / "results" / "mock-0").glob("*.predictions.jsonl")):
        out[path.name.split(".")[0]] = [json.loads(x)["case_id"] for x in path.read_text().splitlines()]
    return out


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]])
def test_recording_follows_the_selection(pytester: pytest.Pytester, xdist: list[str]) -> None:
    two_packs(pytester.path)
    mock = ["--jev-record", "--jev-backend=mock", "-p", "no:cacheprovider", *xdist]
    pytester.runpytest_subprocess("packs", "--collect-only", *mock)
    assert not (pytester.path / "results").exists()  # --collect-only calls (and bills) nothing
    pytester.runpytest_subprocess("packs", "-k", "rag", *mock)
    assert recorded(pytester.path) == {"rag-beta": [f"rag-beta-{i:04d}" for i in range(1, 7)]}
    result = pytester.runpytest_subprocess("packs", "--deselect", "packs/alpha/pack.yaml::case[alpha-0001]",
                                           "-k", "alpha", *mock)
    got = recorded(pytester.path)
    assert got["alpha"] == [f"alpha-{i:04d}" for i in range(1, 13)]  # its gates need every case
    assert "jev recorded alpha: 12 called, 0 reused" in result.stdout.str()


def test_ignored_packs_and_unselected_cases_are_not_recorded(pytester: pytest.Pytester) -> None:
    two_packs(pytester.path)
    mock = ["--jev-record", "--jev-backend=mock", "-p", "no:cacheprovider"]
    pytester.runpytest_subprocess("packs", "--ignore=packs/rag-beta", *mock)
    assert list(recorded(pytester.path)) == ["alpha"]  # an ignored pack is not called
    (pytester.path / "results/mock-0/alpha.predictions.jsonl").unlink()
    pytester.runpytest_subprocess("packs/alpha/pack.yaml::case[alpha-0003]", "packs/alpha/pack.yaml::case[alpha-0007]",
                                  *mock)
    assert recorded(pytester.path) == {"alpha": ["alpha-0003", "alpha-0007"]}  # only the selected cases


def test_recording_a_subset_keeps_every_other_line(pytester: pytest.Pytester) -> None:
    two_packs(pytester.path)
    mock = ["--jev-record", "--jev-backend=mock", "-p", "no:cacheprovider"]
    pytester.runpytest_subprocess("packs/alpha", *mock)
    before = (pytester.path / "results/mock-0/alpha.predictions.jsonl").read_text().splitlines()
    result = pytester.runpytest_subprocess("packs/alpha/pack.yaml::case[alpha-0004]", "--jev-record=all",
                                           "--jev-backend=mock", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["jev recorded alpha (1 selected cases): 1 called, 0 reused*"])
    after = (pytester.path / "results/mock-0/alpha.predictions.jsonl").read_text().splitlines()
    assert len(after) == 12
    assert [a for i, a in enumerate(after) if i != 3] == [b for i, b in enumerate(before) if i != 3]


PREPARE_PROBE = """
import os, pathlib
import pytest_jev.evaluate as ev
_prepare = ev.prepare
def counted(pack, *args, **kwargs):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(f"prepared-{worker}.txt", "a") as f:
        f.write(pack.id + "\\n")
    return _prepare(pack, *args, **kwargs)
ev.prepare = counted
"""


def test_under_xdist_each_pack_is_graded_once(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, pack_id="alpha")
    write_pack(pytester.path, pack_id="beta", n=30)
    write_pack(pytester.path, pack_id="gamma", n=5)
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    pytester.makeconftest(PREPARE_PROBE)
    result = pytester.runpytest_subprocess("packs", "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=16 + 34 + 9, skipped=3)  # check[rubric]: no fingerprints
    graded = sorted(line for path in pytester.path.glob("prepared-*.txt") for line in path.read_text().split())
    assert graded == ["alpha", "beta", "gamma"]  # once each, by whichever worker ran the pack
    assert len(list(pytester.path.glob("prepared-gw*.txt"))) == 2  # and both workers had work


def test_the_plugin_uses_public_pytest_api_only() -> None:
    root = Path(__file__).resolve().parents[1] / "pytest_jev"
    offenders = [str(path) for path in root.rglob("*.py")
                 if re.search(r"\b_pytest\b|sys\._getframe|\bprint\(", path.read_text(encoding="utf-8"))
                 and path.name != "cli.py"]  # the command-line tool prints; the plugin writes through pytest
    assert offenders == []
