"""The `openrouter` backend: Jev through OpenRouter's System One API, against loopback servers.

A loopback server speaks OpenRouter's shape of the System One reply (`id`, `provider`,
`usage.cost`, optional fields left out or null); a recording run goes through the plugin
(`--jev-record --jev-backend=openrouter --jev-base-url=...`), settles in the folder of
the served model and is replayed offline. 401 (and 402, and a 403 that is not a moderation
flag) stops the run naming OPENROUTER_API_KEY; the key lands in no file and no output.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

# imported here, not first inside a pytester run (which would drop them afterwards: see
# test_secrets_progress.py for why httpcore matters)
import httpcore  # noqa: F401
import httpx
import pytest
from packfiles import lines_by_case, write_pack
from servers import LoopbackServer, Reply, Seen, answers_for, per_case_script

from pytest_jev import paths
from pytest_jev.backends.base import AuthError
from pytest_jev.backends.catalog import Catalog, backend_from
from pytest_jev.backends.kinds import BackendSpec
from pytest_jev.backends.model_names import folder_name
from pytest_jev.backends.openrouter import DEFAULT_MODEL, OpenRouterBackend
from pytest_jev.errors import OptionError
from pytest_jev.fileio import SECRET_ENV_VARS
from pytest_jev.formats.backend_json import folder_identity
from pytest_jev.packs import load_pack
from pytest_jev.record.engine import record_pack_sync
from pytest_jev.record.journal import journal_path
from pytest_jev.record.plan import build_requests
from pytest_jev.recording_lookup import backend_folders
from pytest_jev.wire import Request

KEY = "sk-or-v1-e2e-7c1d9a3f5b2e4d6081a3c5e7f9b1d3e5"
SERVED = "typesafe/jev-1.13-20260917"  # the pinned build OpenRouter names in its replies
FOLDER = "typesafe-jev-1.13-20260917-openrouter"  # ... and the results folder named by it
FAST = ("-p", "no:hypothesispytest", "--jev-bootstrap=0")
WINDOW = 12  # any run of this many characters of the key counts as a leak
QUESTIONS = {"q": {"type": "noul", "instructions": "?"}}
CATALOG = Catalog()


def parse(text: str, model: str | None = None, base_url: str | None = None) -> BackendSpec:
    return CATALOG.parse(text, model=model, base_url=base_url)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    monkeypatch.delenv("OPENROUTER_BASE_URL", raising=False)


def openrouter_reply(seen: Seen, model: str = SERVED, cost: Any = 0.00000504, **kw: Any) -> Reply:
    """A well-formed reply in OpenRouter's shape: `id`, `provider`, `usage.cost`, and the optional
    `confidence` / `legend` of the score answer given as null or left out."""
    answers = answers_for(seen.body["questions"])
    for answer in answers.values():
        if answer["type"] == "score":
            answer["confidence"] = None
            del answer["legend"]
    usage: dict[str, Any] = {"input_tokens": 120, "output_tokens": 12}
    if cost is not None:
        usage["cost"] = cost
    body = {"id": f"gen-{seen.case}-{seen.n}", "provider": "TypeSafe", "model": model, "answers": answers,
            "usage": usage}
    return Reply(200, body, **kw)


def error_body(code: int, message: str, **metadata: Any) -> dict[str, Any]:
    """OpenRouter's error shape: {"error": {"code", "message", "metadata"?}}."""
    error: dict[str, Any] = {"code": code, "message": message}
    if metadata:
        error["metadata"] = metadata
    return {"error": error}


def assert_key_absent(root: Path, *outputs: str) -> set[str]:
    """No slice of the key in the outputs or in any file under root; returns the files scanned."""
    texts = {f"output {i}": text for i, text in enumerate(outputs)}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        texts[str(path.relative_to(root))] = path.read_text(encoding="utf-8", errors="replace")
    for where, text in texts.items():
        leaked = [KEY[i:i + WINDOW] for i in range(len(KEY) - WINDOW + 1) if KEY[i:i + WINDOW] in text]
        assert not leaked, f"{where} holds part of the key: {leaked[0]!r}"
    return {name for name in texts if not name.startswith("output ")}


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    """A run's counts of passed, failed, skipped and errored items (0 when absent)."""
    found = result.parseoutcomes()
    return {key: found.get(key, 0) for key in ("passed", "failed", "skipped", "errors", "mismatched")}


