"""The one small interface every backend implements (live, embedded, mock alike).

A backend answers one Request at a time, asynchronously; the recorder owns
concurrency, pacing, retries between attempts that the backend marks retryable,
journaling and resume. Backends never write files and never see a key they did
not read from the environment themselves; keys never appear in an Answer.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import JevError
from ..fileio import canonical_json

RECORD_VERSION = 1
FINGERPRINT_VERSION = "v1"


@functools.lru_cache(maxsize=1)
def plugin_version() -> str:
    """The installed jev-packs version (User-Agent, recording lines); "0" when not installed.

    Cached: importlib.metadata parses the METADATA file on every call (~0.3 ms).
    """
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return "0"
    try:
        return version("jev-packs")
    except PackageNotFoundError:
        return "0"


@dataclass(frozen=True)
class Request:
    case_id: str
    state: Any
    questions: dict[str, dict[str, Any]]  # exactly as sent: Question.as_sent() per question id
    model: str  # the requested model (an alias such as jev-latest is fine)
    attempt: int = 0  # 0 for the first try, n for the n-th retry (X-TypeSafe-Retry-Count); not fingerprinted
    # --jev-shuffle-options: choice question id -> its labels in the order sent (fingerprinted)
    option_order: dict[str, list[str]] | None = None

    def fingerprint(self, backend: str) -> str:
        """sha256 of backend, requested model, state and questions as sent (the resume key)."""
        return fingerprints([self], backend)[0]


def fingerprints(requests: list[Request], backend: str) -> list[str]:
    """Request.fingerprint of each request, with each distinct questions object serialized once.

    The body is the canonical JSON (sorted keys, no spaces) of {backend, questions, requested_model,
    state, v}, plus `option_order` for a request whose choice options were shuffled: canonical JSON
    sorts the options' keys, so without it a shuffled request would fingerprint like the plain one
    and its answers be reused for it. Written out key by key in sorted order it is the very same
    string one json.dumps of the whole object gives. A pack's requests share one questions dict
    (unless options are shuffled), which is most of the body: serialized once, not once per case.
    """
    head = '{"backend":' + canonical_json(backend) + ","
    tail = ',"v":' + canonical_json(FINGERPRINT_VERSION) + "}"
    seen: dict[int, str] = {}  # id() is safe here: every questions object stays alive in `requests`
    out = []
    for req in requests:
        questions = seen.get(id(req.questions))
        if questions is None:
            questions = seen[id(req.questions)] = canonical_json(req.questions)
        order = "" if req.option_order is None else f'"option_order":{canonical_json(req.option_order)},'
        body = (f'{head}{order}"questions":{questions},"requested_model":{canonical_json(req.model)},'
                f'"state":{canonical_json(req.state)}{tail}')
        out.append("sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest())
    return out


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
