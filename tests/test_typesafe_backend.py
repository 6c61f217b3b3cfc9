"""The `jev` backend: the real sparrow-decider replica end to end, a fault server, and the wire details."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest
from packfiles import lines_by_case, write_pack
from servers import LoopbackServer, Reply, Seen, ok_reply, per_case_script, sparrow_replica

from pytest_jev.backends.base import AuthError
from pytest_jev.backends.typesafe import TypeSafeBackend, error_message, resolve_base_url, retry_after_s
from pytest_jev.packs import load_pack
from pytest_jev.record.engine import record_pack_sync
from pytest_jev.record.journal import journal_path
from pytest_jev.recording_file import load_recording
from pytest_jev.wire import Request

KEY = "tsk-test-SECRET-0123456789abcdef"


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    monkeypatch.delenv("TYPESAFE_BASE_URL", raising=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def sparrow_url() -> Iterator[str]:
    with sparrow_replica() as url:
        yield url


def all_files_text(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in root.rglob("*") if p.is_file())


def test_records_a_pack_against_the_real_replica(sparrow_url: str, tmp_path: Path) -> None:
    pack = load_pack(write_pack(tmp_path / "packs", n=5))
    out = tmp_path / "results" / "tiny-pack.predictions.jsonl"
    backend = TypeSafeBackend(base_url=sparrow_url)  # trailing / is stripped
    summary = record_pack_sync(pack, backend, out)
    recording = load_recording(out)
    assert list(recording.lines) == [c.id for c in pack.cases]
    assert summary.n_errors == 0 and recording.models() == ["sparrow-nano-general-v1.1"]
    first = recording.lines["c-001"]
    assert first["base_url"] == sparrow_url.rstrip("/") and first["http_status"] == 200
    assert set(first["answers"]) == {"queue", "refund", "urgency"}
    assert first["answers"]["queue"]["choice"] == "billing"  # "charged twice ... refund me"
    assert set(first["answers"]["urgency"]["probabilities"]) == {"0", "1", "2"}
    info = json.loads((out.parent / "backend.json").read_text())
    assert info["id"] == "jev-sparrow-nano-general-v1.1" and info["endpoint"] == sparrow_url.rstrip("/")
    assert info["pricing"]["input_usd_per_mtok"] == 0.042
    assert KEY not in all_files_text(tmp_path)


def _bad_shape(seen: Seen) -> Reply:
    reply = ok_reply(seen)
    reply.body["answers"]["queue"]["probabilities"]["refunds"] = 0.1  # not a declared label
    return reply


SCRIPTS = {  # case -> reply per attempt (the last one repeats)
    "c-001": [ok_reply],
    "c-002": [lambda s: Reply(429, {"error": "slow down"}, {"Retry-After": "1"}), ok_reply],
    "c-003": [lambda s: Reply(500, "upstream exploded"),
              lambda s: Reply(529, {"error": {"message": "overloaded"}}), ok_reply],
    "c-004": [lambda s: ok_reply(s, delay_s=1.5), ok_reply],
    "c-005": [lambda s: Reply(200, b'{"model": "jev-1.13.0", "answers": {'), ok_reply],
    "c-006": [_bad_shape],
    "c-007": [lambda s: Reply(drop=True), ok_reply],
    "c-008": [lambda s: Reply(400, {"detail": [{"loc": ["body", "questions"], "msg": "too many levels"}]})],
    "c-009": [lambda s: Reply(503, {"message": f"bad key {KEY}"}, {"retry-after-ms": "50"}), ok_reply],
}


def test_fault_server(tmp_path: Path) -> None:
    pack = load_pack(write_pack(tmp_path / "packs", n=9))
    out = tmp_path / "rec.jsonl"
    with LoopbackServer(per_case_script(SCRIPTS)) as server:
        summary = record_pack_sync(pack, TypeSafeBackend(base_url=server.base_url), out, timeout_s=0.5,
                                   backoff_base_s=0.01, max_attempts=4)
    lines = lines_by_case(out)
    attempts = {cid: line["attempts"] for cid, line in lines.items()}
    # malformed replies (c-005: not JSON, c-006: an undeclared label) are not transient: one attempt,
    # an error line, and the next --jev-record run asks again
    assert attempts == {"c-001": 1, "c-002": 2, "c-003": 3, "c-004": 2, "c-005": 1, "c-006": 1, "c-007": 2,
                        "c-008": 1, "c-009": 2}
    assert dict(server.per_case) == attempts  # the server saw exactly those requests
    assert lines["c-001"]["request_id"] == "req-c-001-1" and lines["c-001"]["retry_reasons"] == []
    by_case = {(s.case, s.n): s for s in server.requests}
    assert by_case["c-002", 2].t - by_case["c-002", 1].t >= 0.95  # Retry-After: 1 honoured
    assert by_case["c-002", 2].headers["x-typesafe-retry-count"] == "1"
    assert "x-typesafe-retry-count" not in by_case["c-002", 1].headers
    assert lines["c-003"]["retry_reasons"] == ["HTTP 500: upstream exploded", "HTTP 529: overloaded"]
    assert lines["c-004"]["retry_reasons"][0].startswith("timeout")
    assert lines["c-005"]["error"].startswith("malformed: 200 with a body that is not JSON")
    assert lines["c-007"]["retry_reasons"][0].startswith("connection")
    assert lines["c-006"]["error"].startswith("misfit: queue: undeclared label(s) ['refunds']")
    assert lines["c-006"]["answers"] is None and lines["c-006"]["error_detail"]["type"] == "misfit"
    bad = lines["c-008"]
    assert bad["error"] == "HTTP 400: body.questions: too many levels" and bad["http_status"] == 400
    assert bad["error_detail"]["retryable"] is False and bad["model"] is None
    assert summary.n_errors == 3 and summary.n_called == 9
    assert KEY not in out.read_text() and "***" in lines["c-009"]["retry_reasons"][0]


def test_401_stops_the_run(tmp_path: Path) -> None:
    pack = load_pack(write_pack(tmp_path / "packs", n=6))
    out = tmp_path / "rec.jsonl"

    def handler(seen: Seen) -> Reply:
        return Reply(401, {"detail": "invalid api key"}) if seen.case == "c-003" else ok_reply(seen)

    with LoopbackServer(lambda seen: Reply(403, {"error": {"message": "forbidden"}})) as server:
        with pytest.raises(AuthError, match="HTTP 403.*forbidden.*TYPESAFE_API_KEY"):
            record_pack_sync(pack, TypeSafeBackend(base_url=server.base_url), out)
    assert not journal_path(out).exists()  # nothing finished: no journal left behind
    with LoopbackServer(handler) as server:
        with pytest.raises(AuthError, match="HTTP 401.*invalid api key.*TYPESAFE_API_KEY"):
            record_pack_sync(pack, TypeSafeBackend(base_url=server.base_url), out, concurrency=1)
        assert server.per_case["c-003"] == 1 and "c-004" not in server.per_case  # no retry, nothing after
    assert not out.exists()
    assert [json.loads(x)["case_id"] for x in journal_path(out).read_text().splitlines()] == ["c-001", "c-002"]


def test_request_headers_body_and_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"model": "jev-1.13.0", "answers": {}, "usage": {"input_tokens": 3}},
                              headers={"x-typesafe-request-id": "abc"})

    monkeypatch.setenv("TYPESAFE_BASE_URL", "http://replica.invalid:9/")
    backend = TypeSafeBackend(transport=httpx.MockTransport(handler), model="jev-1.13.0")
    request = Request("c1", {"text": "hi", "x": float("nan")}, {"q": {"type": "noul", "instructions": "?"}},
                      "jev-latest", attempt=2)
    answer = asyncio.run(backend.answer(request))
    sent = seen[0]
    assert str(sent.url) == "http://replica.invalid:9/v1/systemone"
    assert sent.headers["authorization"] == f"Bearer {KEY}" and sent.headers["x-typesafe-retry-count"] == "2"
    assert sent.headers["user-agent"].startswith("jev-packs/") and sent.headers["accept"] == "application/json"
    assert json.loads(sent.content) == {"model": "jev-latest", "state": {"text": "hi", "x": "NaN"},
                                        "questions": {"q": {"type": "noul", "instructions": "?"}}}
    assert answer.request_id == "abc" and answer.model == "jev-1.13.0" and answer.usage == {"input_tokens": 3}
    assert KEY not in repr(backend) and KEY not in json.dumps(backend.describe())
    assert backend.describe()["endpoint"] == "http://replica.invalid:9"
    monkeypatch.delenv("TYPESAFE_API_KEY")
    with pytest.raises(AuthError, match="TYPESAFE_API_KEY is not set"):
        TypeSafeBackend()


def test_base_url_backend_id_and_error_bodies(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_base_url(None) == "https://api.typesafe.ai"
    monkeypatch.setenv("TYPESAFE_BASE_URL", "http://env:1/")
    assert resolve_base_url(None) == "http://env:1" and resolve_base_url("http://x:2//") == "http://x:2"
    backend = TypeSafeBackend()
    assert backend.backend_id("jev-1.13.0") == "jev-1.13.0"
    assert backend.backend_id("typesafe/jev-1.13-20260917") == "jev-typesafe-jev-1.13-20260917"
    assert "endpoint" not in TypeSafeBackend(base_url="https://api.typesafe.ai/").describe()
    shapes = {
        '{"error": "plain"}': "plain", '{"error": {"message": "nested"}}': "nested",
        '{"message": "top"}': "top", '{"detail": "text"}': "text", '{"detail": {"message": "dm"}}': "dm",
        '{"detail": [{"loc": ["body", "state"], "msg": "field required", "type": "missing"}]}':
            "body.state: field required",
        "Bad Gateway\n": "Bad Gateway",
    }
    assert {body: error_message(body.encode()) for body in shapes} == shapes


def test_retry_after_forms() -> None:
    now = time.time()
    date = format_datetime(datetime.fromtimestamp(now, timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert retry_after_s(httpx.Headers({"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    assert retry_after_s(httpx.Headers({"retry-after": "2"})) == 2.0
    assert 28 <= retry_after_s(httpx.Headers({"retry-after": date}), now=now) <= 30  # type: ignore[operator]
    assert retry_after_s(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after_s(httpx.Headers({})) is None


def test_transport_failures_are_retryable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)["state"] == "slow":
            raise httpx.ReadTimeout("read timed out", request=request)
        raise httpx.ConnectError("connection refused", request=request)

    backend = TypeSafeBackend(transport=httpx.MockTransport(handler), timeout_s=5)
    questions = {"q": {"type": "noul", "instructions": "?"}}
    slow = asyncio.run(backend.answer(Request("c1", "slow", questions, "jev-latest")))
    down = asyncio.run(backend.answer(Request("c2", "down", questions, "jev-latest")))
    assert slow.retryable and slow.error == "timeout: ReadTimeout after 5 s" and slow.http_status is None
    assert down.retryable and down.error is not None and down.error.startswith("connection: ConnectError")
