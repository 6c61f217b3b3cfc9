"""Metrics against the published jevassert corpus and against a literal reference."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import reference
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import COMPAT, COMPAT_MISSING
from pytest_jev import metrics
from pytest_jev.evaluate import Settings, evaluate
from pytest_jev.nodes import runs
from pytest_jev.packs import load_pack
from pytest_jev.recording_file import load_recording
from pytest_jev.stats import nearest_rank

CORPUS = [
    ("jev-1.13.0", "sms-spam", "packs/sms-spam/predictions.jsonl"),
    ("jev-1.13.0", "boolq-yes-no", "packs/boolq-yes-no/predictions.jsonl"),
    ("claude-sonnet-5", "sms-spam", "results/claude-sonnet-5/sms-spam.predictions.jsonl"),
    ("claude-sonnet-5", "boolq-yes-no", "results/claude-sonnet-5/boolq-yes-no.predictions.jsonl"),
    ("qwen2.5-7b-ollama", "sms-spam", "results/qwen2.5-7b-ollama/sms-spam.predictions.jsonl"),
]


@pytest.mark.skipif(not COMPAT.is_dir(), reason=COMPAT_MISSING)
@pytest.mark.parametrize("backend, pack, recording", CORPUS, ids=[f"{b}/{p}" for b, p, _ in CORPUS])
def test_published_numbers_come_out_identical(backend: str, pack: str, recording: str) -> None:
    published = json.loads((COMPAT / "results" / backend / f"{pack}.json").read_text())
    pricing = json.loads((COMPAT / "results" / backend / "backend.json").read_text())["pricing_usd_per_mtok"]
    result = evaluate(load_pack(COMPAT / "packs" / pack), load_recording(COMPAT / recording),
                      Settings(price_input=pricing["input"], price_output=pricing["output"], no_gates=True))
    ours = result.run.to_json()
    compared = [k for k in published if k in ours and k not in ("backend",)]
    assert len(compared) >= 20
    assert {k: ours[k] for k in compared} == {k: published[k] for k in compared}
    assert ours["recording_sha256"] == published["predictions_sha256"]


def test_randrange_stream_is_pythons() -> None:
    for n in (1, 2, 3, 150, 1000, 65537):
        rng = random.Random(7)
        want = [rng.randrange(n) for _ in range(5000)]
        got = np.concatenate([b for _, b in zip(range(100), metrics.randrange_stream(n, 7))])[:5000]
        assert got.tolist() == want


probs = st.lists(st.tuples(st.sampled_from([0.5, 0.51, 0.55, 0.6, 0.7, 0.77, 0.8, 0.9, 0.93, 0.99, 1.0,
                                            0.333, 0.1234, 0.25, 0.01]), st.booleans()),
                 min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(items=probs, b=st.integers(min_value=1, max_value=40), seed=st.integers(0, 5))
def test_bootstrap_matches_the_literal_reference(items, b, seed) -> None:
    p = np.asarray([x for x, _ in items], dtype=float)
    c = np.asarray([y for _, y in items], dtype=bool)
    assert metrics.bootstrap(p, c, b, seed) == reference.intervals(p.tolist(), c.tolist(), b, seed)


@settings(max_examples=80, deadline=None)
@given(items=st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=0, max_size=300))
def test_point_statistics_match_the_reference(items) -> None:
    p = np.asarray([x for x, _ in items], dtype=float)
    c = np.asarray([y for _, y in items], dtype=bool)
    assert metrics.ece(p, c) == reference.ece(p.tolist(), c.tolist())
    assert metrics.mean_float(p) == reference.mean(p.tolist())
    assert metrics.mean_bool(c) == reference.mean(c.tolist())


# floats a recording can hold once an answer breaks its contract, or sits at the edges of
# the double range: negatives, -0.0, subnormals, huge values, infinity and NaN
odd_floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                       st.sampled_from([-0.0, 0.0, 5e-324, 1e-300, 2.0**-106, 2.0**-53, 1e300, -0.01, 0.5, 1.0]))


@settings(max_examples=80, deadline=None)
@given(items=st.lists(st.tuples(odd_floats, st.booleans()), min_size=1, max_size=40),
       b=st.integers(min_value=1, max_value=30), seed=st.integers(0, 3))
def test_bootstrap_and_point_statistics_follow_python_floats_at_the_edges(items, b, seed) -> None:
    """Bit for bit (repr tells -0.0 and NaN apart), against Python's own float arithmetic."""
    p = np.asarray([x for x, _ in items], dtype=float)
    c = np.asarray([y for _, y in items], dtype=bool)
    assert repr(metrics.bootstrap(p, c, b, seed)) == repr(reference.intervals(p.tolist(), c.tolist(), b, seed))
    assert repr(metrics.ece(p, c)) == repr(reference.ece(p.tolist(), c.tolist()))
    assert repr(metrics.mean_float(p)) == repr(reference.mean(p.tolist()))


