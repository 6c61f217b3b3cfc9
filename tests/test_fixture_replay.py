"""The `jev` fixture answering from recorded answers files: no backend, no network, no key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixture_helpers import (
    NO_NETWORK,
    choice_line,
    claims_line,
    claims_request,
    line,
    outcomes,
    score_line,
    write_answers,
)

from pytest_jev.formats.answers_line import AnswerLine

REPLY = "Sorry: your duplicate payment was refunded."
BOT = f'''
import pytest

REPLY = {REPLY!r}


def test_holds(jev):
    assert jev.holds(REPLY, "apologizes")


def test_lacks(jev):
    assert jev.lacks(REPLY, "blames the customer")


def test_expect(jev):
    claims = jev.expect(REPLY, holds=["apologizes", "mentions a refund"], lacks="asks for a password")
    assert [round(c.p, 2) for c in claims] == [0.93, 0.88, 0.01]


def test_choice(jev):
    team = jev.choice(REPLY, "Which team?", ["billing", "technical"])
    assert team == "billing" and team.p("technical") == 0.1


def test_score(jev):
    tone = jev.score(REPLY, "How polite?", ["rude", "neutral", "warm"])
    assert tone >= "neutral" and tone.level == "warm"


def test_context(jev):
    assert jev.lacks(REPLY, "contradicts `policy`", context={{"policy": "refunds within 5 days"}})


def test_plain():
    assert REPLY
'''


def bot_lines(**kw: object) -> list[AnswerLine]:
    return [
        claims_line(REPLY, {"apologizes": 0.93}, tests=["test_holds"], **kw),
        claims_line(REPLY, {"blames the customer": 0.02}, tests=["test_lacks"], **kw),
        claims_line(REPLY, {"apologizes": 0.93, "mentions a refund": 0.88, "asks for a password": 0.01},
                    tests=["test_expect"], **kw),
        choice_line(REPLY, "Which team?", {"billing": 0.9, "technical": 0.1}, tests=["test_choice"], **kw),
        score_line(REPLY, "How polite?", ["rude", "neutral", "warm"], [0.05, 0.35, 0.6], tests=["test_score"], **kw),
        claims_line(REPLY, {"contradicts `policy`": 0.1}, context={"policy": "refunds within 5 days"},
                    tests=["test_context"], **kw),
    ]


@pytest.fixture
def bot(pytester: pytest.Pytester) -> Path:
    pytester.makepyfile(test_bot=BOT)
    return write_answers(pytester.path, "test_bot", bot_lines())


def test_replays_every_method_offline(pytester: pytest.Pytester, bot: Path) -> None:
    pytester.makeconftest(NO_NETWORK)
    before = bot.read_bytes()
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=7)
    result.stdout.fnmatch_lines(["*- jev -*", "jev: 8 questions · 0 requests + 6 replayed · 0 input tokens · $0 · "
                                 "0.00 s in jev · jev-1.13.0"])
    assert bot.read_bytes() == before  # replay never writes
    assert "unused" not in result.stdout.str() and "no test asked" not in result.stdout.str()


def test_replay_builds_no_backend_and_imports_nothing_heavy(pytester: pytest.Pytester, bot: Path) -> None:
    pytester.makepyfile(test_zz_last="""
import sys
def test_nothing_heavy_was_imported():
    heavy = [m for m in ("numpy", "httpx", "sparrow_decider", "pytest_jev.backends.typesafe",
                         "pytest_jev.record.driver") if m in sys.modules]
    assert heavy == []
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=8)


def test_an_unrecorded_answer_fails_with_the_command_that_records_it(pytester: pytest.Pytester, bot: Path) -> None:
    pytester.makepyfile(test_new='''
import pytest
@pytest.mark.parametrize("n", [1])
def test_new(jev, n):
    assert jev.holds("a reply", "is new")
''')
    pytester.makeini("[pytest]\njev_backend = mock\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA", "--jev-model=jev-1.13.0")
    result.assert_outcomes(passed=1, failed=7)
    out = result.stdout.str()
    assert ("jev: no recorded answer for test_new.py::test_new[1]: holds 'is new' (backend mock, "
            "jev_answers/test_new.jsonl); record it with `pytest 'test_new.py::test_new[1]' "
            "--jev-record=new_episodes --jev-backend=mock --jev-model=jev-1.13.0`") in out
    assert "Traceback" not in out and not (pytester.path / "jev_answers" / "test_new.jsonl").exists()


def test_without_a_backend_the_command_names_jev(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_new="def test_new(jev):\n    jev.choice('x', 'Which?', ['a', 'b'])\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no recorded answer for test_new.py::test_new: choice 'Which?' (any backend, "
                                 "jev_answers/test_new.jsonl); record it with `pytest test_new.py::test_new "
                                 "--jev-record=new_episodes --jev-backend=jev`"])


