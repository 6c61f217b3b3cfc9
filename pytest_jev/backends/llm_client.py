"""The attempt loop every LLM backend shares, answering System One questions.

Mechanics follow system-one-adapter as described in wire-contract §2, written
here in our own words: the state is untrusted data inside <document> tags, the
model writes a probability per allowed label (probabilities mode), a JSON
schema constrains the reply (llm_prompt.py), malformed replies get up to two
corrective retries, distributions are normalised and the System One fields are
derived from them (llm_reply.py, system_one.py). Provider modules (anthropic.py,
openai.py) only turn a conversation into one HTTP exchange.

What we do differently from the adapter, on purpose:
- usage.input_tokens/output_tokens are the totals over all attempts (the adapter
  reports the last attempt's), so a recording's cost never under-counts;
- the requested model is the backend's own, never Request.model (that field
  names a Jev build when a pack is recorded).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import httpx

from ..wire import Request
from .base import Answer, AuthError
from .llm_prompt import SYSTEM_PROMPT, answer_schema, correction, max_output_tokens, user_message
from .llm_reply import Malformed, parse_reply
from .system_one import BadQuestion, check_questions
from .typesafe import error_message, retry_after_s

MAX_CORRECTIVE_RETRIES = 2

_SENDABLE_KEY = re.compile(r"[\x20-\x7e]*")


def usable_key(var: str, key: str) -> str:
    """The key, or AuthError when it cannot travel in a header (a line break or other control
    character, non-ASCII). httpx would fail every call; for a line break with an error that
    quotes the key escaped ("...\\n..."), which no scrub of the raw key matches."""
    if not _SENDABLE_KEY.fullmatch(key):
        raise AuthError(f"{var} is not a valid key (printable ASCII, no line breaks or control characters); "
                        "check its value")
    return key


@dataclass
class Exchange:
    """One HTTP round trip that returned a reply (its text may still be unusable)."""

    text: str | None
    input_tokens: int
    output_tokens: int
    model: str | None
    request_id: str | None
    http_status: int = 200
    problem: str | None = None  # provider-side reason the reply is unusable (cut off, refused)


class CallFailed(Exception):
    """An attempt that got no usable reply (HTTP error, transport error, unreadable envelope)."""

    def __init__(self, kind: str, message: str, *, status: int | None = None, retryable: bool = False,
                 retry_after: float | None = None, request_id: str | None = None,
                 body_excerpt: str | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.status = kind, message, status
        self.retryable, self.retry_after, self.request_id = retryable, retry_after, request_id
        self.body_excerpt = body_excerpt


# ---- the attempt loop ------------------------------------------------------------------------

class LLMBackend:
    """A System One backend answered by an LLM; subclasses implement `_exchange` for one provider."""

    name = "llm"
    mode = "live"
    key_var = ""

    def __init__(self, model: str, base_url: str, transport: httpx.AsyncBaseTransport | None = None,
                 timeout_s: float = 60.0, structured: bool = True) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.structured = structured
        self._transport = transport
        self._timeout = httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._secret = ""

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def adapter_settings(self) -> dict[str, Any]:
        return {"answer_mode": "probabilities", "structured": self.structured, "normalized": True,
                "corrective_retries": MAX_CORRECTIVE_RETRIES, "prompt": "pytest_jev.backends.llm v1"}

    async def _exchange(self, system: str, messages: list[dict[str, str]], schema: dict[str, Any],
                        max_tokens: int) -> Exchange:
        raise NotImplementedError

    async def answer(self, request: Request) -> Answer:
        start = time.perf_counter()
        try:
            check_questions(request.questions)
        except BadQuestion as exc:
            return _failure(CallFailed("bad_question", str(exc)), start)
        schema = answer_schema(request.questions)
        messages = [{"role": "user",
                     "content": user_message(request.state, request.questions, None if self.structured else schema)}]
        tally = _Tally()
        exchange: Exchange | None = None
        problem = ""
        for _attempt in range(MAX_CORRECTIVE_RETRIES + 1):
            try:
                exchange = await self._exchange(SYSTEM_PROMPT, messages, schema, max_output_tokens(request.questions))
            except CallFailed as failed:
                return _failure(failed, start, tally, self.adapter_settings())
            tally.add(exchange)
            try:
                if exchange.problem:
                    raise Malformed(exchange.problem)
                answers, info = parse_reply(exchange.text, request.questions)
            except Malformed as exc:
                problem = self._scrub(str(exc))
                tally.reasons.append(problem)
                said = (exchange.text or "").strip() or "(empty reply)"  # Anthropic refuses empty turns
                messages = [*messages, {"role": "assistant", "content": said},
                            {"role": "user", "content": correction(problem)}]
                continue
            extra = {"adapter": {**self.adapter_settings(), "max_error": info["max_error"]},
                     "retry_reasons": list(tally.reasons), "llm_attempts": tally.attempts}
            if info["original_probabilities"]:
                extra["original_probabilities"] = info["original_probabilities"]
            return Answer(model=exchange.model or self.model, answers=answers, usage=tally.usage(),
                          latency_ms=_ms(start), http_status=exchange.http_status,
                          request_id=exchange.request_id, extra=extra)
        assert exchange is not None
        gave_up = CallFailed("malformed_output",  # not transient (wire contract): an error line, asked again next run
                             f"reply still malformed after {MAX_CORRECTIVE_RETRIES} corrective retries: {problem}",
                             status=exchange.http_status, retryable=False, request_id=exchange.request_id,
                             body_excerpt=self._scrub(exchange.text or "")[:300])
        return replace(_failure(gave_up, start, tally, self.adapter_settings()), model=exchange.model or self.model)

    async def aclose(self) -> None:
        client, self._client, self._loop = self._client, None, None
        if client is not None:
            try:
                await client.aclose()
            except RuntimeError:  # its event loop is gone: nothing left to release
                pass

    # -- helpers for the provider modules ------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:  # pooled connections cannot cross loops
            self._client = httpx.AsyncClient(transport=self._transport, timeout=self._timeout,
                                             follow_redirects=False)
            self._loop = loop
        return self._client

    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    async def _post(self, url: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> httpx.Response:
        try:
            return await self._http().post(url, headers=dict(headers),
                                           content=json.dumps(body, ensure_ascii=False).encode("utf-8"))
        except httpx.TimeoutException as exc:
            raise CallFailed("timeout", f"{type(exc).__name__} after {self._timeout.read:g} s",
                             retryable=True) from None
        except httpx.TransportError as exc:
            raise CallFailed("connection", self._scrub(f"{type(exc).__name__}: {exc}")[:200], retryable=True) from None

    def _json_body(self, response: httpx.Response, request_id: str | None) -> dict[str, Any]:
        try:
            doc = response.json()
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            raise CallFailed("malformed", "200 with a body that is not a JSON object", status=response.status_code,
                             retryable=False, request_id=request_id, body_excerpt=self._scrub(response.text)[:300])
        return doc

    def _http_failure(self, response: httpx.Response, request_id: str | None, provider: str,
                      never_retry: bool = False) -> CallFailed:
        """AuthError for 401/403; otherwise a CallFailed, retryable for 408/429/5xx/529."""
        status = response.status_code
        text = self._scrub(response.text)  # before any cut: a cut key would no longer match
        message = self._scrub(error_message(text))[:300]
        if status in (401, 403):
            raise AuthError(f"{provider} answered HTTP {status} ({message[:160]}); check {self.key_var}")
        retryable = (status in (408, 429) or status >= 500) and not never_retry
        return CallFailed(_error_type(response) or f"http_{status}", message, status=status, retryable=retryable,
                          retry_after=retry_after_s(response.headers) if retryable else None,
                          request_id=request_id, body_excerpt=text[:300])


class _Tally:
    def __init__(self) -> None:
        self.input_tokens = self.output_tokens = self.attempts = 0
        self.reasons: list[str] = []

    def add(self, exchange: Exchange) -> None:
        self.attempts += 1
        self.input_tokens += exchange.input_tokens
        self.output_tokens += exchange.output_tokens

    def usage(self) -> dict[str, Any]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "input_tokens_total": self.input_tokens, "output_tokens_total": self.output_tokens,
                "n_retries_malformed": max(0, self.attempts - 1)}  # only corrective retries re-ask


def error_object(response: httpx.Response) -> dict[str, Any]:
    """The `error` object of an Anthropic or OpenAI-style error body; {} when there is none."""
    try:
        doc = response.json()
    except ValueError:
        return {}
    error = doc.get("error") if isinstance(doc, dict) else None
    return error if isinstance(error, dict) else {}


def _error_type(response: httpx.Response) -> str | None:
    """`error.type` (Anthropic) or `error.code`/`error.type` (OpenAI-style) of an error body."""
    error = error_object(response)
    for key in ("type", "code"):
        if isinstance(error.get(key), str) and error[key]:
            return str(error[key])
    return None


def as_object(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (provider replies are read defensively)."""
    return value if isinstance(value, dict) else {}


def token_count(value: Any) -> int:
    """A usage count as an int; 0 when the server left it out or sent something else."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 1)


def _failure(failed: CallFailed, start: float, tally: _Tally | None = None,
             adapter: dict[str, Any] | None = None) -> Answer:
    short = f"HTTP {failed.status}: {failed.message}" if failed.kind.startswith("http") or (
        failed.status and failed.status != 200) else f"{failed.kind}: {failed.message}"
    detail = {"type": failed.kind, "status": failed.status, "retryable": failed.retryable,
              "message": failed.message[:500], "body_excerpt": failed.body_excerpt}
    extra: dict[str, Any] = {}
    if tally is not None and tally.attempts:
        extra = {"retry_reasons": list(tally.reasons), "llm_attempts": tally.attempts}
    if adapter is not None:
        extra["adapter"] = adapter
    return Answer(error=" ".join(short.split())[:200], error_detail=detail, retryable=failed.retryable,
                  retry_after_s=failed.retry_after, http_status=failed.status, request_id=failed.request_id,
                  usage=tally.usage() if tally is not None and tally.attempts else None,
                  latency_ms=_ms(start), extra=extra)
