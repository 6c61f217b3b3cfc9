"""End to end through pytest: API keys never leak; the live progress line while recording.

Secrets: a run records against a loopback server that echoes the key back in error
bodies (whole, and cut by the 300-character excerpt), with failing cases, a failing
gate and --jev-strict, then a run the server stops with 401. No slice of the key may
appear in the terminal output, the JUnit XML, the --jev-json report, the recording,
backend.json or a journal.

Progress: `jev record <pack>: done/total cases, rate/s, N errors, ETA` is drawn with \\r
on a terminal, and never under -q or when stdout is not a terminal.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

# pytester drops the modules first imported inside one of its in-process runs. httpx imports
# httpcore lazily and maps httpcore's exceptions through a table it fills once: a second copy
# of httpcore would raise exceptions that table does not know, breaking later tests' httpx calls.
import httpcore  # noqa: F401
import pytest
from llm_servers import ScriptedServer, anthropic_error, anthropic_reply, openai_error, openai_reply
from packfiles import lines_by_case, write_pack
from servers import LoopbackServer, Reply, Seen, ok_reply

import pytest_jev.backends.anthropic  # imported here, not first inside a pytester run
import pytest_jev.backends.openai
import pytest_jev.backends.typesafe  # noqa: F401
from pytest_jev.nodes import record_selection as record
from pytest_jev.record.driver import Progress

KEYS = {"TYPESAFE_API_KEY": "tsk-e2e-9f3c1a7b5d2e4f60b8a1c3d5",
        "ANTHROPIC_API_KEY": "sk-ant-e2e-4b7d9e1f3a5c7e90d2f4a6b8",
        "OPENAI_API_KEY": "sk-oai-e2e-8e2a4c6e8b0d1f3a5c7e9b1d"}
FAST = ("-p", "no:hypothesispytest", "--jev-bootstrap=0")  # no plugin or bootstrap these tests need
WINDOW = 12  # any run of this many characters of a key counts as a leak
EXCERPT = 300  # backends keep this many characters of an error body


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var, key in KEYS.items():
        monkeypatch.setenv(var, key)
    for var in ("TYPESAFE_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "TYPESAFE_DEFAULT_MODEL"):
        monkeypatch.delenv(var, raising=False)


def slices(key: str) -> list[str]:
    return [key[i:i + WINDOW] for i in range(len(key) - WINDOW + 1)]


def straddling(key: str, prefix: str = "") -> str:
    """A plain-text error body whose copy of the key is cut by the 300-character excerpt,
    all but its last 4 characters inside it."""
    echo = f"{prefix}{key}"
    return "E" * (EXCERPT + 4 - len(echo)) + echo + " (end of echo)"


def assert_key_absent(key: str, root: Path, result: pytest.RunResult) -> set[str]:
    """No slice of the key in the run's stdout/stderr or in any file under root; returns the files scanned."""
    texts = {"stdout": result.stdout.str(), "stderr": result.stderr.str()}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        texts[str(path.relative_to(root))] = path.read_text(encoding="utf-8", errors="replace")
    for where, text in texts.items():
        leaked = [s for s in slices(key) if s in text]
        assert not leaked, f"{where} holds part of the key: {leaked[0]!r}"
    return set(texts) - {"stdout", "stderr"}