def run_output(result: pytest.RunResult) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


# ---- through the plugin: record, settle in the served model's folder, replay ------------------------

def plugin_handler(seen: Seen) -> Reply:
    auth = seen.headers.get("authorization", "")
    if seen.method != "POST" or seen.path != "/v1/systemone":
        return Reply(404, error_body(404, f"no route {seen.method} {seen.path}"))
    if seen.case == "c-002" and seen.n == 1:  # rate limited once, asked to wait 1 s
        return Reply(429, error_body(429, f"rate limited ({auth})"), {"Retry-After": "1"})
    if seen.case == "c-004":  # the whole Authorization header echoed back
        return Reply(400, error_body(400, f"bad request from {auth}"))
    return openrouter_reply(seen)


def test_records_through_the_plugin_then_replays(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path / "packs", n=5)
    args = (*FAST, "packs", "--jev-backend=openrouter")
    with LoopbackServer(plugin_handler) as server:
        recorded = pytester.runpytest(*args, "--jev-record", f"--jev-base-url={server.base_url}",
                                      "--jev-concurrency", "2", "--junitxml=junit.xml", "--jev-json=report.json")
        # what went on the wire: OpenRouter's path, the key as a Bearer token, the pinned OpenRouter id
        assert {(s.method, s.path) for s in server.requests} == {("POST", "/v1/systemone")}
        assert {s.headers["authorization"] for s in server.requests} == {f"Bearer {KEY}"}
        assert {s.body["model"] for s in server.requests} == {DEFAULT_MODEL}
        assert dict(server.per_case) == {"c-001": 1, "c-002": 2, "c-003": 1, "c-004": 1, "c-005": 1}
        by_case = {(s.case, s.n): s for s in server.requests}
        assert by_case["c-002", 2].t - by_case["c-002", 1].t >= 0.95  # Retry-After: 1 honoured

        out = run_output(recorded)
        graded = outcomes(recorded)
        assert graded["failed"] == 1 and graded["passed"] >= 3  # c-004's error line fails; checks and gate pass
        assert "packs/tiny-pack/pack.yaml::case[c-004]" in out and "4 mismatched" in out
        assert "jev recorded tiny-pack: 5 called, 0 reused, 1 errors" in out
        assert f" -> results/{FOLDER}/tiny-pack.predictions.jsonl\n" in out
        folders = sorted(p.name for p in (pytester.path / "results").iterdir())
        assert folders == [FOLDER]  # settled in the served model's folder; the requested one is gone
        recording = pytester.path / "results" / FOLDER / "tiny-pack.predictions.jsonl"
        lines = lines_by_case(recording)
        good = lines["c-001"]
        assert good["model"] == SERVED and good["backend"] == "openrouter" and good["error"] is None
        assert good["usage"] == {"input_tokens": 120, "output_tokens": 12, "cost": 0.00000504}  # cost kept
        assert good["request_id"] == "gen-c-001-1" and good["provider"] == "TypeSafe"
        assert good["base_url"] == server.base_url
        assert "confidence" not in good["answers"]["urgency"]  # null optional field left out
        assert lines["c-002"]["attempts"] == 2 and lines["c-002"]["retry_reasons"][0].startswith("HTTP 429")
        assert "***" in lines["c-002"]["retry_reasons"][0]
        assert lines["c-004"]["error"] == "HTTP 400: bad request from Bearer ***"

        info = json.loads((recording.parent / "backend.json").read_text())
        assert info["id"] == FOLDER and info["backend"] == "openrouter" and info["provider"] == "openrouter"
        assert info["model"] == DEFAULT_MODEL and info["endpoint"] == server.base_url
        assert info["pricing"] == {"input_usd_per_mtok": 0.042, "output_usd_per_mtok": 0.0}  # list price
        assert folder_identity(recording.parent) == ("openrouter", DEFAULT_MODEL)

        # a second recording run continues the settled file: only the error line is asked again
        again = pytester.runpytest(*args, "--jev-record", f"--jev-base-url={server.base_url}")
        assert "1 called, 4 reused, 1 errors" in run_output(again)
        assert server.per_case["c-004"] == 2 and server.per_case["c-001"] == 1

    # replay: no server, no network; the recording is found through backend.json (kind openrouter)
    replayed = pytester.runpytest(*args, "--jev-replay", "-rA")
    replay_out = run_output(replayed)
    assert outcomes(replayed) == graded  # graded as right after recording
    assert "4 mismatched" in replay_out and "jev recorded" not in replay_out
    assert (f"recording results/{FOLDER}/tiny-pack.predictions.jsonl (backend openrouter, model {SERVED}"
            in replay_out)
    assert "case c-004: recorded error: HTTP 400: bad request from Bearer ***" in replay_out
    # 4 answered cases x 120 input tokens (c-004: none billed) at $0.042/M
    assert "cost/case $0.000004" in replay_out
    by_model = pytester.runpytest(*FAST, "packs", f"--jev-backend=openrouter:{DEFAULT_MODEL}", "--jev-replay")
    assert outcomes(by_model) == graded
    assert f"recording results/{FOLDER}/tiny-pack.predictions.jsonl" in run_output(by_model)
    assert {"junit.xml", "report.json", f"results/{FOLDER}/tiny-pack.predictions.jsonl",
            f"results/{FOLDER}/backend.json"} <= assert_key_absent(
        pytester.path, out, run_output(again), replay_out)


