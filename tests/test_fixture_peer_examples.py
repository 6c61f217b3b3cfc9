"""pytest-jev 0.1.0's own examples (tests/peer_examples/, copied from its sdist with its MIT
licence) replayed offline from the answers sparrow recorded for them (tests/peer_examples/
jev_answers/, `pytest tests/peer_examples --jev-record --jev-backend=sparrow`), and the very same
files run under pytest-jev 0.1.0 with a `jev_client` that answers from those recorded answers: each
test has the same outcome under both, and every failure the same report (the `E` lines).

Sparrow is a nano model that records offline, not a judge: its answers fail four of the seven
support-bot tests (pytest-jev's README shows Jev passing them). The failures demo fails all five
tests, as it is meant to, with pytest-jev's reports.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixture_helpers import NO_NETWORK, failure_text, outcomes
from peer_env import PeerUnavailable, peer_env, peer_python, sdist_dir, unavailable
from pytestjev_env import PytestJevUnavailable, ensure_pytest_jev

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "tests" / "peer_examples"
MODULES = ("test_support_bot", "test_failures_demo")

# pytest-jev's side: a jev_client answering from our answers files, matched on what pytest-jev sends
# (state, questions, requested model), returning TypeSafe SDK shaped objects
REPLAY_CLIENT = '''
import json
from pathlib import Path
from types import SimpleNamespace

import pytest


def key(state, questions, model):
    return json.dumps([state, questions, model], sort_keys=True)


class Recorded:
    def __init__(self):
        self.lines = {}
        for path in sorted((Path(__file__).parent / "jev_answers").glob("*.jsonl")):
            for raw in path.read_text().splitlines():
                line = json.loads(raw)
                self.lines[key(line["state"], line["questions"], line["requested_model"])] = line

    def system_one(self, *, state, questions, model):
        line = self.lines[key(state, questions, model)]
        answers = {name: SimpleNamespace(**answer) for name, answer in line["answers"].items()}
        return SimpleNamespace(model=line["model"], answers=answers,
                               usage=SimpleNamespace(input_tokens=line["usage"]["input_tokens"]))


@pytest.fixture(scope="session")
def jev_client():
    return Recorded()
'''


def _project(folder: Path, conftest: str) -> Path:
    """A user's project: the examples, their answers, a bare pytest.ini and `conftest`."""
    folder.mkdir()
    for module in MODULES:
        shutil.copy(EXAMPLES / f"{module}.py", folder)
    shutil.copytree(EXAMPLES / "jev_answers", folder / "jev_answers")
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "conftest.py").write_text(conftest)
    return folder


def _run(python: Path, folder: Path, module: str) -> str:
    done = subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--color=no",
                           f"{module}.py"], cwd=folder, env=peer_env(), capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """module -> {"ours": output, "theirs": output}: ours in the venv with this checkout and no
    embedded model (a user's CI), the network blocked; pytest-jev 0.1.0 in its own venv."""
    try:
        python = peer_python()
    except (PeerUnavailable, OSError, subprocess.SubprocessError) as exc:
        unavailable("the venv with this checkout and typesafe-sdk", exc)
        raise AssertionError("unreachable") from exc
    try:
        reference = ensure_pytest_jev()
    except (PytestJevUnavailable, OSError, subprocess.SubprocessError) as exc:
        unavailable("pytest-jev 0.1.0", exc)
        raise AssertionError("unreachable") from exc
    base = tmp_path_factory.mktemp("peer-examples")
    ours, theirs = _project(base / "ours", NO_NETWORK), _project(base / "theirs", REPLAY_CLIENT)
    return {module: {"ours": _run(python, ours, module), "theirs": _run(reference, theirs, module)}
            for module in MODULES}


def test_the_examples_are_pytest_jev_s_own_with_its_licence() -> None:
    try:
        sdist = sdist_dir()
    except (PeerUnavailable, OSError, subprocess.SubprocessError) as exc:
        unavailable("pytest-jev 0.1.0's sdist", exc)
        raise AssertionError("unreachable") from exc
    for module in MODULES:
        assert (EXAMPLES / f"{module}.py").read_bytes() == (sdist / "examples" / f"{module}.py").read_bytes()
    assert (EXAMPLES / "LICENSE").read_bytes() == (sdist / "LICENSE").read_bytes()


@pytest.mark.parametrize("module", MODULES)
def test_same_outcomes_and_reports_as_pytest_jev_on_the_recorded_answers(
        runs: dict[str, dict[str, str]], module: str) -> None:
    ours, theirs = runs[module]["ours"], runs[module]["theirs"]
    assert outcomes(ours) == outcomes(theirs)
    assert failure_text(ours) == failure_text(theirs)
    assert len(outcomes(ours)) == (7 if module == "test_support_bot" else 5)
    # offline: every answer replayed from the committed files, none asked
    requests = 7 if module == "test_support_bot" else 5
    summary = f" · 0 requests + {requests} replayed · 0 input tokens · $0 · 0.00 s in sparrow · "
    assert summary + "sparrow-nano-general-v1.1" in ours


def test_the_failures_demo_fails_every_test_with_pytest_jev_s_report(runs: dict[str, dict[str, str]]) -> None:
    ours = runs["test_failures_demo"]["ours"]
    assert set(outcomes(ours).values()) == {"FAILED"} and len(outcomes(ours)) == 5
    text = failure_text(ours)
    for expected in ("AssertionError: jev: 4 of 4 claims failed",
                     'text: "Double charges happen when you click twice. You\'ll get store credit within 24 hours."',
                     "AssertionError: assert jev chose 'technical', not 'billing'",
                     "question: Which team should handle this ticket?",
                     "AssertionError: assert jev gave P(level >= 'warm') = 0.29, needs >= 0.80"):
        assert expected in text


def test_the_copy_in_the_repository_runs_as_it_is(runs: dict[str, dict[str, str]]) -> None:
    """`pytest tests/peer_examples/` from the checkout (its pyproject's settings, tests/conftest.py)
    gives the outcomes of the user's project above; `pytest tests/` does not collect them."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-rA",
                           "--color=no", "tests/peer_examples"], cwd=ROOT, env=peer_env(), capture_output=True,
                          text=True, timeout=300, check=False)
    expected = {f"tests/peer_examples/{nodeid}": outcome for module in MODULES
                for nodeid, outcome in outcomes(runs[module]["ours"]).items()}
    assert outcomes(done.stdout) == expected
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "tests"],
                               cwd=ROOT, env=peer_env(), capture_output=True, text=True, timeout=300, check=False)
    assert "tests/test_fixture_peer_examples.py::" in collected.stdout
    assert "peer_examples/test_" not in collected.stdout
