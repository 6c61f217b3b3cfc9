"""The `jev` fixture replaying N semantic assertions from its answers file, side by side with
pytest-jev 0.1.0 re-running the same test file from its warm .pytest_cache.

    python benchmarks/bench_fixture.py [--assertions 2000] [--pairs 5] [--pytest-jev-python PATH]

One test file, N/4 tests of 4 assertions each (holds, lacks, choice ==, score >=), every
assertion a distinct request that passes. pytest-jev's cache is warmed by one run whose
conftest overrides `jev_client` with a fake; the timed runs have no conftest, so every answer
is a cache hit (its default client, which would need a key, is never called). Ours replays
tests/jev_answers/test_bench.jsonl, written by this script from the same fake answers with the
fixture's own fingerprints. Both sides run `python -m pytest -q` with plugin autoloading off
and their plugin loaded with `-p pytest_jev.plugin` (the module name both packages use), the
cache provider on; the runs alternate (this shared machine's speed drifts) and the table
gives the median and best wall time of each side, start-up included.

pytest-jev comes from its own venv (tests/pytestjev_env.py builds it under the tests' cache
folder), since it installs a module named pytest_jev too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from pytestjev_env import ensure_pytest_jev

from pytest_jev.fixture.answers import make_line, render
from pytest_jev.wire import Request, fingerprints

TEAMS = ["billing", "technical", "account", "other"]
LEVELS = ["rude", "neutral", "warm"]

TEST = '''
def test_{i}(jev):
    reply = "Reply number {i}: sorry, your payment was refunded."
    assert jev.holds(reply, "apologizes to customer {i}")
    assert jev.lacks(reply, "blames customer {i}")
    assert jev.choice(reply, "Which team handles ticket {i}?", TEAMS) == "billing"
    assert jev.score(reply, "How polite is reply {i}?", LEVELS) >= "neutral"
'''

ANSWERS = '''
def answers(questions):
    """What the fake answers: every assertion of the bench file passes."""
    out = {}
    for name, q in questions.items():
        if q["type"] == "noul":
            out[name] = {"type": "noul", "noul": 0.97 if "apologizes" in q["instructions"] else 0.02}
        elif q["type"] == "choice":
            out[name] = {"type": "choice", "choice": "billing", "confidence": 0.9,
                         "probabilities": {"billing": 0.94, "technical": 0.04, "account": 0.01, "other": 0.01}}
        else:
            out[name] = {"type": "score", "score": 1.7, "confidence": 0.8,
                         "probabilities": {"0": 0.05, "1": 0.2, "2": 0.75}}
    return out
'''

FAKE = ANSWERS + '''
import pytest
from types import SimpleNamespace as NS


class Fake:
    def system_one(self, *, state, questions, model):
        got = answers(questions)
        return NS(model="jev-1.13.0", usage=NS(input_tokens=120), answers={n: NS(**a) for n, a in got.items()})


@pytest.fixture(scope="session")
def jev_client():
    return Fake()
'''


def fake_answers(questions: dict[str, Any]) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(ANSWERS, namespace)  # the very function the fake conftest answers with
    result: dict[str, Any] = namespace["answers"](questions)
    return result


def write_project(folder: Path, tests: int) -> None:
    body = "TEAMS = " + repr(TEAMS) + "\nLEVELS = " + repr(LEVELS) + "\n"
    body += "".join(TEST.format(i=i) for i in range(tests))
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "test_bench.py").write_text(body)
    (folder / "pytest.ini").write_text("[pytest]\n")


def our_answers(folder: Path, tests: int) -> None:
    """tests/jev_answers/test_bench.jsonl: the fake's answers, fingerprinted as the fixture does."""
    lines = []
    for i in range(tests):
        reply = f"Reply number {i}: sorry, your payment was refunded."
        asked = [
            {"claim_0": {"type": "noul", "instructions": f"Does `text` satisfy: apologizes to customer {i}?"}},
            {"claim_0": {"type": "noul", "instructions": f"Does `text` satisfy: blames customer {i}?"}},
            {"choice": {"type": "choice", "instructions": f"Which team handles ticket {i}?",
                        "criteria": dict.fromkeys(TEAMS)}},
            {"score": {"type": "score", "instructions": f"How polite is reply {i}?", "criteria": LEVELS}},
        ]
        for questions in asked:
            state = {"text": reply}
            fp = fingerprints([Request("", state, questions, "jev-latest")], "jev")[0]
            lines.append(make_line(fp, backend="jev", requested_model="jev-latest", model="jev-1.13.0", state=state,
                                   questions=questions, answers=fake_answers(questions),
                                   usage={"input_tokens": 120, "output_tokens": 0}, tests=[f"test_{i}"]))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_bench.jsonl").write_bytes(render(lines))


def pytest_run(python: Path | str, cwd: Path) -> tuple[float, str]:
    # PYTHONDONTWRITEBYTECODE off: a re-run reuses the rewritten test module, as on a developer's machine
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS", "PYTHONDONTWRITEBYTECODE")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    started = time.perf_counter()
    done = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "pytest_jev.plugin", "tests"], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    if done.returncode != 0:
        raise SystemExit(f"{python} failed in {cwd}:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return elapsed, last


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--assertions", type=int, default=2000)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--pytest-jev-python", type=Path, default=None,
                    help="a python with pytest-jev 0.1.0 (default: the venv tests/pytestjev_env.py builds)")
    args = ap.parse_args()
    theirs_python = args.pytest_jev_python or ensure_pytest_jev()
    tests = max(1, args.assertions // 4)
    with tempfile.TemporaryDirectory(prefix="bench-fixture-") as tmp:
        theirs, ours = Path(tmp, "pytest-jev"), Path(tmp, "ours")
        for folder in (theirs, ours):
            write_project(folder, tests)
        our_answers(ours / "tests" / "jev_answers", tests)
        (theirs / "tests" / "conftest.py").write_text(FAKE)
        cold, line = pytest_run(theirs_python, theirs)  # fills .pytest_cache through the fake
        (theirs / "tests" / "conftest.py").unlink()
        shutil.rmtree(theirs / "tests" / "__pycache__", ignore_errors=True)
        print(f"pytest-jev cold run (fake client, fills the cache): {cold:.2f} s  [{line}]")
        pytest_run(sys.executable, ours)  # each side's first run writes its rewritten test module's pyc
        pytest_run(theirs_python, theirs)
        times: dict[str, list[float]] = {"pytest-jev, warm .pytest_cache": [], "jev fixture, answers file": []}
        for _ in range(args.pairs):
            for name, python, folder in (("pytest-jev, warm .pytest_cache", theirs_python, theirs),
                                         ("jev fixture, answers file", sys.executable, ours)):
                elapsed, line = pytest_run(python, folder)
                times[name].append(elapsed)
        print(f"last lines: {line}")
        print(f"\n{tests * 4} assertions ({tests} tests x 4), {args.pairs} alternating pairs, wall seconds:\n")
        print("| run | median | best | per assertion (median) |\n|---|---|---|---|")
        for name, values in times.items():
            median = statistics.median(values)
            print(f"| {name} | {median:.2f} | {min(values):.2f} | {median / (tests * 4) * 1000:.3f} ms |")
        ratio = statistics.median(times["jev fixture, answers file"]) / statistics.median(
            times["pytest-jev, warm .pytest_cache"])
        print(f"\nours / pytest-jev (medians): {ratio:.2f}")


if __name__ == "__main__":
    main()
