"""Shared fixtures: a small but complete pack written into any folder."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

# pytester's in-process runs drop modules first imported inside a run; numpy cannot be
# imported twice in one process, so the heavy modules the plugin imports lazily load here.
# That is also cheaper: with PYTHONDONTWRITEBYTECODE=1 each in-process run would compile them
# all again (hypothesis, loaded as a plugin by every inner run, is about 80 modules).
import hypothesis
import hypothesis.configuration
import jsonschema  # noqa: F401
import numpy
import numpy.random  # noqa: F401
import pytest
import scipy.stats  # noqa: F401  (--jev-baseline's statistics)
import yaml  # noqa: F401
from jevassert_env import VERSION as JEVASSERT_VERSION
from jevassert_env import JevassertUnavailable, ensure_jevassert

import pytest_jev.backends.builtin
import pytest_jev.backends.catalog
import pytest_jev.evaluate
import pytest_jev.nodes
import pytest_jev.packs.loader
import pytest_jev.paths
import pytest_jev.report.json
import pytest_jev.report.terminal  # noqa: F401

COMPAT = Path(__file__).resolve().parents[2] / "shared" / "compat" / "jev-packs"

# hypothesis keeps what it stores (the examples it found, its constants cache) in a folder of the
# temporary directory, not in the checkout: a test run leaves the checkout as it found it
hypothesis.configuration.set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "jev-packs-hypothesis")

# pytest-jev's own examples (MIT, tests/peer_examples/README.md): run on their own, by
# test_fixture_peer_examples.py or `pytest tests/peer_examples`; the failures demo fails on purpose
collect_ignore = ["peer_examples"]

# The pytest runs these tests start (pytester, in process or not, and plain subprocesses) load the
# plugins under test, not hypothesis' and anyio's: those two cost ~2 s of a 3 s subprocess run here.
INNER_ADDOPTS = "-p no:hypothesispytest -p no:anyio"
os.environ["PYTEST_ADDOPTS"] = " ".join(filter(None, [INNER_ADDOPTS, os.environ.get("PYTEST_ADDOPTS", "")]))


@pytest.fixture(autouse=True)
def _inner_runs_skip_unrelated_plugins(request: pytest.FixtureRequest) -> None:
    """pytester clears PYTEST_ADDOPTS for isolation; give its runs the plugin exclusions back."""
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")
        request.getfixturevalue("monkeypatch").setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)

PACK_YAML = """\
spec: 0
id: {id}
version: 0.1.0
license: CC0-1.0
tested: null
description: "Toy triage pack for the plugin tests. Non-goals: realism."
state:
  description: One short message.
  fields: [message]
questions:
  refund:
    type: noul
    instructions: "Does the customer ask for money back?"
  queue:
    type: choice
    instructions: "Which team should handle `message`?"
    options:
      billing: payments and invoices
      technical: bugs and errors
      unknown: cannot tell
  urgency:
    type: score
    instructions: "How urgent is `message`?"
    levels: [low, high, unknown]
    level_descriptions:
      high: something is broken right now
thresholds:
  refund: {{true: 0.8, false: 0.8}}
