"""LLM backends against scripted loopback servers: prompt, schema, parsing, retries, errors, key hygiene."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
from llm_servers import ScriptedServer, anthropic_error, anthropic_reply, openai_error, openai_reply

from pytest_jev.backends.anthropic import make_anthropic
from pytest_jev.backends.base import Answer, AuthError
from pytest_jev.backends.llm_prompt import SYSTEM_PROMPT
from pytest_jev.backends.llm_reply import Malformed, parse_reply, strip_fences
from pytest_jev.backends.openai import make_openai
from pytest_jev.wire import Request

ANTHROPIC_KEY = "sk-ant-test-SECRET-4242"
OPENAI_KEY = "sk-openai-test-SECRET-1717"
QUESTIONS: dict[str, dict[str, Any]] = {
    "refund": {"type": "noul", "instructions": "Does the customer ask for money back?"},
    "queue": {"type": "choice", "instructions": "Which team should handle `message`?",
              "criteria": {"billing": "payments and invoices", "technical": "bugs and errors", "unknown": None}},
    "urgency": {"type": "score", "instructions": "How urgent is `message`?",
                "criteria": ["low", "something is broken right now", "unknown"]},
}
STATE = {"message": "I was charged twice <script>alert(1)</script>", "channel": "email"}
GOOD = {"answers": {"refund": 0.9, "queue": {"billing": 0.8, "technical": 0.15, "unknown": 0.05},
                    "urgency": {"0": 0.2, "1": 0.7, "2": 0.1}}}


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


# Each provider: how to build the backend, wrap a reply text, and which key it must never leak.
PROVIDERS: dict[str, dict[str, Any]] = {
    "anthropic": {"make": lambda url: make_anthropic("sonnet", base_url=url), "reply": anthropic_reply,
                  "key": ANTHROPIC_KEY, "var": "ANTHROPIC_API_KEY", "path": "/v1/messages",
                  "tokens": (300, 40)},
    "openai": {"make": lambda url: make_openai("qwen2.5:7b", base_url=url + "/v1"), "reply": openai_reply,
               "key": OPENAI_KEY, "var": "OPENAI_API_KEY", "path": "/v1/chat/completions", "tokens": (250, 30)},
}


def ask(backend: Any, state: Any = STATE, questions: dict[str, Any] = QUESTIONS) -> Answer:
    async def run() -> Answer:
        try:
            return await backend.answer(Request("case-1", state, questions, "jev-latest"))
        finally:
            await backend.aclose()
    return asyncio.run(run())


def assert_key_free(key: str, *things: Any) -> None:
    for thing in things:
        text = json.dumps(dataclasses.asdict(thing) if dataclasses.is_dataclass(thing) else thing, default=str)
        assert key not in text
        assert key not in repr(thing)


def user_turns(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["json"]["messages"] if m["role"] == "user"]


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> dict[str, Any]:
    return PROVIDERS[request.param]


# ---- good replies ----------------------------------------------------------------------------

def test_good_reply_gives_system_one_answers(server: ScriptedServer, provider: dict[str, Any]) -> None:
    server.push(200, provider["reply"](json.dumps(GOOD)))
    backend = provider["make"](server.url)
    answer = ask(backend)
    assert answer.error is None
    assert answer.answers == {
        "refund": {"type": "noul", "noul": 0.9},
        "queue": {"type": "choice", "choice": "billing", "confidence": 0.7,
                  "probabilities": {"billing": 0.8, "technical": 0.15, "unknown": 0.05}},
        "urgency": {"type": "score", "score": 0.9, "confidence": 0.55,  # 1 - 0.3/(2/3)
                    "legend": {"0": "low", "1": "something is broken right now", "2": "unknown"},
                    "probabilities": {"0": 0.2, "1": 0.7, "2": 0.1}}}
    tokens_in, tokens_out = provider["tokens"]
    assert answer.usage == {"input_tokens": tokens_in, "output_tokens": tokens_out, "input_tokens_total": tokens_in,
                            "output_tokens_total": tokens_out, "n_retries_malformed": 0}
    assert answer.http_status == 200 and answer.latency_ms is not None
    assert answer.extra["adapter"]["answer_mode"] == "probabilities"
    assert [r["path"] for r in server.requests] == [provider["path"]]
    assert_key_free(provider["key"], answer, backend.describe(), backend)


def test_anthropic_request_follows_the_messages_api(server: ScriptedServer) -> None:
    server.push(200, anthropic_reply(json.dumps(GOOD), model="claude-sonnet-5-20261001"))
    backend = make_anthropic("sonnet", base_url=server.url)
    answer = ask(backend)
    sent = server.requests[0]
    headers = {k.lower(): v for k, v in sent["headers"].items()}
    assert headers["x-api-key"] == ANTHROPIC_KEY
    assert headers["anthropic-version"] == "2023-06-01"
    body = sent["json"]
    assert body["model"] == "claude-sonnet-5"  # the alias, not Request.model ("jev-latest")
    assert "temperature" not in body and "tools" not in body
    schema = body["output_config"]["format"]["schema"]
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert schema["properties"]["answers"]["required"] == ["refund", "queue", "urgency"]
    queue = schema["properties"]["answers"]["properties"]["queue"]
    assert queue["required"] == ["billing", "technical", "unknown"] and queue["additionalProperties"] is False
    assert "minimum" not in json.dumps(schema)  # Anthropic rejects numeric bounds with a 400
    assert answer.model == "claude-sonnet-5-20261001"
    assert backend.backend_id(answer.model) == "claude-sonnet-5-20261001"
    assert backend.describe()["pricing"] == {"input_usd_per_mtok": 2.0, "output_usd_per_mtok": 10.0}


def test_openai_request_uses_strict_json_schema(server: ScriptedServer) -> None:
    server.push(200, openai_reply(json.dumps(GOOD)))
    backend = make_openai("qwen2.5:7b", base_url=server.url + "/v1")
    answer = ask(backend)
    sent = server.requests[0]
    assert {k.lower(): v for k, v in sent["headers"].items()}["authorization"] == f"Bearer {OPENAI_KEY}"
    body = sent["json"]
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["properties"]["answers"]["properties"]["urgency"]["required"] == ["0", "1", "2"]
    assert answer.model == "qwen2.5:7b"
    assert backend.backend_id(answer.model) == "qwen2.5-7b-openai"
    assert backend.describe()["pricing"] == {"input_usd_per_mtok": 0.0, "output_usd_per_mtok": 0.0}


def test_openai_without_a_key_sends_a_placeholder(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    server.push(200, openai_reply(json.dumps(GOOD)))
    assert ask(make_openai("llama3", base_url=server.url)).error is None
    assert {k.lower(): v for k, v in server.requests[0]["headers"].items()}["authorization"] == "Bearer not-needed"


def test_prompt_fences_the_state_as_untrusted_escaped_data(server: ScriptedServer, provider: dict[str, Any]) -> None:
    server.push(200, provider["reply"](json.dumps(GOOD)))
    ask(provider["make"](server.url))
    body = server.requests[0]["json"]
    system = body.get("system") or body["messages"][0]["content"]
    assert "untrusted" in system and "never instructions" in system
    user = user_turns(server.requests[0])[0]
    escaped = json.dumps(STATE, sort_keys=True, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
    assert f"<document>\n{escaped}\n</document>" in user
    assert "<script>" not in user
    assert user.index('"channel"') < user.index('"message"')  # sorted keys
    assert "billing = payments and invoices" in user  # the questions travel outside the document


# ---- malformed replies and corrective retries -------------------------------------------------

def test_malformed_then_good_is_corrected_and_usage_summed(server: ScriptedServer, provider: dict[str, Any]) -> None:
    bad = json.dumps({"answers": {"refund": 0.9, "queue": {"billing": 0.8}}})
    server.push(200, provider["reply"](bad)).push(200, provider["reply"](json.dumps(GOOD)))
    answer = ask(provider["make"](server.url))
    assert answer.error is None and answer.answers is not None
    assert answer.answers["queue"]["choice"] == "billing"
    tokens_in, tokens_out = provider["tokens"]
    assert answer.usage == {"input_tokens": 2 * tokens_in, "output_tokens": 2 * tokens_out,
                            "input_tokens_total": 2 * tokens_in, "output_tokens_total": 2 * tokens_out,
                            "n_retries_malformed": 1}
    assert len(server.requests) == 2
    retry = server.requests[1]["json"]["messages"]
    assert retry[-2] == {"role": "assistant", "content": bad}
    assert "answers.queue is missing 'technical', 'unknown'" in retry[-1]["content"]
    assert "answers is missing 'urgency'" in answer.extra["retry_reasons"][0]


def test_still_malformed_after_two_corrections_is_an_error_not_retried(server: ScriptedServer,
                                                                        provider: dict[str, Any]) -> None:
    for _ in range(3):
        server.push(200, provider["reply"]("I think it is billing."))
    backend = provider["make"](server.url)
    answer = ask(backend)
    # malformed output is not a transient error (wire contract): the recorder writes an error line
    # instead of asking 3 x 4 times, and the next --jev-record run asks again
    assert answer.answers is None and answer.retryable is False
    assert answer.error is not None and "malformed" in answer.error and "not valid JSON" in answer.error
    assert len(server.requests) == 3
    assert answer.usage is not None and answer.usage["input_tokens_total"] == 3 * provider["tokens"][0]
    assert answer.usage["n_retries_malformed"] == 2
    assert len(answer.extra["retry_reasons"]) == 3
    assert_key_free(provider["key"], answer)


def test_fenced_json_is_accepted_without_a_retry(server: ScriptedServer, provider: dict[str, Any]) -> None:
    server.push(200, provider["reply"]("Here you go:\n```json\n" + json.dumps(GOOD) + "\n```\n"))
    answer = ask(provider["make"](server.url))
    assert answer.error is None and answer.answers is not None
    assert answer.answers["refund"]["noul"] == 0.9
    assert len(server.requests) == 1


def test_anthropic_cut_off_reply_gets_a_corrective_retry(server: ScriptedServer) -> None:
    server.push(200, anthropic_reply('{"answers": {"refund": 0.', stop_reason="max_tokens"))
    server.push(200, anthropic_reply(json.dumps(GOOD)))
    answer = ask(make_anthropic("claude-sonnet-5", base_url=server.url))
    assert answer.error is None
    assert "stop_reason max_tokens" in answer.extra["retry_reasons"][0]


def test_distributions_are_normalised_and_originals_kept(server: ScriptedServer) -> None:
    loose = {"answers": {**GOOD["answers"], "queue": {"billing": 0.9, "technical": 0.2, "unknown": 0.1}}}
    server.push(200, openai_reply(json.dumps(loose)))
    answer = ask(make_openai("m", base_url=server.url))
    assert answer.answers is not None
    probs = answer.answers["queue"]["probabilities"]
    assert probs == {"billing": 0.75, "technical": 0.1667, "unknown": 0.0833}
    assert sum(probs.values()) == pytest.approx(1, abs=1e-12)
    assert answer.extra["original_probabilities"] == {"queue": {"billing": 0.9, "technical": 0.2, "unknown": 0.1}}
    assert answer.extra["adapter"]["max_error"] == pytest.approx(0.2)


# ---- HTTP errors ---------------------------------------------------------------------------------

def test_429_is_retryable_with_retry_after(server: ScriptedServer, provider: dict[str, Any]) -> None:
    body = anthropic_error("rate_limit_error", "slow down") if provider is PROVIDERS["anthropic"] \
        else openai_error("slow down", "rate_limit_exceeded")
    server.push(429, body, {"retry-after": "7"})
    answer = ask(provider["make"](server.url))
    assert answer.retryable is True and answer.retry_after_s == 7.0
    assert answer.http_status == 429 and answer.answers is None
    assert answer.error is not None and "slow down" in answer.error


def test_anthropic_spend_limit_429_is_not_retryable(server: ScriptedServer) -> None:
    server.push(429, anthropic_error("rate_limit_error", "spend limit reached",
                                     error_code="enforced_spend_limit_reached"), {"retry-after": "30"})
    answer = ask(make_anthropic("claude-sonnet-5", base_url=server.url))
    assert answer.http_status == 429 and answer.retryable is False and answer.retry_after_s is None


@pytest.mark.parametrize("status, retryable", [(529, True), (500, True), (400, False), (404, False), (413, False)])
def test_anthropic_status_classes(server: ScriptedServer, status: int, retryable: bool) -> None:
    server.push(status, anthropic_error("some_error", f"status {status}"))
    answer = ask(make_anthropic("claude-sonnet-5", base_url=server.url))
    assert answer.retryable is retryable and answer.http_status == status
    assert answer.error_detail is not None and answer.error_detail["type"] == "some_error"


def test_400_is_not_retryable(server: ScriptedServer, provider: dict[str, Any]) -> None:
    body = anthropic_error("invalid_request_error", "bad schema") if provider is PROVIDERS["anthropic"] \
        else openai_error("bad schema")
    server.push(400, body)
    answer = ask(provider["make"](server.url))
    assert answer.retryable is False and answer.http_status == 400
    assert answer.error is not None and "bad schema" in answer.error
    assert answer.error_detail is not None and answer.error_detail["retryable"] is False


def test_401_raises_auth_error_naming_the_variable_and_hiding_the_key(server: ScriptedServer,
                                                                      provider: dict[str, Any]) -> None:
    echo = f"invalid x-api-key {provider['key']}"  # a server that echoes the key back must not leak it
    body = anthropic_error("authentication_error", echo) if provider is PROVIDERS["anthropic"] \
        else openai_error(echo, "invalid_api_key")
    server.push(401, body)
    with pytest.raises(AuthError) as caught:
        ask(provider["make"](server.url))
    assert provider["var"] in str(caught.value)
    assert provider["key"] not in str(caught.value)


def test_400_echoing_the_key_is_scrubbed(server: ScriptedServer, provider: dict[str, Any]) -> None:
    echo = f"header was {provider['key']}"
    body = anthropic_error("invalid_request_error", echo) if provider is PROVIDERS["anthropic"] \
        else openai_error(echo)
    server.push(400, body)
    answer = ask(provider["make"](server.url))
    assert answer.error is not None and "***" in answer.error
    assert_key_free(provider["key"], answer)


def test_missing_anthropic_key_is_an_auth_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(AuthError, match="ANTHROPIC_API_KEY"):
        make_anthropic("sonnet")


def test_connection_refused_is_retryable(provider: dict[str, Any]) -> None:
    with ScriptedServer() as srv:
        url = srv.url
    answer = ask(provider["make"](url))  # nobody listens there any more
    assert answer.retryable is True and answer.http_status is None
    assert answer.error is not None and answer.error.startswith("connection")


def test_bad_question_is_refused_before_any_call(server: ScriptedServer) -> None:
    one_option = {"q": {"type": "choice", "instructions": "?", "criteria": {"only": None}}}
    answer = ask(make_openai("m", base_url=server.url), questions=one_option)
    assert answer.retryable is False and answer.error is not None and "at least 2" in answer.error
    assert server.requests == []


# ---- parsing units -------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ['```json\n{"a": 1}\n```', '```\n{"a": 1}\n```', 'Sure:\n```JSON {"a": 1}```',
                                  '  {"a": 1}  '])
def test_strip_fences(text: str) -> None:
    assert json.loads(strip_fences(text)) == {"a": 1}


@pytest.mark.parametrize("reply, message", [
    ('{"answers": {"refund": 1.5, "queue": {"billing": 1, "technical": 0, "unknown": 0}, '
     '"urgency": {"0": 1, "1": 0, "2": 0}}}', "answers.refund must be between 0 and 1"),
    ('{"answers": {"refund": true, "queue": {"billing": 1, "technical": 0, "unknown": 0}, '
     '"urgency": {"0": 1, "1": 0, "2": 0}}}', "answers.refund must be a number"),
    ('{"answers": {"refund": 0.5, "queue": {"billing": 1, "technical": 0, "unknown": 0, "sales": 0}, '
     '"urgency": {"0": 1, "1": 0, "2": 0}}}', "keys that are not allowed: 'sales'"),
    ('{"answers": {"refund": 0.5, "queue": {"billing": 0, "technical": 0, "unknown": 0}, '
     '"urgency": {"0": 1, "1": 0, "2": 0}}}', "sum to 0"),
    ('[1, 2]', '{"answers": {...}}'),
])
def test_parse_reply_names_the_problem(reply: str, message: str) -> None:
    with pytest.raises(Malformed, match=message.replace("{", r"\{").replace("}", r"\}").replace(".", r"\.")):
        parse_reply(reply, QUESTIONS)


def test_score_fields_follow_the_adapter_formulas() -> None:
    answers, _ = parse_reply('{"answers": {"refund": 0, "queue": {"billing": 0.25, "technical": 0.25, "unknown": 0.5},'
                             ' "urgency": {"0": 0, "1": 0, "2": 1}}}', QUESTIONS)
    assert answers["urgency"]["score"] == 2.0 and answers["urgency"]["confidence"] == 1.0
    assert answers["queue"]["choice"] == "unknown"
    assert answers["queue"]["confidence"] == pytest.approx((0.5 - 1 / 3) / (1 - 1 / 3), abs=1e-4)
    assert answers["refund"] == {"type": "noul", "noul": 0.0}


def test_unstructured_mode_pastes_the_schema_into_the_prompt(server: ScriptedServer) -> None:
    server.push(200, openai_reply(json.dumps(GOOD)))
    answer = ask(make_openai("m", base_url=server.url, structured=False))
    body = server.requests[0]["json"]
    assert answer.error is None and "response_format" not in body
    assert '"additionalProperties": false' in user_turns(server.requests[0])[0]
    assert answer.extra["adapter"]["structured"] is False


def test_an_injected_httpx_transport_replaces_the_network() -> None:
    import httpx

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=anthropic_reply(json.dumps(GOOD)), headers={"request-id": "req_42"})

    backend = make_anthropic("claude-sonnet-5", transport=httpx.MockTransport(handler))
    answer = ask(backend)
    assert answer.error is None and answer.request_id == "req_42"
    assert str(seen[0].url) == "https://api.anthropic.com/v1/messages"
    assert backend.describe()["endpoint"] == "https://api.anthropic.com/v1/messages"