def test_401_stops_the_run_naming_the_variable(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path / "packs", n=4)

    def handler(seen: Seen) -> Reply:
        if seen.case == "c-003":
            return Reply(401, error_body(401, f"invalid key in {seen.headers['authorization']}"))
        return openrouter_reply(seen)

    with LoopbackServer(handler) as server:
        result = pytester.runpytest(*FAST, "packs", "--jev-record", "--jev-backend=openrouter",
                                    f"--jev-base-url={server.base_url}", "--jev-concurrency", "1",
                                    "--junitxml=junit.xml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*HTTP 401*invalid key in Bearer [*][*][*]*check OPENROUTER_API_KEY*"])
    assert server.per_case["c-003"] == 1 and "c-004" not in server.per_case  # no retry, nothing after
    journal = f"results/{folder_name('openrouter', DEFAULT_MODEL)}/tiny-pack.predictions.jsonl.journal.jsonl"
    assert list(lines_by_case(pytester.path / journal)) == ["c-001", "c-002"]  # kept for the next run
    assert journal in assert_key_absent(pytester.path, run_output(result))


def test_each_model_continues_its_own_recording(pytester: pytest.Pytester) -> None:
    """A recording of another OpenRouter model is never continued (its answers would stand in
    for the model asked): each model spec settles in, and resumes from, its own folder."""
    write_pack(pytester.path / "packs", n=3)

    def handler(seen: Seen) -> Reply:
        return openrouter_reply(seen, model=f"{seen.body['model']}-20260917")

    with LoopbackServer(handler) as server:
        def record(spec: str) -> tuple[str, str]:
            """(`N called, M reused`, the folder the recording settled in) of one recording run."""
            result = pytester.runpytest(*FAST, "packs", "--jev-record", f"--jev-backend={spec}",
                                        f"--jev-base-url={server.base_url}")
            found = re.search(r"jev recorded tiny-pack: (\d+ called, \d+ reused), .* -> (.*)$", run_output(result),
                              re.MULTILINE)
            assert found, run_output(result)
            return found[1], Path(found[2]).parent.name

        jev_13, jev_14 = "typesafe-jev-1.13-20260917-openrouter", "typesafe-jev-1.14-20260917-openrouter"
        assert record("openrouter") == ("3 called, 0 reused", jev_13)
        assert record("openrouter:typesafe/jev-1.14") == ("3 called, 0 reused", jev_14)
        assert record("openrouter") == ("0 called, 3 reused", jev_13)
        assert record("openrouter:typesafe/jev-1.14") == ("0 called, 3 reused", jev_14)
    assert sorted(s.body["model"] for s in server.requests) == ["typesafe/jev-1.13"] * 3 + ["typesafe/jev-1.14"] * 3