def test_an_answer_breaking_the_contract_fails_and_is_never_used(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad="def test_bad(jev):\n    assert jev.holds('x', 'is odd')\n")
    write_answers(pytester.path, "test_bad", [claims_line("x", {"is odd": 1.5}, tests=["test_bad"])])
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_bad.py::test_bad: the recorded answer to holds 'is odd' in "
                                 "jev_answers/test_bad.jsonl breaks the answer contract (claim_0: noul 1.5 outside "
                                 "[[]0, 1[]]); re-record it with "
                                 "`pytest test_bad.py::test_bad --jev-record=new_episodes --jev-backend=jev`"])


def test_a_broken_answers_file_names_its_line(pytester: pytest.Pytester, bot: Path) -> None:
    text = bot.read_text().splitlines()
    bot.write_text("\n".join([text[0], "<<<<<<< HEAD", *text[1:]]) + "\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=6)
    result.stdout.fnmatch_lines(["*jev: jev_answers/test_bot.jsonl:2: not an answer line (a JSON object with a "
                                 "fingerprint and questions); repair or delete the line, or re-record the module's "
                                 "answers with --jev-record=all*"])


def test_several_backends_need_jev_backend(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_two="def test_two(jev):\n    assert jev.holds('x', 'is fine')\n")
    write_answers(pytester.path, "test_two", [claims_line("x", {"is fine": 0.9}, tests=["test_two"]),
                                              claims_line("x", {"is fine": 0.1}, tests=["test_two"],
                                                          backend="sparrow", served="sparrow-nano")])
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*has answers recorded by several backends (jev, sparrow); choose one with "
                                 "--jev-backend*"])
    pytester.runpytest("-p", "no:cacheprovider", "--jev-backend=jev").assert_outcomes(passed=1)
    pytester.runpytest("-p", "no:cacheprovider", "--jev-backend=sparrow").assert_outcomes(failed=1)


THRESHOLDS = '''
import pytest

def test_default(jev):
    assert jev.holds("x", "is likely")

@pytest.mark.jev(threshold=0.9)
def test_marker(jev):
    assert jev.holds("x", "is likely")

def test_per_call(jev):
    assert jev.holds("x", "is likely", threshold=0.85)

@pytest.mark.jev(model="jev-1.13.0")
def test_model(jev):
    assert jev.holds("x", "is likely") and jev.model == "jev-1.13.0"

def test_plain():
    pass
'''


@pytest.mark.parametrize("args, passed", [
    ([], {"test_default", "test_per_call", "test_model", "test_plain"}),
    (["--jev-threshold=0.86"], {"test_per_call", "test_model", "test_plain"}),
    (["-o", "jev_threshold=0.7"], {"test_default", "test_per_call", "test_model", "test_plain"}),
    (["-m", "not jev"], {"test_plain"}),
    (["-m", "jev", "--jev-threshold", "1"], {"test_per_call"}),
])
def test_thresholds_markers_and_the_jev_marker(pytester: pytest.Pytester, args: list[str], passed: set[str]) -> None:
    pytester.makepyfile(test_t=THRESHOLDS)
    write_answers(pytester.path, "test_t", [claims_line("x", {"is likely": 0.85}, tests=["test_default"]),
                                            claims_line("x", {"is likely": 0.95}, requested="jev-1.13.0",
                                                        tests=["test_model"])])
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA", *args)
    got = outcomes(result.stdout.str())
    assert {nodeid.split("::")[1] for nodeid, outcome in got.items() if outcome == "PASSED"} == passed
    if args[:2] == ["-m", "not jev"]:
        result.assert_outcomes(passed=1, deselected=4)


def test_a_bad_threshold_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--jev-threshold=0.3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: jev threshold must be between 0.5 and 1, got 0.3; pass "
                                 "--jev-threshold=<0.5..1> (or set jev_threshold)"])
    result = pytester.runpytest("-o", "jev_threshold=often")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --jev-threshold='often' is not a number; pass --jev-threshold=<0.5..1> *"])


def test_a_bad_threshold_in_a_call_fails_at_the_test_s_own_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_low="def test_low(jev):\n    assert jev.holds('Sorry!', 'apologizes', threshold=0.3)\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E * jev threshold must be between 0.5 and 1, got 0.3"])  # pytest-jev's words
    assert "verdicts.py" not in result.stdout.str()  # the traceback stops at the test's own line


def test_failure_text_shows_bars(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_f='''
def test_team(jev):
    assert jev.choice("x", "Which team?", {"billing": "money", "technical": "bugs"}) == "billing"
def test_tone(jev):
    assert "warm" <= jev.score("x", "How polite?", ["rude", "neutral", "warm"])
''')
    write_answers(pytester.path, "test_f", [
        choice_line("x", "Which team?", {"billing": 0.1, "technical": 0.9}, tests=["test_team"],
                    criteria={"billing": "money", "technical": "bugs"}),
        score_line("x", "How polite?", ["rude", "neutral", "warm"], [0.17, 0.83, 0.0], tests=["test_tone"])])
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "E       AssertionError: assert jev chose 'technical', not 'billing'",
        "E         question: Which team?", "E           technical  0.90  ██████████████████░░",
        "E           billing    0.10  ██░░░░░░░░░░░░░░░░░░", "E         confidence 0.80"])
    result.stdout.fnmatch_lines([
        "E       AssertionError: assert jev gave P(level >= 'warm') = 0.00, needs >= 0.80",
        "E         question: How polite?", "E           0 rude     0.17  ███░░░░░░░░░░░░░░░░░"])


