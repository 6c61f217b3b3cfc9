"""Claude through the Anthropic Messages API (wire-contract §3), answering via backends/llm_client.py.

Structured output uses `output_config.format` (json_schema), not forced tool use
(Sonnet 5.5 rejects forced tools). No temperature: Sonnet 5+ refuse non-default
sampling parameters with a 400. A reply cut off (`max_tokens`) or refused
(`refusal`) counts as malformed and gets a corrective retry like bad JSON.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from ..pricing import claude_list_price, per_mtok
from .base import AuthError
from .llm_client import Exchange, LLMBackend, as_object, error_object, token_count, usable_key
from .llm_prompt import provider_schema
from .model_names import SONNET, SONNET_MODEL, folder_name

DEFAULT_BASE_URL = "https://api.anthropic.com"
KEY_VAR = "ANTHROPIC_API_KEY"
BASE_VAR = "ANTHROPIC_BASE_URL"
API_VERSION = "2023-06-01"
ALIASES = {SONNET: SONNET_MODEL}
CUT_OFF = {"max_tokens": "the reply was cut off at the token limit (stop_reason max_tokens); answer more briefly",
           "refusal": "the reply was a refusal (stop_reason refusal)"}


def read_key() -> str:
    key = os.environ.get(KEY_VAR, "").strip()
    if not key:
        raise AuthError(f"{KEY_VAR} is not set: the anthropic backend needs an Anthropic API key; "
                        f"export {KEY_VAR}=...")
    return usable_key(KEY_VAR, key)


class AnthropicBackend(LLMBackend):
    name = "anthropic"
    key_var = KEY_VAR

    def __init__(self, model: str, base_url: str | None = None, transport: httpx.AsyncBaseTransport | None = None,
                 timeout_s: float = 60.0, price: tuple[float, float] | None = None,
                 structured: bool = True) -> None:
        key = read_key()
        model = ALIASES.get(model.strip().lower(), model.strip())
        super().__init__(model, base_url or os.environ.get(BASE_VAR) or DEFAULT_BASE_URL, transport, timeout_s,
                         structured)
        self._secret = usable_key(KEY_VAR, key)
        self.url = f"{self.base_url}/v1/messages"
        self.price = price or claude_list_price(model)

    def backend_id(self, served_model: str | None) -> str:
        return folder_name("anthropic", served_model or self.model)

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "provider": "Anthropic Messages API", "backend": self.name, "model": self.model, "endpoint": self.url,
            "api_version": API_VERSION, "adapter": self.adapter_settings(), "calibrated": False,
            "notes": "An LLM asked to write a probability per label; its probabilities are not calibrated.",
            "reproduce": f"{KEY_VAR}=... pytest packs/ --jev-record --jev-backend=anthropic:{self.model}"}
        if self.price is not None:
            info["pricing"] = per_mtok(self.price)
        else:
            info["pricing_note"] = (f"no list price known for {self.model}; "
                                    "pass --jev-price-input and --jev-price-output")
        return info

    async def _exchange(self, system: str, messages: list[dict[str, str]], schema: dict[str, Any],
                        max_tokens: int) -> Exchange:
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "system": system, "messages": messages}
        if self.structured:
            body["output_config"] = {"format": {"type": "json_schema", "schema": provider_schema(schema)}}
        headers = {"x-api-key": self._secret, "anthropic-version": API_VERSION, "content-type": "application/json",
                   "accept": "application/json"}
        response = await self._post(self.url, headers, body)
        request_id = response.headers.get("request-id")
        if response.status_code != 200:
            raise self._http_failure(response, request_id, "Anthropic", never_retry=_spend_limit(response))
        doc = self._json_body(response, request_id)
        text = next((block.get("text") for block in doc.get("content") or []
                     if isinstance(block, dict) and block.get("type") == "text"), None)
        usage = as_object(doc.get("usage"))
        tokens_in = sum(token_count(usage.get(k)) for k in
                        ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        problem = CUT_OFF.get(str(doc.get("stop_reason")))
        if problem is None and not isinstance(text, str):
            problem = "the reply had no text block"
        return Exchange(text=text if isinstance(text, str) else None, input_tokens=tokens_in,
                        output_tokens=token_count(usage.get("output_tokens")),
                        model=doc.get("model") if isinstance(doc.get("model"), str) else None,
                        request_id=request_id or (doc.get("id") if isinstance(doc.get("id"), str) else None),
                        problem=problem)


def _spend_limit(response: httpx.Response) -> bool:
    """A 429 that waiting will not fix: the organisation's spend limit (wire-contract §3)."""
    if response.status_code != 429:
        return False
    details = error_object(response).get("details")
    return isinstance(details, dict) and details.get("error_code") == "enforced_spend_limit_reached"


def make_anthropic(model: str, base_url: str | None = None, transport: httpx.AsyncBaseTransport | None = None,
                   *, timeout_s: float = 60.0, price: tuple[float, float] | None = None,
                   structured: bool = True) -> AnthropicBackend:
    """Claude over the Messages API; "sonnet" means claude-sonnet-5. Needs ANTHROPIC_API_KEY."""
    return AnthropicBackend(model, base_url, transport, timeout_s, price, structured)