def test_a_missing_key_stops_the_run_before_any_call(pytester: pytest.Pytester,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY")
    write_pack(pytester.path / "packs", n=2)
    with LoopbackServer(openrouter_reply) as server:
        result = pytester.runpytest(*FAST, "packs", "--jev-record", "--jev-backend=openrouter",
                                    f"--jev-base-url={server.base_url}")
    assert server.requests == []
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*OPENROUTER_API_KEY is not set*"])


# ---- the recorder with a fault server: retries and error lines --------------------------------------

def _bad_choice(seen: Seen) -> Reply:
    reply = openrouter_reply(seen)
    reply.body["answers"]["queue"]["probabilities"] = None  # optional in OpenRouter's schema: never guessed
    return reply


SCRIPTS = {  # case -> reply per attempt (the last one repeats)
    "c-001": [openrouter_reply],
    "c-002": [lambda s: Reply(429, error_body(429, "rate limited"), {"Retry-After": "1"}), openrouter_reply],
    "c-003": [lambda s: Reply(529, error_body(529, "overloaded")), lambda s: Reply(502, error_body(502, "model down")),
              openrouter_reply],
    "c-004": [lambda s: Reply(200, error_body(502, "upstream failed mid-answer")), openrouter_reply],
    "c-005": [lambda s: Reply(200, b'{"id": "gen-x", "answers": {'), openrouter_reply],
    "c-006": [lambda s: Reply(403, error_body(403, "input flagged", reasons=["violence"], flagged_input="..."))],
    "c-007": [_bad_choice],
    "c-008": [lambda s: openrouter_reply(s, cost="0.0000050"), openrouter_reply],
    "c-009": [lambda s: Reply(200, {"model": SERVED, "usage": {"input_tokens": 3}})],
}


def test_retries_and_error_lines(tmp_path: Path) -> None:
    pack = load_pack(write_pack(tmp_path / "packs", n=9))
    out = tmp_path / "rec.jsonl"
    with LoopbackServer(per_case_script(SCRIPTS)) as server:
        summary = record_pack_sync(pack, OpenRouterBackend(base_url=server.base_url), out, timeout_s=5,
                                   backoff_base_s=0.01, max_attempts=4)
    lines = lines_by_case(out)
    attempts = {cid: line["attempts"] for cid, line in lines.items()}
    assert attempts == {"c-001": 1, "c-002": 2, "c-003": 3, "c-004": 2, "c-005": 1, "c-006": 1, "c-007": 1,
                        "c-008": 1, "c-009": 1}
    assert dict(server.per_case) == attempts
    by_case = {(s.case, s.n): s for s in server.requests}
    assert by_case["c-002", 2].t - by_case["c-002", 1].t >= 0.95  # Retry-After: 1 honoured
    assert lines["c-003"]["retry_reasons"] == ["HTTP 529: overloaded", "HTTP 502: model down"]
    assert lines["c-004"]["retry_reasons"] == ["upstream: 200 with error 502: upstream failed mid-answer"]
    # not transient: a malformed 200, a moderation flag, an answer without probabilities, a 200 without answers
    assert lines["c-005"]["error"] == "malformed: 200 with a body that is not JSON"
    assert lines["c-006"]["error"] == "HTTP 403: input flagged" and lines["c-006"]["http_status"] == 403
    assert lines["c-007"]["error"] == "misfit: queue: choice answer has no probabilities"
    assert lines["c-009"]["error"] == "malformed: 200 with no answers object"
    assert lines["c-008"]["usage"]["cost"] == 0.000005  # a cost sent as a string is read as a number
    assert lines["c-001"]["usage"]["cost"] == 0.00000504 and lines["c-001"]["request_id"] == "gen-c-001-1"
    assert summary.n_errors == 4 and summary.n_called == 9 and summary.served_models == (SERVED,)


@pytest.mark.parametrize(("status", "body", "match"), [
    (402, error_body(402, "Insufficient credits"), "HTTP 402.*Insufficient credits.*OPENROUTER_API_KEY.*credits"),
    (403, error_body(403, "Key disabled"), "HTTP 403.*Key disabled.*check OPENROUTER_API_KEY.*OPENROUTER_BASE_URL"),
    (401, {"error": {"code": 401, "message": f"No auth credentials found for {KEY}"}},
     r"HTTP 401.*credentials found for \*\*\*.*check OPENROUTER_API_KEY"),
])
def test_account_errors_stop_the_run(tmp_path: Path, status: int, body: Any, match: str) -> None:
    pack = load_pack(write_pack(tmp_path / "packs", n=3))
    out = tmp_path / "rec.jsonl"
    with LoopbackServer(lambda seen: Reply(status, body)) as server:
        with pytest.raises(AuthError, match=match) as raised:
            record_pack_sync(pack, OpenRouterBackend(base_url=server.base_url), out, concurrency=1)
    assert KEY not in str(raised.value)
    assert sum(server.per_case.values()) == 1  # never retried, nothing sent after it
    assert not out.exists() and not journal_path(out).exists()


# ---- the wire, without a server -----------------------------------------------------------------------

def mock_backend(handler: Any, **kw: Any) -> OpenRouterBackend:
    return OpenRouterBackend(transport=httpx.MockTransport(handler), **kw)


def test_request_url_headers_and_body(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"id": "gen-1", "provider": "TypeSafe", "model": SERVED,
                                         "answers": {"q": {"type": "noul", "noul": 0.9}},
                                         "usage": {"input_tokens": 5, "output_tokens": 0, "cost": 2.1e-7}},
                              headers={"x-typesafe-request-id": "ignored-when-the-body-has-an-id"})

    backend = mock_backend(handler)
    request = Request("c1", {"text": "hi"}, QUESTIONS, "jev-latest", attempt=1)  # the pack's model: not sent
    answer = asyncio.run(backend.answer(request))
    sent = seen[0]
    assert str(sent.url) == "https://openrouter.ai/api/v1/systemone"
    assert sent.headers["authorization"] == f"Bearer {KEY}" and sent.headers["content-type"] == "application/json"
    assert json.loads(sent.content) == {"model": "typesafe/jev-1.13", "state": {"text": "hi"}, "questions": QUESTIONS}
    assert answer.model == SERVED and answer.request_id == "gen-1" and answer.extra == {"provider": "TypeSafe"}
    assert answer.usage == {"input_tokens": 5, "output_tokens": 0, "cost": 2.1e-7}
    assert KEY not in repr(backend) and KEY not in json.dumps(backend.describe())
    assert "endpoint" not in backend.describe()

    monkeypatch.setenv("OPENROUTER_BASE_URL", "http://gateway.invalid:9/api/")
    assert mock_backend(handler).url == "http://gateway.invalid:9/api/v1/systemone"
    assert mock_backend(handler, base_url="http://x:1/").url == "http://x:1/v1/systemone"  # explicit wins
    assert mock_backend(handler).describe()["endpoint"] == "http://gateway.invalid:9/api"
    monkeypatch.setenv("TYPESAFE_BASE_URL", "http://typesafe.invalid")  # the jev backend's variables: not read
    monkeypatch.setenv("TYPESAFE_DEFAULT_MODEL", "jev-preview")
    monkeypatch.delenv("OPENROUTER_BASE_URL")
    assert mock_backend(handler).url == "https://openrouter.ai/api/v1/systemone"
    assert mock_backend(handler).model == DEFAULT_MODEL


