"""The `openrouter` backend: Jev through OpenRouter's System One API (wire-contract §1.6).

The same request and response bodies as TypeSafe's own API, so this is the `jev`
backend (typesafe.py) with another endpoint, key, model and folder name:

- `POST {base}/v1/systemone`, base `https://openrouter.ai/api` (so the URL is
  https://openrouter.ai/api/v1/systemone); `--jev-base-url`, else `OPENROUTER_BASE_URL`,
  replaces the base (it has no `/v1`).
- `Authorization: Bearer $OPENROUTER_API_KEY`; read here and nowhere else, never in an Answer.
- Model: `openrouter:<model>`, else `--jev-model`, else `typesafe/jev-1.13` (pinned; bare
  `openrouter` means that model, as `sonnet` means one, so replay and resume look only at its
  folders). The body always names this OpenRouter id: the pack's `tested` (a bare TypeSafe
  id such as `jev-1.13.0`) is the request's model elsewhere and is not sent here. Prefer
  `openrouter:<model>` to `--jev-model` for another model: the recorder's resume currently
  matches a bare `openrouter` run against the default model's folders only.
- Replies may add `id` (OpenRouter's generation id: kept as the line's `request_id`),
  `provider` (kept as the line's `provider`) and `usage.cost` (USD, kept in the line's
  usage as returned; grading still prices tokens at Jev's list price, $0.042/M input,
  output free, which is also what backend.json says).
- `probabilities`, `confidence` and `legend` are optional in OpenRouter's schema: a null
  one is dropped, so an answer without probabilities is recorded as breaking the answer
  contract (and asked again by the next run), never guessed.
- Retries as for `jev`: 408/429/5xx/529, transport errors and timeouts are retryable,
  Retry-After honoured; a malformed 200 is not. An error OpenRouter reports inside a 200
  body (`{"error": {"code", "message"}}`) is retryable when its code is. 401, 402 (out of
  credits) and a 403 that is not a moderation flag stop the run naming OPENROUTER_API_KEY;
  a moderation 403 (`error.metadata.reasons` / `flagged_input`) is that case's error only.

Results folder: the served model made a safe folder name (paths.safe_name, lower case)
plus `-openrouter`, e.g. `typesafe/jev-1.13-20260917` -> `typesafe-jev-1.13-20260917-openrouter`,
so a recording through OpenRouter never shares a folder with one made on TypeSafe's API.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx

from ..numbers import at_least_zero
from ..pricing import JEV_LIST_PRICE, per_mtok
from ..wire import Request
from .base import Answer, AuthError
from .model_names import OPENROUTER_MODEL, folder_name
from .typesafe import RETRYABLE, TypeSafeBackend, error_message, failed_answer, key_from_env

DEFAULT_BASE_URL = "https://openrouter.ai/api"
DEFAULT_MODEL = OPENROUTER_MODEL  # typesafe/jev-1.13
KEY_VAR = "OPENROUTER_API_KEY"
BASE_VAR = "OPENROUTER_BASE_URL"
OPTIONAL_FIELDS = ("probabilities", "confidence", "legend")


def read_key() -> str:
    return key_from_env(KEY_VAR, "the openrouter backend needs an OpenRouter API key")


class OpenRouterBackend(TypeSafeBackend):
    name = "openrouter"
    key_var = KEY_VAR
    base_var = BASE_VAR
    default_base_url = DEFAULT_BASE_URL

    def backend_id(self, served_model: str | None) -> str:
        return folder_name("openrouter", served_model or self.model)

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {"provider": "openrouter", "backend": self.name, "model": self.model,
                                "route": "OpenRouter System One API (TypeSafe Jev)"}
        if self.base_url != DEFAULT_BASE_URL:
            info["endpoint"] = self.base_url
        info.update(pricing=per_mtok(JEV_LIST_PRICE), calibrated=True,
                    pricing_note="list price; a line's usage.cost is what OpenRouter billed for it",
                    reproduce=f"pytest packs/ --jev-record --jev-backend=openrouter:{self.model} "
                              f"(needs {KEY_VAR})")
        return info

    # -- hooks of TypeSafeBackend -------------------------------------------------------------

    def _read_key(self) -> str:
        return read_key()

    def _default_model(self) -> str:
        return DEFAULT_MODEL

    def _model_for(self, request: Request) -> str:
        return self.model

    def _auth_failure(self, status: int, message: str, doc: Any) -> AuthError | None:
        if status == 403 and _moderation(doc):
            return None  # this input was flagged: an error for this case, not for the run
        if status == 402:
            return AuthError(f"HTTP 402 from {self.url}: {message[:200]}; the OpenRouter account or key in "
                             f"{KEY_VAR} is out of credits: add credits or raise the key's limit")
        return super()._auth_failure(status, message, doc)

    def _failure_in_ok(self, doc: Any, request_id: str | None, text: str) -> Answer | None:
        if not isinstance(doc, dict) or "answers" in doc or doc.get("error") is None:
            return None
        error = doc["error"]
        code = error.get("code") if isinstance(error, dict) else None
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        message = self._scrub(error_message(text))
        retryable = code in RETRYABLE
        return failed_answer("upstream", f"200 with error {code}: {message}" if code else f"200 with error: {message}",
                        200, retryable, request_id=request_id, body=self._scrub(text)[:300])

    def _answer(self, doc: dict[str, Any], latency_ms: float, request_id: str | None) -> Answer:
        answer = super()._answer(doc, latency_ms, request_id)
        generation, provider = doc.get("id"), doc.get("provider")
        return dataclasses.replace(
            answer, answers=_without_nulls(doc["answers"]), usage=_usage(answer.usage),
            request_id=generation if isinstance(generation, str) and generation else request_id,
            extra={"provider": provider} if isinstance(provider, str) and provider else {})


def _moderation(doc: Any) -> bool:
    error = doc.get("error") if isinstance(doc, dict) else None
    metadata = error.get("metadata") if isinstance(error, dict) else None
    return isinstance(metadata, dict) and ("reasons" in metadata or "flagged_input" in metadata)


def _without_nulls(answers: dict[str, Any]) -> dict[str, Any]:
    """Answers with their optional fields given as null left out."""
    return {qid: {k: v for k, v in answer.items() if not (v is None and k in OPTIONAL_FIELDS)}
            if isinstance(answer, dict) else answer for qid, answer in answers.items()}


def _usage(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    """Usage as returned, with `cost` (USD) kept only when it is a finite number >= 0."""
    if usage is None or "cost" not in usage:
        return usage
    cost = usage["cost"]
    if isinstance(cost, str):
        try:
            cost = float(cost)
        except ValueError:
            cost = None
    ok = at_least_zero(cost)
    out = dict(usage)
    if ok:
        out["cost"] = cost
    else:
        del out["cost"]
    return out


def make_openrouter(model: str | None = None, base_url: str | None = None,
                    transport: httpx.AsyncBaseTransport | None = None, *, timeout_s: float = 30.0) -> OpenRouterBackend:
    """Jev through OpenRouter (default model typesafe/jev-1.13). Needs OPENROUTER_API_KEY."""
    return OpenRouterBackend(base_url=base_url, model=model, transport=transport, timeout_s=timeout_s)