def junit_failures(path: Path) -> dict[str, str]:
    """testcase name -> failure message and text, from a JUnit XML file."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        failure = case.find("failure")
        if failure is not None:
            out[case.get("name", "")] = f"{failure.get('message', '')}\n{failure.text or ''}"
    return out


# ---- secrets, the jev backend --------------------------------------------------------------------

def typesafe_handler(seen: Seen) -> Reply:
    auth = seen.headers.get("authorization", "")
    if seen.case == "c-002":  # the whole Authorization header echoed in a JSON error body
        return Reply(400, {"error": {"message": f"refused: you sent authorization: {auth}"},
                           "echo": {"authorization": auth}})
    if seen.case == "c-003":  # plain text, the key cut by the body excerpt
        return Reply(422, straddling(auth.removeprefix("Bearer "), "authorization: Bearer "))
    if seen.case == "c-004" and seen.n == 1:  # a retry whose reason quotes the key
        return Reply(429, {"error": f"slow down, {auth}"}, {"retry-after-ms": "10"})
    return ok_reply(seen)  # the same label for every case: mismatches, and a failing gate


def test_key_never_leaks_from_a_jev_recording_run(pytester: pytest.Pytester) -> None:
    key = KEYS["TYPESAFE_API_KEY"]
    folder = write_pack(pytester.path / "packs", n=5)
    (folder / "gates.yaml").write_text("min_accuracy: 0.99\n", encoding="utf-8")
    with LoopbackServer(typesafe_handler) as server:
        result = pytester.runpytest(
            *FAST, "packs", "--jev-record", "--jev-backend=jev", "--jev-base-url", server.base_url, "--jev-strict",
            "--jev-concurrency", "2", "--junitxml=junit.xml", "--jev-json=report.json", "-rA", "-vv")
    assert {s.headers["authorization"] for s in server.requests} == {f"Bearer {key}"}  # the key was sent
    assert server.per_case["c-004"] == 2
    result.assert_outcomes(passed=3, failed=6)  # checks pass; 5 cases and the gate fail
    recording = pytester.path / "results" / "jev-1.13.0" / "tiny-pack.predictions.jsonl"
    lines = lines_by_case(recording)
    echoed, cut = lines["c-002"], lines["c-003"]
    assert echoed["error"].startswith("HTTP 400: refused: you sent authorization: Bearer ***")
    assert "Bearer ***" in echoed["error_detail"]["body_excerpt"]
    assert cut["http_status"] == 422 and cut["error_detail"]["body_excerpt"].startswith("EEEE")
    assert "***" in lines["c-004"]["retry_reasons"][0] and lines["c-004"]["error"] is None

    failures = junit_failures(pytester.path / "junit.xml")
    assert set(failures) == {"case[c-001]", "case[c-002]", "case[c-003]", "case[c-004]", "case[c-005]",
                             "gate[min_accuracy]"}
    assert "recorded error: HTTP 400: refused: you sent authorization: Bearer ***" in failures["case[c-002]"]
    assert "recorded error: HTTP 422" in failures["case[c-003]"]
    assert "--jev-strict" in failures["case[c-001]"]
    assert failures["gate[min_accuracy]"].startswith("accuracy 0.333, below the 0.990 required")
    result.stdout.fnmatch_lines([  # the failure section, then the -rA summary
        "*tiny-pack.predictions.jsonl:2: case c-002: recorded error: HTTP 400: refused: you sent authorization: "
        "Bearer [*][*][*]",
        "FAILED packs/tiny-pack/pack.yaml::case[[]c-002[]] - recorded error: HTTP 400*"])
    assert json.loads((pytester.path / "report.json").read_text())["runs"][0]["case_errors"] == 2
    scanned = assert_key_absent(key, pytester.path, result)
    assert {"junit.xml", "report.json", "results/jev-1.13.0/tiny-pack.predictions.jsonl",
            "results/jev-1.13.0/backend.json"} <= scanned


def test_401_stops_a_jev_recording_run_naming_the_variable(pytester: pytest.Pytester) -> None:
    key = KEYS["TYPESAFE_API_KEY"]
    write_pack(pytester.path / "packs", n=4)

    def handler(seen: Seen) -> Reply:
        if seen.case == "c-003":
            return Reply(401, {"detail": f"invalid key in {seen.headers['authorization']}"})
        return ok_reply(seen)

    with LoopbackServer(handler) as server:
        result = pytester.runpytest(*FAST, "packs", "--jev-record", "--jev-backend=jev", "--jev-base-url",
                                    server.base_url, "--jev-concurrency", "1", "--junitxml=junit.xml", "-rA")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*HTTP 401*invalid key in Bearer [*][*][*]*check TYPESAFE_API_KEY*2 finished cases kept*"])
    journal = "results/jev-latest/tiny-pack.predictions.jsonl.journal.jsonl"
    assert list(lines_by_case(pytester.path / journal)) == ["c-001", "c-002"]  # what was done is kept for the rerun
    assert "c-004" not in server.per_case
    assert journal in assert_key_absent(key, pytester.path, result)


# ---- secrets, the LLM backends -------------------------------------------------------------------

GOOD = {"answers": {"refund": 0.9, "queue": {"billing": 0.8, "technical": 0.15, "unknown": 0.05},
                    "urgency": {"0": 0.2, "1": 0.7, "2": 0.1}}}
# backend spec, base URL from the server's, how its replies look, the results folder it records to
LLM: dict[str, dict[str, Any]] = {
    "anthropic": {"var": "ANTHROPIC_API_KEY", "spec": "anthropic:claude-sonnet-5", "url": lambda u: u,
                  "ok": anthropic_reply, "error": lambda m: anthropic_error("invalid_request_error", m),
                  "folder": "claude-sonnet-5"},
    "openai": {"var": "OPENAI_API_KEY", "spec": "openai:qwen2.5:7b", "url": lambda u: u + "/v1",
               "ok": openai_reply, "error": openai_error, "folder": "qwen2.5-7b-openai"},
}


def sent_key(request: dict[str, Any]) -> str:
    headers = {k.lower(): v for k, v in request["headers"].items()}
    return headers.get("x-api-key") or headers["authorization"].removeprefix("Bearer ")


@pytest.mark.parametrize("provider", sorted(LLM))
def test_key_never_leaks_from_an_llm_recording_run(pytester: pytest.Pytester, provider: str) -> None:
    llm = LLM[provider]
    key = KEYS[llm["var"]]
    write_pack(pytester.path / "packs", n=3)
    with ScriptedServer() as server:
        server.push(200, llm["ok"](json.dumps(GOOD)))
        server.push(400, llm["error"](f"bad request from key {key}"))
        server.push(400, straddling(key, "bad request from key "), {"content-type": "text/plain"})
        result = pytester.runpytest(*FAST, "packs", "--jev-record", f"--jev-backend={llm['spec']}",
                                    "--jev-base-url", llm["url"](server.url), "--jev-concurrency", "1",
                                    "--jev-strict", "--junitxml=junit.xml", "--jev-json=report.json", "-rA")
        assert [sent_key(r) for r in server.requests] == [key] * 3
        lines = lines_by_case(pytester.path / "results" / llm["folder"] / "tiny-pack.predictions.jsonl")
        assert lines["c-001"]["error"] is None
        assert lines["c-002"]["error"] == "HTTP 400: bad request from key ***"
        assert "key ***" in lines["c-002"]["error_detail"]["body_excerpt"]
        assert lines["c-003"]["error_detail"]["body_excerpt"].startswith("EEEE")
        failures = junit_failures(pytester.path / "junit.xml")
        assert "recorded error: HTTP 400: bad request from key ***" in failures["case[c-002]"]
        assert "recorded error: HTTP 400" in failures["case[c-003]"]
        recorded = f"results/{llm['folder']}"
        assert {"junit.xml", "report.json", f"{recorded}/tiny-pack.predictions.jsonl",
                f"{recorded}/backend.json"} <= assert_key_absent(key, pytester.path, result)

        server.push(401, llm["error"](f"invalid key {key}"))
        stopped = pytester.runpytest(*FAST, "packs", "--jev-record=all", f"--jev-backend={llm['spec']}",
                                     "--jev-base-url", llm["url"](server.url), "--jev-concurrency", "1")
    assert stopped.ret == pytest.ExitCode.USAGE_ERROR
    stopped.stderr.fnmatch_lines([f"*HTTP 401*invalid key [*][*][*]*check {llm['var']}*"])
    assert_key_absent(key, pytester.path, stopped)


@pytest.mark.parametrize("provider", sorted(LLM))
def test_a_key_that_cannot_be_sent_stops_the_run_before_any_call(pytester: pytest.Pytester,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  provider: str) -> None:
    # httpx refuses such a header with an error quoting it escaped ("...\\n..."), which no scrub
    # of the raw key matches: it would land in every error line, failure message and report
    llm = LLM[provider]
    key = KEYS[llm["var"]][:16] + "\n" + KEYS[llm["var"]][16:]
    monkeypatch.setenv(llm["var"], key)
    write_pack(pytester.path / "packs", n=2)
    with ScriptedServer() as server:
        result = pytester.runpytest(*FAST, "packs", "--jev-record", f"--jev-backend={llm['spec']}",
                                    "--jev-base-url", llm["url"](server.url), "--junitxml=junit.xml", "-rA")
    assert server.requests == []
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{llm['var']} is not a valid key*"])
    assert_key_absent(key, pytester.path, result)
    assert_key_absent(key.replace("\n", "\\n"), pytester.path, result)


# ---- the progress line ---------------------------------------------------------------------------

class FakeTerminal:
    """The terminal reporter's surface the progress line uses: write() and isatty."""

    def __init__(self, tty: bool = True) -> None:
        self.written: list[str] = []
        self.isatty = tty

    def write(self, text: str, **markup: Any) -> None:
        self.written.append(text)