def test_answers_no_test_asked_for_are_listed(pytester: pytest.Pytester, bot: Path) -> None:
    lines = [AnswerLine.from_json(json.loads(x)) for x in bot.read_text().splitlines()]
    assert None not in lines
    stale = claims_line(REPLY, {"is an old claim": 0.5}, tests=["test_holds"])
    gone = claims_line(REPLY, {"was asked by a removed test": 0.5}, tests=["test_removed"])
    other = claims_line(REPLY, {"was recorded with sparrow": 0.5}, tests=["test_removed"], backend="sparrow")
    write_answers(pytester.path, "test_bot", [*filter(None, lines), stale, gone, other])
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=7)
    # the sparrow line is not this run's backend's: never unused
    result.stdout.fnmatch_lines(["jev: jev_answers/test_bot.jsonl: 2 recorded answers no test asked for "
                                 "(--jev-record=all drops them)"])
    for partial in (["-k", "holds"], ["test_bot.py::test_holds"], ["-x", "--deselect", "test_bot.py::test_plain"]):
        assert "no test asked for" not in pytester.runpytest("-p", "no:cacheprovider", *partial).stdout.str()
    pytester.makepyfile(test_bot=BOT.replace('"apologizes")\n', '"apologizes")\n    assert False\n', 1))
    result = pytester.runpytest("-p", "no:cacheprovider")  # test_holds fails: its lines may still be needed
    result.stdout.fnmatch_lines(["jev: jev_answers/test_bot.jsonl: 1 recorded answer no test asked for *"])


def test_an_overridden_jev_client_is_called_and_nothing_is_recorded(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('''
import pytest
from types import SimpleNamespace as NS

class Fake:
    name = "fake"
    def __init__(self):
        self.calls = []
    def system_one(self, *, state, questions, model):
        self.calls.append(model)
        answers = {n: NS(type="noul", noul=0.9) for n in questions}
        return NS(model="fake-1", answers=answers, usage=NS(input_tokens=1000000))

@pytest.fixture(scope="session")
def jev_client():
    return Fake()
''')
    pytester.makepyfile(test_c='''
import pytest
def test_one(jev, jev_client):
    assert jev.holds("x", "is fine") and jev_client.calls == ["jev-latest"]
@pytest.mark.jev(model="jev-1.13")
def test_two(jev, jev_client):
    jev.expect("x", holds=["a", "b"])
    assert jev_client.calls[-1] == "jev-1.13"
''')
    result = pytester.runpytest("-p", "no:cacheprovider", "--jev-record", "--jev-backend=mock")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["jev: 3 questions · 2 requests · 2,000,000 input tokens · $0.08 · * s in fake · "
                                 "fake-1"])
    assert not (pytester.path / "jev_answers").exists()


def test_a_client_wrapping_the_default_one_still_replays(pytester: pytest.Pytester, bot: Path) -> None:
    pytester.makeconftest('''
import pytest
from pytest_jev.fixture.answering import RecordedClient

class Logged:
    def __init__(self, inner):
        self.inner, self.seen = inner, []
    def system_one(self, *, state, questions, model):
        self.seen.append(sorted(questions))
        return self.inner.system_one(state=state, questions=questions, model=model)

@pytest.fixture(scope="session")
def jev_client(pytestconfig):
    from pytest_jev.stash import FIXTURE_KEY as SESSION_KEY
    return Logged(RecordedClient(pytestconfig.stash[SESSION_KEY]))
''')
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=7)


def test_context_cannot_hold_text_and_state_must_be_json(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_s='''
import pytest
def test_text_key(jev):
    with pytest.raises(ValueError, match="can't use the key 'text'"):
        jev.holds("x", "y", context={"text": 1})
def test_not_json(jev):
    with pytest.raises(TypeError):
        jev.holds(object(), "y")
''')
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_a_state_that_is_not_a_string_replays(pytester: pytest.Pytester) -> None:
    state, questions = claims_request({"subject": "Refund", "body": "twice"}, ["asks for money back"])
    write_answers(pytester.path, "test_d", [line(state, questions, {"claim_0": {"type": "noul", "noul": 0.97}},
                                                 tests=["test_dict"])])
    pytester.makepyfile(test_d='''
def test_dict(jev):
    assert jev.holds({"subject": "Refund", "body": "twice"}, "asks for money back")
''')
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
