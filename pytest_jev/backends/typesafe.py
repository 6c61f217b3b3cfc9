"""The `jev` backend: TypeSafe System One over HTTP (wire-contract §1), one attempt per call.

The recorder owns retries; this module only says whether an attempt is worth
retrying (408/429/5xx/529, transport errors, timeouts; not a malformed 200) and how
long the server asked us to wait (retry-after-ms, then Retry-After). 401/403 and
a missing key raise AuthError naming TYPESAFE_API_KEY. The key is read from the
environment here and nowhere else; it never enters an Answer.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from ..paths import safe_name
from ..pricing import JEV_LIST_PRICE, per_mtok
from ..wire import Request
from .base import Answer, AuthError, plugin_version
from .model_names import JEV_DEFAULT_MODEL

DEFAULT_BASE_URL = "https://api.typesafe.ai"
DEFAULT_MODEL = JEV_DEFAULT_MODEL
KEY_VAR = "TYPESAFE_API_KEY"
BASE_VAR = "TYPESAFE_BASE_URL"
RETRYABLE = frozenset({408, 429, 529}) | frozenset(range(500, 600))
_PRINTABLE_KEY = re.compile(r"^[\x21-\x7e]+$")
# httpcore's pool does O(requests x connections) work per request: one client with 32
# requests in flight recorded 86 cases/s on loopback (300/s with one in flight). Spread
# over clients of 2 requests each, opened as needed, the same run records ~650 cases/s
# (1 per client: ~550/s, 4: ~550/s, 8: ~450/s; benchmarks/bench_recorder.py, 2 cores).
PER_SHARD = 2
MAX_SHARDS = 64


class _Shard:
    __slots__ = ("busy", "client")

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.busy = 0


def resolve_base_url(base_url: str | None, base_var: str = BASE_VAR, default: str = DEFAULT_BASE_URL) -> str:
    """explicit > $TYPESAFE_BASE_URL (a route's own variable) > default; trailing / stripped; the
    base has no /v1."""
    return (base_url or os.environ.get(base_var) or default).rstrip("/")


def read_key() -> str:
    return key_from_env(KEY_VAR, "the jev backend needs a TypeSafe API key (a replica accepts any value)")


def key_from_env(var: str, needed: str) -> str:
    """The key in `var`; AuthError naming `var` when it is unset or not sendable in a header."""
    key = os.environ.get(var, "").strip()
    if not key:
        raise AuthError(f"{var} is not set: {needed}; export {var}=...")
    if not _PRINTABLE_KEY.match(key):
        raise AuthError(f"{var} is not a valid key (printable ASCII without spaces); check its value")
    return key


def error_message(body: bytes | str) -> str:
    """The message of an error body, in the SDK's order of shapes (wire-contract §1.5)."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        doc = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:300]
    if isinstance(doc, dict):
        for key in ("error", "message", "detail"):
            value = doc.get(key)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, dict) and isinstance(value.get("message"), str):
                return str(value["message"])
            if key == "detail" and isinstance(value, list) and value:
                return "; ".join(_validation_item(item) for item in value[:5])
    return " ".join(text.split())[:300]