"""

LABELS = {"queue": ["billing", "technical", "unknown"], "urgency": ["low", "high", "unknown"]}


def gold(i: int) -> dict[str, Any]:
    return {"refund": i % 2 == 0, "queue": LABELS["queue"][i % 3], "urgency": LABELS["urgency"][i % 3]}


def answer_line(case_id: str, expect: dict[str, Any], right: bool = True, p: float = 0.9,
                latency: float | None = 100.0) -> dict[str, Any]:
    """A jevassert-style recording line answering `expect` (or the next label when not right)."""
    def pick(labels: list[str], label: str) -> str:
        return label if right else labels[(labels.index(label) + 1) % len(labels)]

    queue = pick(LABELS["queue"], expect["queue"])
    urgency = pick(LABELS["urgency"], expect["urgency"])
    rest = round((1 - p) / 2, 4)
    qprobs = {lab: (p if lab == queue else rest) for lab in LABELS["queue"]}
    uprobs = {str(i): (p if lab == urgency else rest) for i, lab in enumerate(LABELS["urgency"])}
    refund = expect["refund"] if right else not expect["refund"]
    return {"case_id": case_id, "model": "jev-1.13.0", "latency_ms": latency,
            "usage": {"input_tokens": 300, "output_tokens": 20},
            "answers": {"refund": {"type": "noul", "noul": p if refund else round(1 - p, 4)},
                        "queue": {"type": "choice", "choice": queue, "confidence": p, "probabilities": qprobs},
                        "urgency": {"type": "score", "score": 1.0, "confidence": p, "probabilities": uprobs}},
            "error": None}


def write_pack(root: Path, pack_id: str = "toy", n: int = 12, wrong: set[int] = frozenset(),
               gates: str | None = "min_accuracy: 0.5\nmax_ece: 0.5\n", recording: str | None = "results/jev-1.13.0",
               ) -> Path:
    """A valid pack under root/packs/<id>, and its recording (a subset of cases answered wrongly)."""
    folder = root / "packs" / pack_id
    folder.mkdir(parents=True)
    (folder / "pack.yaml").write_text(PACK_YAML.format(id=pack_id))
    cases = [{"id": f"{pack_id}-{i:04d}", "state": {"message": f"message number {i}"}, "expect": gold(i)}
             for i in range(1, n + 1)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    if gates is not None:
        (folder / "gates.yaml").write_text(gates)
    (folder / "README.md").write_text("# toy\n")
    (folder / "CHANGELOG.md").write_text("## 0.1.0\n")
    if recording is not None:
        rec_dir = root / recording
        rec_dir.mkdir(parents=True, exist_ok=True)
        lines = [answer_line(c["id"], c["expect"], right=i not in wrong) for i, c in enumerate(cases, 1)]
        (rec_dir / f"{pack_id}.predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return folder


@pytest.fixture
def toy(pytester: pytest.Pytester) -> Path:
    folder = write_pack(pytester.path, wrong={2, 5})
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    return folder


@pytest.fixture(scope="session")
def jevassert() -> Path:
    """The reference `jevassert` 0.2.1 executable (tests/jevassert_env.py): $JEVASSERT, else a
    venv of its own under the test cache, installed from the package index on first use.

    Unavailable (no index, no Python >= 3.12), it FAILS the tests that need it: CI must
    never pass the parity tests by skipping them. JEV_ALLOW_NO_JEVASSERT=1 turns that into a skip."""
    try:
        return ensure_jevassert()
    except (JevassertUnavailable, OSError) as exc:
        why = f"jevassert {JEVASSERT_VERSION} is not available for the parity tests: {exc}"
    if os.environ.get("JEV_ALLOW_NO_JEVASSERT") == "1":
        pytest.skip(f"{why}\n(skipped: JEV_ALLOW_NO_JEVASSERT=1)")
    pytest.fail(f"{why}\nSet JEV_ALLOW_NO_JEVASSERT=1 to skip these tests instead, or JEVASSERT=/path/to/jevassert "
                "to use an installed one.", pytrace=False)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "jevassert_sweep: the long seed sweep of the jevassert differential "
                                       "(also marked slow); collected only when -m names slow")
    config.addinivalue_line("markers", "live: calls a real provider endpoint (tests/test_live_smoke.py); "
                                       "skipped unless that provider's API key is set")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The 200-seed jevassert sweep runs on request only (`pytest tests/ -m slow`): the default
    run, CI's included, takes the 30 seeds of test_jevassert_differential.py."""
    if "slow" in (config.getoption("markexpr") or ""):
        return  # `-m slow` keeps it, `-m "not slow"` deselects it anyway
    dropped = [item for item in items if item.get_closest_marker("jevassert_sweep")]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not item.get_closest_marker("jevassert_sweep")]
