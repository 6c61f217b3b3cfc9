"""One answer contract: what the recorder keeps is exactly what replay accepts, and the other
way round (a property test over answers of every shape), plus the recorder's fixes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packfiles import write_pack

from pytest_jev.backends.base import Answer
from pytest_jev.backends.mock import MockBackend
from pytest_jev.contract import specs_of
from pytest_jev.formats.recording_line import RecordingLine
from pytest_jev.grade import grade
from pytest_jev.packs import load_pack
from pytest_jev.record.engine import record_pack_sync
from pytest_jev.record.plan import build_requests, plan, usable
from pytest_jev.recording_file import Recording
from pytest_jev.wire import Request

_PACKS: list[Any] = []


def the_pack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One small pack for every hypothesis example (a fixture would be rebuilt for none of them)."""
    if not _PACKS:
        _PACKS.append(load_pack(write_pack(tmp_path_factory.mktemp("contract"), n=1)))
    return _PACKS[0]


numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3), st.booleans(),
                    st.sampled_from([0.0, 0.5, 1.0, 0.25, 0.333, 1.0000001, -0.0]), st.text(max_size=3), st.none())


def distribution(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Near-valid and broken distributions over the keys (plus strays)."""
    valid = st.lists(st.floats(0, 1), min_size=len(keys), max_size=len(keys)).map(
        lambda ps: {k: (p / sum(ps) if sum(ps) > 0 else 1 / len(keys)) for k, p in zip(keys, ps)})
    rounded = valid.map(lambda d: {k: round(v, 2) for k, v in d.items()})
    broken = st.dictionaries(st.sampled_from([*keys, "stray", "9"]), numbers, max_size=len(keys) + 1)
    return st.one_of(valid, rounded, broken)


def answers(kind: str, keys: list[str]) -> st.SearchStrategy[Any]:
    wrong_type = st.sampled_from(["noul", "choice", "score", "box", None])
    if kind == "noul":
        shaped = st.fixed_dictionaries({"type": st.just("noul"), "noul": st.one_of(st.floats(0, 1), numbers)})
    else:
        extra = ({"choice": st.one_of(st.sampled_from(keys), st.just("stray"), st.none(), st.integers(0, 2),
                                      st.lists(st.sampled_from(keys), max_size=2),
                                      st.dictionaries(st.sampled_from(keys), st.integers(0, 1), max_size=1))}
                 if kind == "choice" else {})
        shaped = st.fixed_dictionaries({"type": st.just(kind), "probabilities": distribution(keys)},
                                       optional={**extra, "confidence": numbers, "score": numbers})
    return st.one_of(shaped, shaped.map(lambda a: {**a, "type": "noul" if kind != "noul" else "choice"}),
                     st.fixed_dictionaries({"type": wrong_type}), st.none(), st.integers(), st.text(max_size=2))


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_recorder_keeps_exactly_what_replay_accepts(tmp_path_factory: pytest.TempPathFactory,
                                                    data: st.DataObject) -> None:
    pack = the_pack(tmp_path_factory)
    request = build_requests(pack, "jev-latest")[0]
    specs = specs_of(request.questions)
    given_answers = {qid: data.draw(answers(q["type"], list(specs[qid].keys)), label=qid)
                     for qid, q in request.questions.items()}
    line = {"case_id": request.case_id, "model": "m", "answers": given_answers, "error": None,
            "request_fingerprint": "sha256:x"}
    kept = usable(RecordingLine(line), "sha256:x", specs, strict=True)
    recording = Recording(Path("r.jsonl"), MappingProxyType({request.case_id: RecordingLine(line)}),
                          MappingProxyType({request.case_id: 1}), "0")
    outcome = grade(pack, recording).outcomes[request.case_id]
    assert kept == (outcome.status in ("ok", "mismatch")), (outcome, json.dumps(given_answers, default=str))


class Scripted:
    """A backend answering each attempt from a script; counts attempts and reports usage."""

    name = "jev"
    mode = "live"
    model = "jev-1.13.0"

    def __init__(self, *replies: Answer) -> None:
        self.replies = list(replies)
        self.calls = 0

    def backend_id(self, served: str | None) -> str:
        return served or self.model

    def describe(self) -> dict[str, Any]:
        return {"provider": "test", "backend": self.name, "model": self.model}

    async def answer(self, request: Request) -> Answer:
        self.calls += 1
        await asyncio.sleep(0)
        return self.replies[min(self.calls, len(self.replies)) - 1]

    async def aclose(self) -> None:
        return None


def good_answers(pack: Any) -> dict[str, Any]:
    mock = MockBackend.from_pack(pack, accuracy=1.0)
    request = build_requests(pack, "x")[0]
    return asyncio.run(mock.answer(request)).answers  # type: ignore[return-value]


def test_usage_is_summed_over_every_billed_attempt(tmp_path: Path) -> None:
    pack = load_pack(write_pack(tmp_path / "p", n=1))
    billed = {"input_tokens": 100, "output_tokens": 10}
    backend = Scripted(Answer(error="HTTP 529: overloaded", retryable=True, usage=billed, http_status=529),
                       Answer(error="HTTP 500: boom", retryable=True, usage=billed, http_status=500),
                       Answer(model="jev-1.13.0", answers=good_answers(pack), usage=billed, http_status=200))
    out = tmp_path / "rec.jsonl"
    record_pack_sync(pack, backend, out, backoff_base_s=0.001, backoff_max_s=0.002)
    line = json.loads(out.read_text())
    assert backend.calls == 3 and line["attempts"] == 3
    assert line["usage"]["input_tokens"] == 300 and line["usage"]["output_tokens"] == 30
    assert line["usage"]["input_tokens_total"] == 300  # every attempt was billed, so every one is counted

    failing = Scripted(Answer(error="HTTP 500: boom", retryable=True, usage=billed, http_status=500))
    record_pack_sync(pack, failing, tmp_path / "err.jsonl", max_attempts=2, backoff_base_s=0.001)
    error_line = json.loads((tmp_path / "err.jsonl").read_text())
    assert error_line["error"].startswith("HTTP 500") and error_line["usage"]["input_tokens"] == 200


def test_a_refused_answer_is_an_error_line_asked_again_next_run(tmp_path: Path) -> None:
    pack = load_pack(write_pack(tmp_path / "p", n=1))
    bad = good_answers(pack)
    bad["queue"]["probabilities"] = dict.fromkeys(bad["queue"]["probabilities"], 0.25)  # sums to 0.75
    backend = Scripted(Answer(model="jev-1.13.0", answers=bad, http_status=200))
    out = tmp_path / "rec.jsonl"
    record_pack_sync(pack, backend, out)
    line = json.loads(out.read_text())
    assert backend.calls == 1  # not transient: not asked again within the run
    assert line["error"] == "misfit: queue: probabilities sum to 0.7500, not 1" and line["answers"] is None
    assert len(plan(pack, "jev", out).todo) == 1  # ... but the next --jev-record run asks again


def test_a_long_retry_after_ends_the_case_instead_of_stalling(tmp_path: Path) -> None:
    pack = load_pack(write_pack(tmp_path / "p", n=2))
    backend = Scripted(Answer(error="HTTP 429: slow down", retryable=True, retry_after_s=86400.0, http_status=429))
    out = tmp_path / "rec.jsonl"
    summary = record_pack_sync(pack, backend, out, timeout_s=5)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert summary.elapsed_s < 5 and backend.calls == 2  # one attempt each, no day-long wait
    assert all("the server asked to wait 86400 s, over the 60 s limit" in x["error"] for x in lines)


def test_shuffled_options_fingerprint_differently(tmp_path: Path) -> None:
    pack = load_pack(write_pack(tmp_path / "p", n=6))
    out = tmp_path / "rec.jsonl"
    record_pack_sync(pack, MockBackend.from_pack(pack), out)
    assert plan(pack, "mock", out).todo == []
    shuffled = plan(pack, "mock", out, shuffle_seed=3)
    assert len(shuffled.todo) == 6  # a shuffled request is another request: not the plain answer reused
    record_pack_sync(pack, MockBackend.from_pack(pack), out, shuffle_seed=3)
    assert plan(pack, "mock", out, shuffle_seed=3).todo == []
    assert len(plan(pack, "mock", out, shuffle_seed=4).todo) == 6


def test_mock_answers_every_question_type_from_its_gold_label(tmp_path: Path) -> None:
    """Score questions whose levels carry descriptions were answered at random (accuracy 0.22)."""
    from pytest_jev.evaluate import evaluate
    from pytest_jev.recording_file import load_recording

    pack = load_pack(write_pack(tmp_path / "p", n=300))
    out = tmp_path / "rec.jsonl"
    record_pack_sync(pack, MockBackend.from_pack(pack, seed=3, accuracy=0.85), out)
    run = evaluate(pack, load_recording(out)).run
    for q in run.per_question:
        assert 0.78 <= q.accuracy <= 0.92, (q.qid, q.accuracy)  # 0.85 give or take 300 draws of noise


def test_dry_run_counts_only_the_calls_a_run_would_make(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path / "packs", n=5)
    first = pytester.runpytest("packs", "--jev-dry-run", "--jev-backend=mock")
    first.stdout.fnmatch_lines(["jev dry run tiny-pack: 5 calls, ~* input + ~0 output tokens, ~$0.0000 *"])
    pytester.runpytest("packs", "--jev-record", "--jev-backend=mock")
    again = pytester.runpytest("packs", "--jev-dry-run", "--jev-backend=mock")
    again.stdout.fnmatch_lines(["jev dry run tiny-pack: 0 calls, ~0 input + ~0 output tokens*"])
    one = pytester.runpytest("packs/tiny-pack/pack.yaml::case[c-002]", "--jev-dry-run", "--jev-backend=mock",
                             "--jev-record=all")
    one.stdout.fnmatch_lines(["jev dry run tiny-pack: 1 calls*"])  # the selection, re-recorded
    priced = pytester.runpytest("packs", "--jev-dry-run", "--jev-backend=sonnet")
    # an LLM call carries the scaffold and the schema, and Sonnet prices output tokens too
    priced.stdout.fnmatch_lines(["jev dry run tiny-pack: 5 calls, ~* input + ~* output tokens, ~$0.0* with "
                                 "--jev-backend=sonnet (nothing sent)"])
    assert " + ~0 output" not in priced.stdout.str()


# -- a distribution far from 1, whatever its size (issue 18, item 12) ----------------------------

WIDE = [f"o{i:03d}" for i in range(500)]
WIDE_PACK = """\
spec: 0
id: wide
version: 0.1.0
license: CC0-1.0
tested: null
description: "One question with 500 options, for the answer contract sum. Non-goals: realism."
state:
  description: A message.
  fields: [message]
questions:
  pick:
    type: choice
    instructions: Which option?
    options:
{options}
"""


def test_a_distribution_far_from_one_breaks_the_contract_whatever_its_size() -> None:
    from pytest_jev.contract import AnswerSpec, problems, sum_tolerance

    spec = AnswerSpec.make("pick", "choice", [*WIDE, "unknown"])
    far = {"type": "choice", "choice": "o000", "probabilities": dict.fromkeys(WIDE, 3.4 / 500)}
    assert problems(spec, far) == ["pick: probabilities sum to 3.4000, not 1"]
    low = {"type": "choice", "probabilities": dict.fromkeys(WIDE, 0.0)}
    low["probabilities"]["o000"] = 0.85
    assert problems(spec, low) == ["pick: probabilities sum to 0.8500, not 1"]
    # two-decimal rounding: a long tail rounded to 0.00 leaves the sum a little short, and passes
    tail = {"type": "choice", "probabilities": {**dict.fromkeys(WIDE, 0.0), "o000": 0.6, "o001": 0.31}}
    assert problems(spec, tail) == []
    assert sum_tolerance(3) == pytest.approx(0.015, abs=1e-8) and sum_tolerance(10) == pytest.approx(0.05, abs=1e-8)
    assert sum_tolerance(20) == sum_tolerance(500) == pytest.approx(0.1, abs=1e-8)


def test_jevassert_grades_a_far_distribution_and_so_do_we(pytester: pytest.Pytester, jevassert: Path) -> None:
    """jevassert checks no sum: it grades the answer by its largest probability. Our numbers are
    its numbers, bit for bit; the answer breaks our contract, so its case item fails."""
    from jevassert_env import differences, run_check

    folder = pytester.path / "packs" / "wide"
    folder.mkdir(parents=True)
    options = "\n".join(f"      {k}: option {k}" for k in [*WIDE, "unknown"])
    (folder / "pack.yaml").write_text(WIDE_PACK.format(options=options))
    cases = [{"id": f"w-{i}", "state": {"message": f"m {i}"}, "expect": {"pick": WIDE[i]}} for i in range(3)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "README.md").write_text("# wide\n")
    (folder / "CHANGELOG.md").write_text("## 0.1.0\n")
    lines = []
    for i, case in enumerate(cases):
        probs = dict.fromkeys([*WIDE, "unknown"], 0.0)
        probs[case["expect"]["pick"]] = 1.0
        if i == 1:  # 500 values summing to 3.4, the gold option the largest
            probs = {**dict.fromkeys([*WIDE, "unknown"], 0.0068), WIDE[1]: 0.0068 + 1e-4}
        lines.append({"case_id": case["id"], "model": "m", "latency_ms": 5.0, "usage": None,
                      "answers": {"pick": {"type": "choice", "probabilities": probs}}, "error": None})
    rec = pytester.path / "wide.predictions.jsonl"
    rec.write_text("".join(json.dumps(x) + "\n" for x in lines))
    theirs = run_check(jevassert, folder, rec, cwd=pytester.path)
    result = pytester.runpytest("packs", "--jev-recording", str(rec), "--jev-json", "ours.json", "-p",
                                "no:cacheprovider")
    ours = json.loads((pytester.path / "ours.json").read_text())["runs"][0]
    assert differences(theirs, ours) == []
    assert theirs["accuracy"] == 1.0  # graded, not refused, by both
    result.assert_outcomes(passed=4, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*wide.predictions.jsonl:2: case w-1: pick: probabilities sum to 3.4*, not 1*"])