def _validation_item(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    loc = ".".join(str(part) for part in item.get("loc") or [])
    msg = str(item.get("msg", ""))
    return f"{loc}: {msg}" if loc else msg


def retry_after_s(headers: httpx.Headers, now: float | None = None) -> float | None:
    """retry-after-ms (milliseconds) first, then Retry-After (seconds or an HTTP-date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            value = float(raw_ms) / 1000
            if math.isfinite(value):
                return max(0.0, value)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        value = float(raw)
        return max(0.0, value) if math.isfinite(value) else None
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _finite(value: Any) -> Any:
    """NaN/±Inf as the SDK sends them: the strings "NaN", "Infinity", "-Infinity"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _encode(body: dict[str, Any]) -> bytes:
    try:
        text = json.dumps(body, ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(body), ensure_ascii=False)
    return text.encode("utf-8")


class TypeSafeBackend:
    """TypeSafe System One. Routes that serve the same body (OpenRouter: backends/openrouter.py)
    subclass it and override the class attributes and the small hooks below."""

    name = "jev"
    mode = "live"
    key_var = KEY_VAR  # named by AuthError messages
    base_var = BASE_VAR
    default_base_url = DEFAULT_BASE_URL
    request_id_header = "x-typesafe-request-id"

    def __init__(self, *, base_url: str | None = None, model: str | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, timeout_s: float = 30.0) -> None:
        self._key = self._read_key()
        self.base_url = resolve_base_url(base_url, self.base_var, self.default_base_url)
        self.url = f"{self.base_url}/v1/systemone"
        self.model = model or self._default_model()
        self._transport = transport
        self._timeout = httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))
        self._shards: list[_Shard] = []
        # One SSL context for all clients, made here rather than on the first (paced) request:
        # loading the CA bundle costs ~30 ms, and httpx loads it even for http:// URLs.
        self._ssl: Any = httpx.create_ssl_context() if transport is None else True
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    # -- hooks a route to the same API overrides --------------------------------------------

    def _read_key(self) -> str:
        return read_key()

    def _default_model(self) -> str:
        return os.environ.get("TYPESAFE_DEFAULT_MODEL") or DEFAULT_MODEL

    def _model_for(self, request: Request) -> str:
        """The model id the body names."""
        return request.model or self.model

    def _auth_failure(self, status: int, message: str, doc: Any) -> AuthError | None:
        """The AuthError that stops the run for this error reply; None to record it as a case error."""
        if status in (401, 403):
            return AuthError(f"HTTP {status} from {self.url}: {message[:200]}; check {self.key_var} "
                             f"(and {self.base_var} if the endpoint is wrong)")
        return None

    def _failure_in_ok(self, doc: Any, request_id: str | None, text: str) -> Answer | None:
        """An error a gateway reports inside a 200 body; None when the body is to be read as answers."""
        return None

    def _answer(self, doc: dict[str, Any], latency_ms: float, request_id: str | None) -> Answer:
        """The Answer of a 200 whose body has the System One shape (checked by _shape_problem)."""
        usage = doc.get("usage")
        return Answer(model=doc.get("model"), answers=doc["answers"],
                      usage=dict(usage) if isinstance(usage, dict) else None, latency_ms=latency_ms,
                      http_status=200, request_id=request_id)

    # -- Backend interface ------------------------------------------------------------------

    def backend_id(self, served_model: str | None) -> str:
        """jev-<version> named by the served model, made a safe folder name (a server's model
        string `jev-/../../x` must not become a path)."""
        served = safe_name(served_model or self.model, fallback="jev")
        return served if served.startswith("jev-") else f"jev-{served}"

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {"provider": "TypeSafe System One", "backend": self.name, "model": self.model}
        if self.base_url != DEFAULT_BASE_URL:
            info["endpoint"] = self.base_url
        info.update(pricing=per_mtok(JEV_LIST_PRICE), calibrated=True,
                    reproduce="pytest packs/ --jev-record --jev-backend=jev (needs TYPESAFE_API_KEY)")
        return info

    async def answer(self, request: Request) -> Answer:
        headers = {"Authorization": f"Bearer {self._key}", "Accept": "application/json",
                   "Content-Type": "application/json", "User-Agent": f"jev-packs/{plugin_version()}"}
        if request.attempt > 0:
            headers["X-TypeSafe-Retry-Count"] = str(request.attempt)
        body = _encode({"model": self._model_for(request), "state": request.state,
                        "questions": request.questions})
        shard = self._http()
        shard.busy += 1
        start = time.perf_counter()
        try:
            response = await shard.client.post(self.url, content=body, headers=headers)
        except httpx.TimeoutException as exc:
            return failed_answer("timeout", f"{type(exc).__name__} after {self._timeout.read:g} s", None, True)
        except httpx.TransportError as exc:
            return failed_answer("connection", f"{type(exc).__name__}: {exc}"[:200], None, True)
        finally:
            shard.busy -= 1
        latency_ms = round((time.perf_counter() - start) * 1000, 1)
        return self._read(response, latency_ms)

    async def aclose(self) -> None:
        shards, self._shards, self._loop = self._shards, [], None
        for shard in shards:
            try:
                await shard.client.aclose()
            except RuntimeError:  # its loop is gone (a second asyncio.run): nothing left to release
                pass

    # -- internals --------------------------------------------------------------------------

    def _http(self) -> _Shard:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a pooled connection cannot cross event loops
            self._shards, self._loop = [], loop
        shard = min(self._shards, key=lambda sh: sh.busy, default=None)
        if shard is None or (shard.busy >= PER_SHARD and len(self._shards) < MAX_SHARDS):
            shard = _Shard(httpx.AsyncClient(
                transport=self._transport, timeout=self._timeout, follow_redirects=False,
                verify=self._ssl,
                limits=httpx.Limits(max_connections=4 * PER_SHARD, max_keepalive_connections=2 * PER_SHARD)))
            self._shards.append(shard)
        return shard

    def _read(self, response: httpx.Response, latency_ms: float) -> Answer:
        status = response.status_code
        request_id = response.headers.get(self.request_id_header)
        if status == 200:
            return self._read_ok(response, latency_ms, request_id)
        text = self._scrub(response.text)  # before any cut: a cut key would no longer match
        message = self._scrub(error_message(text))
        stop = self._auth_failure(status, message, _json_or_none(text))
        if stop is not None:
            raise stop
        retryable = status in RETRYABLE
        return failed_answer("http", message, status, retryable, retry_after=retry_after_s(response.headers),
                        request_id=request_id, body=text[:300])

    def _read_ok(self, response: httpx.Response, latency_ms: float, request_id: str | None) -> Answer:
        try:
            doc = response.json()
        except ValueError:
            return failed_answer("malformed", "200 with a body that is not JSON", 200, False,
                            request_id=request_id, body=self._scrub(response.text)[:300])
        failed = self._failure_in_ok(doc, request_id, response.text)
        if failed is not None:
            return failed
        problem = _shape_problem(doc)
        if problem:
            return failed_answer("malformed", f"200 with {problem}", 200, False, request_id=request_id,
                            body=self._scrub(response.text)[:300])
        return self._answer(doc, latency_ms, request_id)

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _shape_problem(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return "a body that is not a JSON object"
    if not isinstance(doc.get("answers"), dict):
        return "no answers object"
    if doc.get("model") is not None and not isinstance(doc.get("model"), str):
        return "a model that is not a string"
    if any(not isinstance(a, dict) or "type" not in a for a in doc["answers"].values()):
        return "an answer without a type"
    return None


def failed_answer(kind: str, message: str, status: int | None, retryable: bool, *, retry_after: float | None = None,
                  request_id: str | None = None, body: str | None = None) -> Answer:
    """The Answer of an attempt that failed: a short, key-free error line and its detail (type,
    status, whether a retry may help, the message, an excerpt of the body)."""
    short = f"HTTP {status}: {message}" if kind == "http" else f"{kind}: {message}"
    detail: Mapping[str, Any] = {"type": kind, "status": status, "retryable": retryable, "message": message[:500],
                                 "body_excerpt": body}
    return Answer(error=" ".join(short.split())[:200], error_detail=dict(detail), retryable=retryable,
                  retry_after_s=retry_after, http_status=status, request_id=request_id)
