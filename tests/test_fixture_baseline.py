"""--jev-baseline for the `jev` fixture: the assertions whose verdict changed between two answers files
(a model upgrade of an app's semantic tests)."""

from __future__ import annotations

import shutil

import pytest
from fixture_helpers import NO_NETWORK, choice_line, claims_line, score_line, write_answers

TESTS = '''
def test_apology(jev):
    assert jev.holds("Sorry, your refund is on its way.", "apologizes")


def test_rude(jev):
    assert jev.lacks("Sorry, your refund is on its way.", "is rude")


def test_team(jev):
    assert jev.choice("My card was charged twice.", "Which team?", ["billing", "technical"]) == "billing"


def test_tone(jev):
    assert jev.score("Thanks a lot!", "How warm is it?", ["cold", "neutral", "warm"]) >= "neutral"


def test_new(jev):
    assert jev.holds("Brand new text.", "is new")
'''


def answers(apology: float, rude: float, team: dict[str, float], tone: list[float], *, model: str,
            new: bool) -> list:
    kw = {"served": model, "requested": model}
    lines = [claims_line("Sorry, your refund is on its way.", {"apologizes": apology}, tests=("test_apology",), **kw),
             claims_line("Sorry, your refund is on its way.", {"is rude": rude}, tests=("test_rude",), **kw),
             choice_line("My card was charged twice.", "Which team?", team, tests=("test_team",), **kw),
             score_line("Thanks a lot!", "How warm is it?", ["cold", "neutral", "warm"], tone, tests=("test_tone",),
                        **kw)]
    if new:
        lines.append(claims_line("Brand new text.", {"is new": 0.95}, tests=("test_new",), **kw))
    return lines


@pytest.fixture
def upgraded(pytester: pytest.Pytester) -> pytest.Pytester:
    """Answers of jev-1.13.0 kept in old/, then the module's answers of jev-1.14.0 (requested as such: other
    fingerprints): the apology claim now fails, the team choice moved, rudeness and tone kept their verdicts."""
    pytester.makeconftest(NO_NETWORK)
    pytester.makepyfile(test_bot=TESTS)
    write_answers(pytester.path, "test_bot", answers(0.93, 0.04, {"billing": 0.8, "technical": 0.2},
                                                     [0.1, 0.3, 0.6], model="jev-1.13.0", new=False))
    shutil.copytree(pytester.path / "jev_answers", pytester.path / "old")
    write_answers(pytester.path, "test_bot", answers(0.61, 0.08, {"billing": 0.3, "technical": 0.7},
                                                     [0.1, 0.2, 0.7], model="jev-1.14.0", new=True))
    pytester.makeini("[pytest]\njev_model = jev-1.14.0\n")
    return pytester


def test_the_assertions_whose_verdict_changed_are_listed(upgraded: pytest.Pytester) -> None:
    for baseline in ("old", "old/test_bot.jsonl"):
        result = upgraded.runpytest(f"--jev-baseline={baseline}", "-p", "no:randomly")
        result.assert_outcomes(passed=3, failed=2)  # the run itself is graded on today's answers, as ever
        out = result.stdout.str()
        assert (f"jev: against the baseline {baseline}: 4 verdict(s) compared (a claim's pass or fail, the option "
                "chosen, the most likely level), 2 changed; 1 request(s) with no usable baseline answer") in out
        assert ("  test_bot.py::test_apology holds 'apologizes': baseline passes (p=0.93), now fails (p=0.61)"
                in out)
        assert ("  test_bot.py::test_team choice 'Which team?': baseline 'billing' (p=0.80), now 'technical' "
                "(p=0.70)") in out
        assert "test_rude" not in out.split("jev: against the baseline")[1]  # kept its verdict: not listed


def test_two_workers_list_the_same_changes(upgraded: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    lines = []
    for extra in (["-n", "0"], ["-n", "2"]):
        result = upgraded.runpytest_subprocess("--jev-baseline=old", "-p", "no:cacheprovider", *extra)
        out = result.stdout.str()
        lines.append([line for line in out.splitlines() if "baseline" in line])
    assert lines[0] == lines[1] and len(lines[0]) == 3


def test_a_baseline_that_is_not_an_answers_file_says_so_in_one_line(upgraded: pytest.Pytester) -> None:
    (upgraded.path / "broken.jsonl").write_text("not json\n")
    result = upgraded.runpytest("--jev-baseline=broken.jsonl")
    result.assert_outcomes(passed=3, failed=2)
    assert ("jev: --jev-baseline: broken.jsonl:1: not an answer line (a JSON object with a fingerprint and "
            "questions); pass an answers file (jev_answers/<module>.jsonl) or a folder of them") in result.stdout.str()
    named = upgraded.runpytest("--jev-baseline=jev-1.13.0")
    assert ("jev: --jev-baseline jev-1.13.0 names a backend; the jev fixture compares answers files: pass an answers "
            "file or a folder of them") in named.stdout.str()


def test_without_a_baseline_nothing_is_compared(upgraded: pytest.Pytester) -> None:
    result = upgraded.runpytest()
    result.assert_outcomes(passed=3, failed=2)
    assert "against the baseline" not in result.stdout.str()


def test_a_listed_score_names_its_most_likely_level_with_its_probability() -> None:
    from pytest_jev.fixture.baseline import outcome
    from pytest_jev.verdicts import ScoreVerdict

    tone = ScoreVerdict("How polite?", ("rude", "neutral", "warm"), (0.12, 0.30, 0.58), 1.46, 0.4, 0.8)
    assert outcome(tone) == "'warm' (p=0.58, expected level 1.46)"