def test_usage_cost_and_optional_fields_are_read_defensively() -> None:
    replies: list[dict[str, Any]] = [
        {"model": SERVED, "answers": {"c": {"type": "choice", "choice": "a", "confidence": None, "legend": None,
                                            "probabilities": {"a": 0.7, "b": 0.3}}},
         "usage": {"input_tokens": 5, "cost": math.nan}},  # Python's json reads a bare NaN
        {"model": SERVED, "answers": {}, "usage": {"input_tokens": 5, "cost": "free"}},
        {"model": SERVED, "answers": {}, "usage": {"input_tokens": 5, "cost": -1}},
        {"model": SERVED, "answers": {}, "usage": None, "id": 7, "provider": None},
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=json.dumps(replies[int(json.loads(request.content)["state"])]).encode(),
                              headers={"content-type": "application/json"})

    backend = mock_backend(handler)
    first, *rest = [asyncio.run(backend.answer(Request("c", str(i), QUESTIONS, "x"))) for i in range(4)]
    assert first.answers == {"c": {"type": "choice", "choice": "a", "probabilities": {"a": 0.7, "b": 0.3}}}
    assert first.usage == {"input_tokens": 5}  # a cost that is not a finite number >= 0 is dropped
    assert [a.usage for a in rest] == [{"input_tokens": 5}, {"input_tokens": 5}, None]
    assert rest[-1].request_id is None and rest[-1].extra == {}


