"""Recording the `jev` fixture's answers (--jev-record with a backend), then replaying them offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixture_helpers import NO_NETWORK, outcomes
from fixture_suite import SUITE
from servers import LoopbackServer, Reply, Seen

KEY = "tsk-test-SECRET-0123456789abcdef"
BOT = '''
import pytest

REPLY = "Sorry: your duplicate payment was refunded."


def test_holds(jev):
    assert jev.holds(REPLY, "apologizes")


def test_expect(jev):
    jev.expect(REPLY, holds=["apologizes", "mentions a refund"], lacks="asks for a password")


def test_choice(jev):
    assert jev.choice(REPLY, "Which team?", ["billing", "technical", "account"]) == "billing"


@pytest.mark.jev(model="jev-1.13.0")
def test_score(jev):
    assert jev.score(REPLY, "How polite?", ["rude", "neutral", "warm"]) >= "neutral"


def test_again(jev):
    assert jev.holds(REPLY, "apologizes")  # the same request as test_holds: asked once
'''


def answers(pytester: pytest.Pytester, module: str = "test_bot") -> Path:
    return pytester.path / "jev_answers" / f"{module}.jsonl"


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "-rA", *args)


def test_record_once_then_replay_offline(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bot=BOT)
    recorded = run(pytester, "--jev-record", "--jev-backend=mock")
    recorded.stdout.fnmatch_lines(["jev: 7 questions · 4 requests + 1 replayed · * input tokens · $0 · * s in mock · "
                                   "mock-0", "jev: wrote jev_answers/test_bot.jsonl: 4 new, 0 re-recorded"])
    lines = [json.loads(x) for x in answers(pytester).read_text().splitlines()]
    assert [line["tests"] for line in lines] == [["test_again", "test_holds"], ["test_choice"], ["test_expect"],
                                                 ["test_score"]]
    assert list(lines[0]) == ["fingerprint", "tests", "backend", "requested_model", "model", "state", "questions",
                              "answers", "usage"]
    assert {line["requested_model"] for line in lines} == {"jev-latest", "jev-1.13.0"}
    assert all(line["backend"] == "mock" and line["model"] == "mock-0" for line in lines)
    assert not list((pytester.path / "jev_answers").glob(".*journal*"))
    pytester.makeconftest(NO_NETWORK)
    replayed = run(pytester)
    assert outcomes(replayed.stdout.str()) == outcomes(recorded.stdout.str())
    replayed.stdout.fnmatch_lines(["jev: 7 questions · 0 requests + 5 replayed · 0 input tokens · $0 · 0.00 s in mock "
                                   "· mock-0"])
    before = answers(pytester).read_bytes()
    again = run(pytester, "--jev-record", "--jev-backend=mock")  # nothing missing: nothing asked, nothing written
    again.stdout.fnmatch_lines(["jev: 7 questions · 0 requests + 5 replayed *"])
    assert "wrote" not in again.stdout.str() and answers(pytester).read_bytes() == before


def test_new_episodes_asks_only_what_is_missing_and_all_drops_what_no_test_asks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bot=BOT)
    run(pytester, "--jev-record=once", "--jev-backend=mock")  # no answers file yet: once records them all
    first = answers(pytester).read_text().splitlines()
    pytester.makepyfile(test_bot=BOT.replace("def test_expect(jev):", "def test_new(jev):\n    assert jev.lacks("
                                                 "REPLY, 'is rude')\n\n\ndef test_expect(jev):"))
    once = run(pytester, "--jev-record=once", "--jev-backend=mock")  # the module has its file: replayed
    once.stdout.fnmatch_lines(["*jev: no recorded answer for test_bot.py::test_new: lacks 'is rude'*",
                               "jev: 8 questions · 0 requests + 5 replayed *"])
    assert answers(pytester).read_text().splitlines() == first
    result = run(pytester, "--jev-record=new_episodes", "--jev-backend=mock")
    result.stdout.fnmatch_lines(["jev: * 1 request + 5 replayed *", "jev: wrote *: 1 new, 0 re-recorded"])
    second = answers(pytester).read_text().splitlines()
    assert set(first) < set(second) and len(second) == len(first) + 1  # the other lines kept byte for byte
    pytester.makepyfile(test_bot=BOT.replace("def test_choice(jev):", "def choice(jev):"))
    listed = run(pytester, "--jev-backend=mock")
    listed.stdout.fnmatch_lines(["jev: jev_answers/test_bot.jsonl: 2 recorded answers no test asked for "
                                 "(--jev-record=all drops them)"])
    before = answers(pytester).read_bytes()
    for quiet in (["--collect-only"], ["-x"], ["-k", "holds"]):  # nothing ran, or not all of it: nothing dropped
        assert "dropped" not in run(pytester, "--jev-record=all", "--jev-backend=mock", *quiet).stdout.str()
    assert len(answers(pytester).read_text().splitlines()) == len(before.splitlines())
    dropped = run(pytester, "--jev-record=all", "--jev-backend=mock")
    dropped.stdout.fnmatch_lines(["jev: * 3 requests + 1 replayed *",
                                  "jev: wrote *: 0 new, 3 re-recorded, 2 dropped (no test asked for them)"])
    assert len(answers(pytester).read_text().splitlines()) == 3
    assert "no test asked for" not in run(pytester, "--jev-backend=mock").stdout.str()


def test_a_killed_recording_resumes_from_its_journal(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_k='''
import os, signal
def test_a(jev):
    jev.holds("x", "one")
def test_b(jev):
    jev.holds("x", "two")
def test_c(jev):
    jev.holds("x", "three")
    if os.environ.get("KILL_AT_C"):
        os.kill(os.getpid(), signal.SIGKILL)
''')
    pytester.makeini("[pytest]\njev_backend = mock\n")
    env = {**os.environ, "KILL_AT_C": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--jev-record"],
                          cwd=pytester.path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode < 0  # killed
    folder = pytester.path / "jev_answers"
    journals = list(folder.glob(".test_k.journal-main-*.jsonl"))
    assert len(journals) == 1 and len(journals[0].read_text().splitlines()) == 3
    assert not (folder / "test_k.jsonl").exists()
    replay = run(pytester)  # replay reads committed answers only
    replay.assert_outcomes(failed=3)
    resumed = run(pytester, "--jev-record")
    resumed.assert_outcomes(passed=3)
    resumed.stdout.fnmatch_lines(["jev: 3 questions · 0 requests + 3 replayed *", "jev: wrote *: 3 new, 0 re-recorded"])
    assert not list(folder.glob(".*journal*"))


def test_secrets_never_reach_the_file(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pytester.makepyfile(test_s=f'''
def test_leak(jev):
    assert jev.holds("my key is {KEY}", "contains a key") is not None
''')
    run(pytester, "--jev-record", "--jev-backend=mock").assert_outcomes(passed=1)
    text = answers(pytester, "test_s").read_text()
    assert KEY not in text and "my key is ***" in text
    run(pytester, "--jev-backend=mock").assert_outcomes(passed=1)  # the fingerprint is of the real request


def test_recording_needs_a_backend(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bot=BOT)
    result = run(pytester, "--jev-record")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--jev-record needs a backend*"])


def test_backend_errors_fail_the_test_and_record_nothing(pytester: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    pytester.makepyfile(test_e='''
def test_refused(jev):
    jev.holds("x", "is refused")
def test_second(jev):
    jev.holds("x", "is asked after")
''')

    def bad_request(seen: Seen) -> Reply:
        return Reply(400, {"detail": [{"loc": ["body", "questions"], "msg": "no such question"}]})

    with LoopbackServer(bad_request) as server:
        result = run(pytester, "--jev-record", "--jev-backend=jev", f"--jev-base-url={server.base_url}")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*test_e.py::test_refused: backend jev did not answer holds 'is refused': HTTP 400: "
                                 "body.questions: no such question (nothing recorded; the next --jev-record asks "
                                 "again)*"])
    assert not answers(pytester, "test_e").exists()

    def unauthorized(seen: Seen) -> Reply:
        return Reply(401, {"error": f"bad key {KEY}"})

    with LoopbackServer(unauthorized) as server:
        result = run(pytester, "--jev-record", "--jev-backend=jev", f"--jev-base-url={server.base_url}")
        assert len(server.requests) == 1  # the second test fails without asking again
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert out.count("jev: backend jev: HTTP 401") >= 2 and "check TYPESAFE_API_KEY" in out and KEY not in out
    assert_one_line(out, "HTTP 401 from ")


def assert_one_line(out: str, error: str) -> None:
    """A failure shows our one line only: not the error it was made from, chained before it."""
    assert "During handling of the above exception" not in out
    assert not [line for line in out.splitlines() if line.startswith(error)], out


def test_a_backend_that_cannot_be_built_fails_the_test_in_one_line(pytester: pytest.Pytester) -> None:
    """The jev_backend fixture (through the pytest_jev_make_backend hook) refuses with a JevError:
    the test fails with one line naming the backend, and nothing is written."""
    pytester.makeconftest('''
from pytest_jev.errors import OptionError


def pytest_jev_make_backend(spec, options, pack, config):
    raise OptionError("the gateway is down", fix="try again later")
''')
    pytester.makepyfile(test_e='''
def test_refused(jev):
    jev.holds("x", "is refused")
''')
    result = run(pytester, "--jev-record", "--jev-backend=mock")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["jev: backend mock: the gateway is down; try again later"])
    assert_one_line(result.stdout.str(), "the gateway is down")
    assert not answers(pytester, "test_e").exists()


def test_xdist_workers_write_what_a_serial_run_writes(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(test_suite=SUITE, test_bot=BOT)
    folder = pytester.path / "jev_answers"
    serial = run(pytester, "--jev-record", "--jev-backend=mock")
    written = {p.name: p.read_bytes() for p in folder.iterdir()}
    for path in folder.iterdir():
        path.unlink()
    parallel = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA", "-n", "2", "--jev-record",
                                             "--jev-backend=mock")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == written
    assert outcomes(parallel.stdout.str()) == outcomes(serial.stdout.str())
    out = parallel.stdout.str()
    assert out.count("jev: 55 questions") == 1 and out.count("jev: wrote") == 2  # printed once, by the controller
    replay = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA", "-n", "2")
    assert outcomes(replay.stdout.str()) == outcomes(serial.stdout.str())
    replay.stdout.fnmatch_lines(["jev: 55 questions · 0 requests + * replayed · 0 input tokens · $0 · 0.00 s in "
                                 "mock *"])
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == written


@pytest.mark.slow
def test_record_with_sparrow_then_replay_with_the_network_blocked(pytester: pytest.Pytester) -> None:
    pytest.importorskip("sparrow_decider")
    pytester.makepyfile(test_suite=SUITE)
    recorded = run(pytester, "--jev-record", "--jev-backend=sparrow")
    recorded.stdout.fnmatch_lines(["jev: 48 questions · * requests * · 0 input tokens · $0 · * s in sparrow · "
                                   "sparrow-nano-general-v1.1", "jev: wrote jev_answers/test_suite.jsonl: * new, *"])
    pytester.makeconftest(NO_NETWORK)
    pytester.makepyfile(test_zz='''
import sys
def test_no_model_was_loaded():
    assert [m for m in ("sparrow_decider", "numpy", "pytest_jev.backends.local") if m in sys.modules] == []
''')
    replayed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-rA")
    got = outcomes(replayed.stdout.str())
    assert got.pop("test_zz.py::test_no_model_was_loaded") == "PASSED"
    assert got == outcomes(recorded.stdout.str()) and len(got) == 49
    replayed.stdout.fnmatch_lines(["jev: 48 questions · 0 requests + * replayed · 0 input tokens · $0 · 0.00 s in "
                                   "sparrow · sparrow-nano-general-v1.1"])
