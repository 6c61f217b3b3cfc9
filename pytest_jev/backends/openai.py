"""Any OpenAI-compatible chat server (Ollama, vLLM, ...) answering via backends/llm_client.py (wire-contract §4).

Structured output is `response_format: json_schema` with `strict: true`; local
Ollama enforces it by grammar, Ollama Cloud accepts it without enforcing, so
parsing and the corrective retries still matter. Temperature 0 by default: the
servers this targets are local models where a recording should be repeatable.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from ..pricing import per_mtok
from .llm_client import Exchange, LLMBackend, as_object, error_object, token_count, usable_key
from .llm_prompt import provider_schema
from .model_names import folder_name

DEFAULT_BASE_URL = "http://localhost:11434/v1"  # Ollama; vLLM serves http://localhost:8000/v1
KEY_VAR = "OPENAI_API_KEY"
BASE_VAR = "OPENAI_BASE_URL"
NO_KEY = "not-needed"  # local servers ignore the key but some clients insist on a Bearer header


class OpenAIBackend(LLMBackend):
    name = "openai"
    key_var = KEY_VAR

    def __init__(self, model: str, base_url: str | None = None, transport: httpx.AsyncBaseTransport | None = None,
                 timeout_s: float = 120.0, price: tuple[float, float] = (0.0, 0.0),
                 temperature: float | None = 0.0, structured: bool = True) -> None:
        super().__init__(model.strip(), base_url or os.environ.get(BASE_VAR) or DEFAULT_BASE_URL, transport,
                         timeout_s, structured)
        self._key = usable_key(KEY_VAR, os.environ.get(KEY_VAR, "").strip())
        self._secret = self._key
        self.url = f"{self.base_url}/chat/completions"
        self.price = price
        self.temperature = temperature

    def backend_id(self, served_model: str | None) -> str:
        return folder_name("openai", served_model or self.model)

    def describe(self) -> dict[str, Any]:
        return {"provider": "OpenAI-compatible chat completions", "backend": self.name, "model": self.model,
                "endpoint": self.url, "adapter": self.adapter_settings(), "temperature": self.temperature,
                "pricing": per_mtok(self.price),
                "calibrated": False,
                "notes": "An LLM asked to write a probability per label; its probabilities are not calibrated.",
                "reproduce": f"pytest packs/ --jev-record --jev-backend=openai:{self.model}"
                             + ("" if self.base_url == DEFAULT_BASE_URL else f" (server {self.base_url})")}

    async def _exchange(self, system: str, messages: list[dict[str, str]], schema: dict[str, Any],
                        max_tokens: int) -> Exchange:
        body: dict[str, Any] = {"model": self.model, "messages": [{"role": "system", "content": system}, *messages],
                                "max_tokens": max_tokens}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.structured:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "system_one_answers", "schema": provider_schema(schema), "strict": True}}
        headers = {"authorization": f"Bearer {self._key or NO_KEY}", "content-type": "application/json",
                   "accept": "application/json"}
        response = await self._post(self.url, headers, body)
        request_id = response.headers.get("x-request-id")
        if response.status_code != 200:
            raise self._http_failure(response, request_id, f"the OpenAI-compatible server at {self.base_url}",
                                     never_retry=_quota_gone(response))
        doc = self._json_body(response, request_id)
        choices = doc.get("choices")
        choice = as_object(choices[0]) if isinstance(choices, list) and choices else {}
        message = as_object(choice.get("message"))
        text = message.get("content")
        usage = as_object(doc.get("usage"))
        problem = None
        if choice.get("finish_reason") == "length":
            problem = "the reply was cut off at the token limit (finish_reason length); answer more briefly"
        elif isinstance(message.get("refusal"), str) and message["refusal"]:
            problem = "the reply was a refusal"
        elif not isinstance(text, str):
            problem = "the reply had no message content"
        return Exchange(text=text if isinstance(text, str) else None,
                        input_tokens=token_count(usage.get("prompt_tokens")),
                        output_tokens=token_count(usage.get("completion_tokens")),
                        model=doc.get("model") if isinstance(doc.get("model"), str) else None,
                        request_id=request_id or (doc.get("id") if isinstance(doc.get("id"), str) else None),
                        problem=problem)


def _quota_gone(response: httpx.Response) -> bool:
    """OpenAI's 429 `insufficient_quota`: out of credit, waiting will not help."""
    if response.status_code != 429:
        return False
    error = error_object(response)
    return "insufficient_quota" in (str(error.get("code")), str(error.get("type")))


def make_openai(model: str, base_url: str | None = None, transport: httpx.AsyncBaseTransport | None = None,
                *, timeout_s: float = 120.0, price: tuple[float, float] = (0.0, 0.0),
                temperature: float | None = 0.0, structured: bool = True) -> OpenAIBackend:
    """An OpenAI-compatible chat server (default: local Ollama); key from OPENAI_API_KEY, else none needed."""
    return OpenAIBackend(model, base_url, transport, timeout_s, price, temperature, structured)