def test_transport_failures_are_retryable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    answer = asyncio.run(mock_backend(handler).answer(Request("c", "s", QUESTIONS, "x")))
    assert answer.retryable and answer.error is not None and answer.error.startswith("connection: ConnectError")


def test_missing_or_unusable_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "tsk-not-this-one")
    monkeypatch.delenv("OPENROUTER_API_KEY")
    with pytest.raises(AuthError, match="OPENROUTER_API_KEY is not set"):
        OpenRouterBackend()
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or v1")
    with pytest.raises(AuthError, match="OPENROUTER_API_KEY is not a valid key"):
        OpenRouterBackend()
    assert "OPENROUTER_API_KEY" in SECRET_ENV_VARS  # masked in every line the recorder writes


def test_folder_names_come_from_the_served_model() -> None:
    backend = OpenRouterBackend()
    assert backend.backend_id(SERVED) == FOLDER
    assert backend.backend_id(None) == "typesafe-jev-1.13-openrouter"  # before a reply: the requested model
    assert backend.backend_id("~typesafe/jev-latest") == "typesafe-jev-latest-openrouter"
    assert backend.backend_id("Typesafe/JEV-1.14") == "typesafe-jev-1.14-openrouter"
    assert backend.backend_id("jev-/../../x") == "jev-x-openrouter"
    assert backend.backend_id("../..") == "jev-openrouter"
    assert backend.backend_id("jev-1.13.0") == "jev-1.13.0-openrouter"  # never the jev backend's folder
    long = backend.backend_id("typesafe/" + "j" * 300)
    assert len(long) <= paths.MAX_NAME and long.endswith("-openrouter") and paths.safe_name(long) == long


