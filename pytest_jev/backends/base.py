"""The one small interface every backend implements (live, embedded, mock alike).

A backend answers one Request (wire.py) at a time, asynchronously; the recorder owns
concurrency, pacing, retries between attempts that the backend marks retryable,
journaling and resume. Backends never write files and never see a key they did
not read from the environment themselves; keys never appear in an Answer.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol

from ..errors import JevError
from ..wire import Request

RECORD_VERSION = 1


@functools.lru_cache(maxsize=1)
def plugin_version() -> str:
    """The installed jev-packs version (User-Agent, recording lines); "0" when not installed.

    Cached: importlib.metadata parses the METADATA file on every call (~0.3 ms).
    """
    try:
        return version("jev-packs")
    except PackageNotFoundError:
        return "0"


@dataclass(frozen=True)
class Answer:
    """One attempt's outcome. On success `answers` holds System One shaped answers."""

    model: str | None = None  # the model version that actually answered
    answers: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None  # input_tokens, output_tokens (+ *_total for LLMs)
    latency_ms: float | None = None
    error: str | None = None  # short, key-free
    error_detail: dict[str, Any] | None = None  # {type, status, retryable, message, body_excerpt}
    retryable: bool = False
    retry_after_s: float | None = None  # from Retry-After / retry-after-ms
    http_status: int | None = None
    request_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. adapter settings for LLM rows


class AuthError(JevError):
    """401/403 or a missing key: the whole run stops; the message names the variable to set."""


class Backend(Protocol):
    name: str  # short kind: jev | anthropic | openai | sparrow | minilm | mock
    mode: str  # "live" or "mock"

    def backend_id(self, served_model: str | None) -> str:
        """Folder name under results/: names the model version actually served, e.g. jev-1.13.0."""

    def describe(self) -> dict[str, Any]:
        """backend.json body: provider, model, endpoint, pricing, calibrated, reproduce (no secrets)."""

    async def answer(self, request: Request) -> Answer:
        """One attempt. Raise AuthError to stop the run; return Answer(error=...) otherwise."""

    async def aclose(self) -> None:
        """Release clients and sessions."""