def test_a_bin_sum_on_a_rounding_midpoint_is_summed_as_python_does() -> None:
    """2**-106 + 2**-53 + 1.0: the exact sum rounds up, Neumaier's sum (Python 3.12) to 1.0."""
    p = np.asarray([2.0**-106] * 15 + [2.0**-53] + [1.0] * 11)
    c = np.asarray([int(x) for x in "001100001100100011101010100"], dtype=bool)
    assert metrics.bootstrap(p, c, 1000, 0) == reference.intervals(p.tolist(), c.tolist(), 1000, 0)
    assert metrics.bootstrap(p, c, 1000, 0)[1][0] == 0.14814814814814814  # jevassert check --json


def test_bootstrap_large_random_matches_reference() -> None:
    rng = random.Random(3)
    p = np.asarray([round(rng.uniform(0.34, 1.0), 2) for _ in range(700)])
    c = np.asarray([rng.random() < q for q in p.tolist()])
    assert metrics.bootstrap(p, c, 200, 0) == reference.intervals(p.tolist(), c.tolist(), 200, 0)


def test_nearest_rank_and_coverage() -> None:
    assert nearest_rank([5.0, 1.0, 3.0], 50) == 3.0
    assert nearest_rank([5.0, 1.0, 3.0], 95) == 5.0
    assert nearest_rank([], 50) is None
    rows = metrics.coverage_rows(np.asarray([0.5, 0.9, 0.97]), np.asarray([False, True, True]))
    assert rows[-2:] == [(0.9, 2 / 3, 1.0), (0.95, 1 / 3, 1.0)]


def test_threshold_suggestion_needs_ten_items_and_prefers_coverage() -> None:
    p = np.asarray([0.55] * 5 + [0.8] * 12)
    c = np.asarray([False] * 5 + [True] * 12)
    s = metrics.suggest_threshold(p, c, 0.95)
    assert s is not None and (s[0], s[3], s[2]) == (0.56, 12, 1.0)
    assert metrics.suggest_threshold(p[:9], c[:9], 0.1) is None


def test_bootstrap_apart_gives_the_same_intervals_from_a_child_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    rng = np.random.default_rng(7)
    prob = np.round(rng.random(3000), 2)
    correct = rng.random(3000) < prob
    here = metrics.bootstrap(prob, correct, 200, 3)
    monkeypatch.setattr(runs, "APART_MIN_DRAWS", 1)
    calls: list[list[str]] = []
    real_run = subprocess.run

    def spy(args: list[str], **kw: object) -> object:
        calls.append(args)
        return real_run(args, **kw)

    monkeypatch.setattr(subprocess, "run", spy)
    assert runs.bootstrap_apart(prob, correct, 200, 3) == here
    assert len(calls) == 1 and calls[0][0] == sys.executable  # it really went to a child
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")  # no child possible: computed here
    assert runs.bootstrap_apart(prob, correct, 200, 3) == here