def test_progress_writer_draws_done_total_rate_errors_and_eta() -> None:
    tr = FakeTerminal()
    show = record._progress_writer(tr, "tiny-pack")
    assert show is not None and record._progress_writer(None, "tiny-pack") is None
    show(Progress(done=1, total=8, errors=0, rate_per_s=4.0, eta_s=7.0))
    show(Progress(done=2, total=8, errors=1, rate_per_s=5.0, eta_s=6.0))  # within 0.2 s: not redrawn
    show(Progress(done=8, total=8, errors=2, rate_per_s=12.5, eta_s=0.0))  # the last one always is
    assert tr.written == ["\rjev record tiny-pack: 1/8 cases, 4.0/s, 0 errors, ETA 7s   ",
                          "\rjev record tiny-pack: 8/8 cases, 12.5/s, 2 errors, ETA 0s   "]
    tr.written.clear()
    record._progress_writer(tr, "p")(Progress(done=0, total=3, errors=0, rate_per_s=0.0, eta_s=None))
    assert tr.written == ["\rjev record p: 0/3 cases, 0.0/s, 0 errors   "]  # no rate yet: no ETA


def test_progress_writer_is_off_when_the_terminal_is_not_a_tty() -> None:
    assert record._progress_writer(FakeTerminal(tty=False), "tiny-pack") is None


