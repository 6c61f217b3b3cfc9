"""Live smoke tests: one real request (a noul, a choice and a score question) to each configured
endpoint, checking only the answer contract (pytest_jev.contract), never the answers themselves.

Each test runs only when its key was set in the environment pytest started with (TYPESAFE_API_KEY
for `jev`, OPENROUTER_API_KEY for `openrouter`, ANTHROPIC_API_KEY for `sonnet`) and is skipped with
the reason otherwise, so CI, which has no keys, never calls a provider. The keys are read once, at
import: a key another test sets with monkeypatch cannot turn a live call on. The endpoints'
own variables apply (TYPESAFE_BASE_URL, OPENROUTER_BASE_URL, ANTHROPIC_BASE_URL, TYPESAFE_DEFAULT_MODEL).

    TYPESAFE_API_KEY=... pytest tests/test_live_smoke.py -m live -v
    pytest tests/ -m "not live"          # leave them out altogether
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest

from pytest_jev.backends.base import Answer
from pytest_jev.backends.catalog import backend_from
from pytest_jev.contract import AnswerSpec, answers_problems
from pytest_jev.wire import Request

pytestmark = pytest.mark.live

# backend spec -> the variable that must hold its key
ENDPOINTS = {"jev": "TYPESAFE_API_KEY", "openrouter": "OPENROUTER_API_KEY", "sonnet": "ANTHROPIC_API_KEY"}
CONFIGURED = {spec: bool(os.environ.get(var, "").strip()) for spec, var in ENDPOINTS.items()}  # at import
ATTEMPTS = 3  # one request, tried again only on a transient failure (429, 5xx, 529, transport)
MAX_WAIT_S = 20.0

STATE = {"subject": "Charged twice",
         "message": "Hello, I was charged twice for my subscription this month. Please refund the second "
                    "payment as soon as possible."}
QUESTIONS: dict[str, dict[str, Any]] = {
    "refund_request": {"type": "noul", "instructions": "Does `message` ask for money back for a past charge?"},
    "queue": {"type": "choice", "instructions": "Which team must act on `message`?",
              "criteria": {"billing": "Charges, refunds, invoices and payment problems.",
                           "technical": "Bugs, crashes and error messages.",
                           "unknown": "None of the above, or not enough information to tell."}},
    "urgency": {"type": "score", "instructions": "How urgent is `message`?",
                "criteria": ["Nothing is blocked; it can wait a few days.",
                             "It should be handled today.",
                             "Something important is broken or money is being lost right now."]},
}
SPECS = {qid: AnswerSpec.of_sent(qid, question) for qid, question in QUESTIONS.items()}


async def ask(spec: str) -> Answer:
    backend: Any = backend_from(spec)
    try:
        answer = Answer(error="not asked")
        for attempt in range(ATTEMPTS):
            answer = await backend.answer(Request("live-smoke", STATE, QUESTIONS, backend.model, attempt=attempt))
            if not (answer.error and answer.retryable) or attempt == ATTEMPTS - 1:
                break
            wait = answer.retry_after_s if answer.retry_after_s is not None else 2.0 * 2 ** attempt
            await asyncio.sleep(min(wait, MAX_WAIT_S))
        return answer
    finally:
        await backend.aclose()


@pytest.mark.parametrize("spec", sorted(ENDPOINTS))
def test_one_live_request_honours_the_answer_contract(spec: str) -> None:
    if not CONFIGURED[spec]:
        pytest.skip(f"{ENDPOINTS[spec]} is not set: no live request to the {spec} endpoint")
    started = time.monotonic()
    answer = asyncio.run(ask(spec))
    assert answer.error is None, f"{spec}: {answer.error} (detail: {answer.error_detail})"
    assert isinstance(answer.answers, dict), f"{spec}: no answers object"
    assert answers_problems(SPECS, answer.answers) == [], f"{spec} answered {answer.answers}"
    assert isinstance(answer.model, str) and answer.model, f"{spec}: the reply names no model"
    print(f"{spec}: model {answer.model}, {time.monotonic() - started:.1f} s, usage {answer.usage}")
