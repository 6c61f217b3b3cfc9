"""An overridden `jev_client`'s answers are cached between runs, as pytest-jev caches them
(fixture/client_cache.py): in .pytest_cache/d/jev_client/, one file per test module, in the
recorded-answers files' line format; --jev-no-cache asks again; no cache provider, no cache;
xdist writes what a serial run writes. And pytest-jev's wording of a failed client request."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest
from fixture_helpers import outcomes

from pytest_jev.fixture.answers import read_lines, render
from pytest_jev.formats import format_of
from pytest_jev.formats.answers_line import KEYS
from pytest_jev.formats.schemas import check_file
from pytest_jev.wire import Request, fingerprints

# A fake whose every call is appended to calls.jsonl (the in-process runs re-import the conftest),
# and whose answers carry the number in ANSWER_P (so a test can change what it says between runs).
CONFTEST = '''
import json, os
from pathlib import Path
from types import SimpleNamespace as NS

import pytest


class Fake:
    def system_one(self, *, state, questions, model):
        with open(Path(__file__).parent / "calls.jsonl", "a") as f:
            f.write(json.dumps({"state": state, "questions": sorted(questions), "model": model}) + "\\n")
        p = float(os.environ.get("ANSWER_P", "0.9"))
        answers = {}
        for name, q in questions.items():
            if q["type"] == "noul":
                answers[name] = NS(type="noul", noul=p)
            else:
                keys = list(q["criteria"]) if q["type"] == "choice" else list(range(len(q["criteria"])))
                probs = {k: (p if i == 0 else round((1 - p) / (len(keys) - 1), 4)) for i, k in enumerate(keys)}
                if q["type"] == "choice":
                    answers[name] = NS(type="choice", choice=keys[0], confidence=0.8, probabilities=probs)
                else:
                    answers[name] = NS(type="score", score=1 - p, confidence=0.7, probabilities=probs)
        return NS(model=f"fake/{model}", answers=answers, usage=NS(input_tokens=100))


@pytest.fixture(scope="session")
def jev_client():
    return Fake()
'''

TESTS = '''
def test_holds(jev):
    assert jev.holds("We refunded you.", "says it was refunded")

def test_same_request_again(jev):
    assert jev.holds("We refunded you.", "says it was refunded")

def test_choice(jev):
    assert jev.choice("I was charged twice", "Which team?", ["billing", "technical"]) == "billing"
'''


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("ANSWER_P", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_c=TESTS)
    return pytester


def calls(pytester: pytest.Pytester) -> list[dict[str, object]]:
    path = pytester.path / "calls.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []


def cache_file(pytester: pytest.Pytester, module: str = "test_c") -> Path:
    return pytester.path / ".pytest_cache" / "d" / "jev_client" / f"{module}.jsonl"


def test_a_slow_client_pays_each_question_once(suite: pytest.Pytester) -> None:
    first = suite.runpytest()
    first.assert_outcomes(passed=3)
    # the request asked twice in one run is asked once, as pytest-jev reads back what it just cached
    first.stdout.fnmatch_lines(["jev: 3 questions · 2 requests + 1 cached · 200 input tokens · $0.0000084 · * s in "
                                "jev_client · fake/jev-latest"])
    assert len(calls(suite)) == 2
    written = cache_file(suite).read_bytes()
    lines = [json.loads(x) for x in written.decode().splitlines()]
    assert [list(line) for line in lines] == [list(KEYS)] * 2  # the answers files' line format
    # ... exactly: the formats registry knows the file, it passes the answers-line schema, and each
    # line read into an AnswerLine and encoded as answers files are gives back its bytes
    fmt = format_of(PurePosixPath(cache_file(suite).relative_to(suite.path).as_posix()))
    assert fmt is not None and fmt.schema == "answers-line"
    assert check_file(fmt.schema, cache_file(suite), fmt.fix, lines=True) == 2
    assert render(read_lines(cache_file(suite)).values()) == written
    holds = {"claim_0": {"type": "noul", "instructions": "Does `text` satisfy: says it was refunded?"}}
    expected_fp = fingerprints([Request("", {"text": "We refunded you."}, holds, "jev-latest")],
                               "jev_client:conftest.Fake")[0]
    assert [(line["tests"], line["backend"], line["fingerprint"] == expected_fp) for line in lines] == [
        (["test_choice"], "jev_client:conftest.Fake", False),
        (["test_holds", "test_same_request_again"], "jev_client:conftest.Fake", True)]
    assert lines[1]["answers"] == {"claim_0": {"type": "noul", "noul": 0.9}}
    assert lines[1]["model"] == "fake/jev-latest" and lines[1]["usage"] == {"input_tokens": 100, "output_tokens": 0}
    assert not list(cache_file(suite).parent.glob(".*journal*"))

    second = suite.runpytest()
    second.assert_outcomes(passed=3)
    second.stdout.fnmatch_lines(["jev: 3 questions · 0 requests + 3 cached · 0 input tokens · $0 · 0.00 s in "
                                 "jev_client · fake/jev-latest"])
    assert len(calls(suite)) == 2 and cache_file(suite).read_bytes() == written


def test_no_cache_asks_again_and_keeps_the_new_answers(suite: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    suite.runpytest().assert_outcomes(passed=3)
    monkeypatch.setenv("ANSWER_P", "0.6")  # the client now says something else
    result = suite.runpytest("--jev-no-cache", "-rA")
    assert len(calls(suite)) == 2 + 3  # every request, the repeated one too (nothing is read)
    result.stdout.fnmatch_lines(["jev: --jev-no-cache (pytest-jev): an overridden jev_client is asked again*",
                                 "jev: 3 questions · 3 requests · *"])
    assert outcomes(result.stdout.str()) == {"test_c.py::test_holds": "FAILED",
                                             "test_c.py::test_same_request_again": "FAILED",
                                             "test_c.py::test_choice": "PASSED"}  # 0.6 against 0.4
    answers = {line.tests[0]: line.answers for line in read_lines(cache_file(suite)).values()}
    assert answers["test_holds"] == {"claim_0": {"type": "noul", "noul": 0.6}}
    monkeypatch.delenv("ANSWER_P")
    suite.runpytest().assert_outcomes(passed=1, failed=2)  # the cache now holds 0.6: read back, not asked
    assert len(calls(suite)) == 5


def test_another_model_question_or_client_is_asked_again(suite: pytest.Pytester) -> None:
    suite.runpytest().assert_outcomes(passed=3)
    suite.runpytest("--jev-model", "jev-1.13").assert_outcomes(passed=3)
    assert [c["model"] for c in calls(suite)] == ["jev-latest"] * 2 + ["jev-1.13"] * 2
    suite.makepyfile(test_c=TESTS.replace("says it was refunded", "says it was refunded today"))
    suite.runpytest().assert_outcomes(passed=3)
    assert len(calls(suite)) == 5  # only the changed claim
    suite.makeconftest(CONFTEST.replace("class Fake:", "class Gateway:").replace("return Fake()", "return Gateway()"))
    suite.runpytest().assert_outcomes(passed=3)
    assert len(calls(suite)) == 7  # another client never answers from the first one's lines


def test_without_the_cache_provider_nothing_is_cached(suite: pytest.Pytester) -> None:
    for _ in range(2):
        suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)
    assert len(calls(suite)) == 6 and not (suite.path / ".pytest_cache").exists()


def test_the_default_client_never_reads_the_cache(suite: pytest.Pytester) -> None:
    suite.runpytest().assert_outcomes(passed=3)
    (suite.path / "conftest.py").unlink()
    result = suite.runpytest()
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*jev: no recorded answer for test_c.py::test_holds*"])


def test_a_broken_cache_file_is_asked_again_and_replaced(suite: pytest.Pytester) -> None:
    path = cache_file(suite)
    path.parent.mkdir(parents=True)
    path.write_text("<<<<<<< HEAD\nnot a line\n")
    suite.runpytest().assert_outcomes(passed=3)
    assert len(calls(suite)) == 2 and len(read_lines(path)) == 2


def test_xdist_writes_what_a_serial_run_writes(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    for name in ("test_a", "test_b"):
        pytester.makepyfile(**{name: TESTS + "\n".join(
            f"def test_more_{i}(jev):\n    assert jev.holds('reply {i}', 'is fine')\n" for i in range(8))})
    pytester.runpytest_subprocess("-p", "no:xdist").assert_outcomes(passed=22)
    serial = {name: cache_file(pytester, name).read_bytes() for name in ("test_a", "test_b")}
    pytester.runpytest_subprocess("--cache-clear", "-p", "no:xdist").assert_outcomes(passed=22)
    assert not (pytester.path / ".pytest_cache" / "d" / "jev_client" / ".test_a.journal").exists()
    (pytester.path / "calls.jsonl").unlink()
    pytester.runpytest_subprocess("--cache-clear", "-n", "2").assert_outcomes(passed=22)
    assert {name: cache_file(pytester, name).read_bytes() for name in ("test_a", "test_b")} == serial
    assert not list((pytester.path / ".pytest_cache" / "d" / "jev_client").glob(".*journal*"))
    assert len(calls(pytester)) in (20, 21, 22)  # a request two workers ask at once may be asked twice
    result = pytester.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=22)
    result.stdout.fnmatch_lines(["jev: 22 questions · 0 requests + 22 cached · *"])


def test_a_failed_sdk_request_fails_with_pytest_jev_s_words(pytester: pytest.Pytester) -> None:
    """pytest-jev turns the TypeSafe SDK's errors into one line that CI logs are grepped for;
    any other exception of a client fails with its traceback, as there. Nothing is cached."""
    pkg = pytester.mkpydir("typesafe_sdk")
    (pkg / "__init__.py").write_text("class TypeSafeError(Exception):\n    pass\n\n"
                                     "class TypeSafeAuthenticationError(TypeSafeError):\n    pass\n")
    pytester.makeconftest('''
import pytest
import typesafe_sdk


class Flaky:
    def system_one(self, *, state, questions, model):
        errors = {"down": typesafe_sdk.TypeSafeError("service unavailable"),
                  "key": typesafe_sdk.TypeSafeAuthenticationError("401 invalid key"), "bug": KeyError("oops")}
        raise errors[state["text"]]


@pytest.fixture(scope="session")
def jev_client():
    return Flaky()
''')
    pytester.makepyfile(test_e='''
import pytest

@pytest.mark.parametrize("text", ["down", "key", "bug"])
def test_reply(jev, text):
    assert jev.holds(text, "y")
''')
    result = pytester.runpytest()
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([
        "*_ test_reply[[]down[]] _*", "pytest-jev: the Jev request failed: service unavailable (jev_client Flaky)",
        "*_ test_reply[[]key[]] _*",
        "pytest-jev: authentication failed, check your API key (401 invalid key) (jev_client Flaky)",
        "*_ test_reply[[]bug[]] _*", "*raise errors[[]state*", "E       KeyError: 'oops'"])
    assert "During handling" not in result.stdout.str()  # the one line, without the SDK's exception chained
    assert not cache_file(pytester, "test_e").exists()