def run_in_pty(args: list[str], cwd: Path, timeout_s: float = 30.0) -> tuple[int, str]:
    """Run python -m pytest (no slow plugins, no bootstrap) with stdout and stderr on a pseudo-terminal;
    (exit code, output without colour codes)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env.update(COLUMNS="200", LINES="50", NO_COLOR="1", TERM="xterm")
    args = [*args, "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist", "--jev-bootstrap=0"]
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        code = proc.wait(10)
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return code, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


@pytest.fixture
def mock_project(tmp_path: Path) -> Path:
    write_pack(tmp_path / "packs", n=6)
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # rootdir, and no repo settings
    return tmp_path


PROGRESS = re.compile(r"\rjev record tiny-pack: (\d+)/(\d+) cases, (\d+\.\d)/s, (\d+) errors(, ETA \d+s)?")


def test_progress_line_on_a_terminal(mock_project: Path) -> None:
    code, out = run_in_pty(["packs", "--jev-record", "--jev-backend=mock"], mock_project)
    assert code == 0, out
    drawn = PROGRESS.findall(out)
    assert len(drawn) >= 2 and drawn[0][:2] == ("1", "6"), out  # redrawn in place as cases finish
    assert drawn[-1][:2] == ("6", "6") and drawn[-1][3] == "0" and drawn[-1][4] == ", ETA 0s", out
    assert float(drawn[-1][2]) > 0
    assert "jev recorded tiny-pack: 6 called, 0 reused, 0 errors" in out
    assert (mock_project / "results" / "mock-0" / "tiny-pack.predictions.jsonl").is_file()


def test_no_progress_line_under_q_on_a_terminal(mock_project: Path) -> None:
    code, out = run_in_pty(["packs", "--jev-record", "--jev-backend=mock", "-q"], mock_project)
    assert code == 0, out
    assert "jev recorded tiny-pack: 6 called" in out  # it did record (and pytest did write to the terminal)
    assert "jev record tiny-pack:" not in out and "\r" not in out, out


def test_no_progress_line_when_stdout_is_not_a_tty(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path / "packs", n=6)
    result = pytester.runpytest(*FAST, "packs", "--jev-record", "--jev-backend=mock")
    out = result.stdout.str() + result.stderr.str()
    assert "jev recorded tiny-pack: 6 called" in out
    assert "jev record tiny-pack:" not in out and "\r" not in out