# ---- the catalog -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "model", "asked"), [
    ("openrouter:typesafe/jev-1.14", "typesafe/jev-9", "typesafe/jev-1.14"),  # the spec's model wins
    ("openrouter", "typesafe/jev-9", "typesafe/jev-9"),
    ("openrouter", None, DEFAULT_MODEL),
    ("sonnet", None, "claude-sonnet-5"),
    ("sonnet", "claude-x", "claude-x"),
    ("anthropic:claude-y", "claude-x", "claude-y"),
    ("openai:qwen2.5:7b", "other", "qwen2.5:7b"),
])
def test_one_rule_decides_the_model_asked_for(spec: str, model: str | None, asked: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """What the backend asks for is what the dry run prices, the results folder is named by, and
    the fixture's request lines name (a marker's model cannot change what such a backend asks)."""
    from pytest_jev.fixture.answering import requested_model

    for var in ("OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(var, "sk-test-not-sent")  # built, never called
    parsed = parse(spec, model)
    assert parsed.asked_model == asked
    backend = CATALOG.make(parsed)
    assert backend.model == asked  # type: ignore[attr-defined]
    assert parsed.folder == backend.backend_id(None) == folder_name(parsed.kind, asked)
    if parsed.kind == "openrouter":
        assert parsed.request_model == asked
    assert requested_model(parsed, "marker-model", model) == asked


def test_bare_and_kind_only_specs_leave_the_model_to_the_backend() -> None:
    assert parse("jev").asked_model is None and parse("jev", "jev-1.14.0").asked_model == "jev-1.14.0"
    assert parse("sparrow").asked_model is None
    from pytest_jev.fixture.answering import requested_model

    jev = parse("jev", "jev-1.14.0")
    assert requested_model(jev, "jev-9", "jev-1.14.0") == "jev-9"  # jev asks what the request names
    assert requested_model(parse("sparrow"), None, None) == "jev-latest"
    with pytest.raises(OptionError, match="names no model"):
        backend_from("openrouter:")


def test_catalog(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert {"openrouter", "openrouter:<model>"} <= set(CATALOG.forms())
    assert parse("openrouter").kind == parse("OpenRouter:typesafe/jev-1.13").kind == "openrouter"
    assert parse("openrouter").model == DEFAULT_MODEL  # bare `openrouter` means Jev 1.13, as `sonnet` means one model
    assert parse("openrouter:~typesafe/jev-latest").model == "~typesafe/jev-latest"
    assert parse("openrouter").list_price == parse("openrouter:typesafe/jev-1.13").list_price == (0.042, 0.0)
    pack = load_pack(write_pack(tmp_path / "packs", n=1))
    request = build_requests(pack, "jev-latest")[0]
    assert parse("openrouter").estimate_tokens(request) == parse("jev").estimate_tokens(request)

    assert backend_from("openrouter").model == DEFAULT_MODEL  # type: ignore[attr-defined]
    assert backend_from("openrouter", model="typesafe/jev-1.14").model == "typesafe/jev-1.14"  # type: ignore[attr-defined]
    spec = backend_from("openrouter:~typesafe/jev-latest", model="ignored", base_url="http://h:1/")
    assert isinstance(spec, OpenRouterBackend) and spec.model == "~typesafe/jev-latest"
    assert spec.url == "http://h:1/v1/systemone"
    with pytest.raises(OptionError, match="names no model"):
        backend_from("openrouter:")

    CATALOG.check_ready(parse("openrouter"))
    CATALOG.check_ready(parse("openrouter:typesafe/jev-1.13"))
    with pytest.raises(OptionError, match="names no model"):
        CATALOG.check_ready(parse("openrouter: "))
    monkeypatch.delenv("OPENROUTER_API_KEY")
    with pytest.raises(AuthError, match="OPENROUTER_API_KEY is not set"):
        CATALOG.check_ready(parse("openrouter"))
    with pytest.raises(AuthError, match="OPENROUTER_API_KEY"):
        backend_from("openrouter")


def test_replay_finds_jevassert_openrouter_folders(tmp_path: Path) -> None:
    """A jevassert backend.json names its provider `openrouter`: that folder is the openrouter kind's,
    and a model spec matches the dated build OpenRouter served."""
    results = tmp_path / "results"
    for name, info in {FOLDER: {"provider": "openrouter", "model": SERVED},
                       "jev-1.13.0": {"provider": "typesafe", "model": "jev-1.13.0"}}.items():
        (results / name).mkdir(parents=True)
        (results / name / "backend.json").write_text(json.dumps(info))
    assert [p.name for p in backend_folders(results, parse("openrouter"))] == [FOLDER]
    assert [p.name for p in backend_folders(results, parse(f"openrouter:{DEFAULT_MODEL}"))] == [FOLDER]
    assert backend_folders(results, parse("openrouter:typesafe/jev-1.14")) == []


def test_module_is_importable_without_a_key() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENROUTER_API_KEY"}
    code = "import pytest_jev.backends.openrouter as m; print(m.folder_name('openrouter', m.DEFAULT_MODEL))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr  # nothing reads the key at import
    assert done.stdout.strip() == "typesafe-jev-1.13-openrouter"
