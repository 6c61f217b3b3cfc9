"""The `jev` fixture's verdicts and questions, without pytest runs: pytest-jev 0.1.0's semantics and text."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_jev.fixture.judge import Jev, claim_question, describe_claims, score_levels
from pytest_jev.verdicts import ChoiceVerdict, Claim, Claims, ScoreVerdict, assertrepr, bar, check_threshold, preview


def test_claim_bands() -> None:
    assert Claim("c", "holds", 0.8, 0.8) and not Claim("c", "holds", 0.79, 0.8)
    assert Claim("c", "lacks", 0.2, 0.8) and not Claim("c", "lacks", 0.21, 0.8)
    assert not Claim("c", "holds", 0.5, 0.8) and not Claim("c", "lacks", 0.5, 0.8)  # the unsure band fails both
    assert Claim("c", "lacks", 1 - 0.8, 0.8)  # 0.19999999999999996 is on the bound, not past it
    assert repr(Claim("says it was refunded", "holds", 0.16, 0.8)) == \
        "<jev holds 'says it was refunded': p=0.16, needs >= 0.80>"
    assert repr(Claim("blames", "lacks", 0.95, 0.8)) == "<jev lacks 'blames': p=0.95, needs <= 0.20>"


def test_claims_report_lists_every_claim() -> None:
    claims = Claims([Claim("apologizes", "holds", 0.04, 0.8), Claim("asks for a password", "lacks", 0.01, 0.8)],
                    "Double charges   happen.\n" + "x" * 200)
    assert not claims and len(claims) == 2 and claims.failed == [claims[0]]
    assert repr(claims) == "<jev 1 of 2 claims passed>"
    lines = claims.report().splitlines()
    assert lines[0] == "jev: 1 of 2 claims failed"
    assert lines[1].startswith("text: 'Double charges happen. xxx") and lines[1].endswith("...'")
    assert lines[2:] == ["  ✗ holds  p=0.04  apologizes  (needs >= 0.80)", "  ✓ lacks  p=0.01  asks for a password"]
    passed = Claims([Claim("a", "holds", 0.9, 0.8)], 1)
    assert passed.report().splitlines()[:2] == ["jev: all 1 claim passed", "text: 1"]


def choice(probs: dict[str, float], chosen: str = "technical") -> ChoiceVerdict:
    return ChoiceVerdict("Which team?", chosen, probs, 0.87)


def test_choice_compares_with_labels_only() -> None:
    verdict = choice({"billing": 0.1, "technical": 0.9})
    assert verdict == "technical" and "technical" == verdict and verdict != "billing"
    assert verdict.p("billing") == 0.1
    with pytest.raises(ValueError, match="'biling' is not one of the options: 'billing', 'technical'"):
        _ = verdict == "biling"
    assert (verdict == 1) is False  # not a label: plain inequality, as pytest-jev
    with pytest.raises(TypeError):
        hash(verdict)
    assert repr(verdict) == "<jev choice 'technical' (technical 0.90, billing 0.10)>"


def test_choice_failure_text_has_a_bar_per_option() -> None:
    verdict = choice({"technical": 0.9, "billing": 0.1, "account": 0.0})
    assert verdict.explain("==", "billing") == [
        "jev chose 'technical', not 'billing'", "question: Which team?",
        "  technical  0.90  ██████████████████░░", "  billing    0.10  ██░░░░░░░░░░░░░░░░░░",
        "  account    0.00  ░░░░░░░░░░░░░░░░░░░░", "confidence 0.87"]
    assert verdict.explain("!=", "technical")[0] == "jev chose 'technical'"
    assert verdict.explain("<", "billing") is None
    assert assertrepr("==", "billing", verdict) == verdict.explain("==", "billing")  # flipped operands


def score(probs: tuple[float, ...], threshold: float = 0.8) -> ScoreVerdict:
    return ScoreVerdict("How polite?", ("rude", "neutral", "warm"), probs, 0.84, 0.75, threshold)


@pytest.mark.parametrize("op, level, mass", [
    (">=", "neutral", 0.83), (">", "rude", 0.83), ("<=", "neutral", 1.0), ("<", "warm", 1.0),
    ("==", "neutral", 0.83), ("!=", "rude", 0.83), (">=", 2, 0.0), ("==", 0, 0.17)])
def test_score_mass(op: str, level: Any, mass: float) -> None:
    assert score((0.17, 0.83, 0.0)).mass(op, level) == pytest.approx(mass)


def test_score_comparisons_are_probabilistic() -> None:
    tone = score((0.17, 0.83, 0.0))
    assert tone >= "neutral" and not tone >= "warm" and tone > "rude" and tone <= 1 and tone < "warm"
    assert tone == "neutral" and tone != "warm" and not tone != "neutral"  # != is its own mass, not `not ==`
    assert "neutral" <= tone and not "warm" <= tone  # reflected: tone >= "neutral"
    assert tone.level == "neutral" and score((0.4, 0.4, 0.2)).level == "rude"  # first on ties
    assert not score((0.17, 0.83, 0.0), threshold=0.9) >= "neutral"
    with pytest.raises(ValueError, match="level 3 is out of range 0..2"):
        _ = tone >= 3
    with pytest.raises(ValueError, match="'polite' is not one of the levels"):
        _ = tone >= "polite"
    with pytest.raises(TypeError, match="not float"):
        _ = tone >= 1.5
    with pytest.raises(TypeError, match="not bool"):
        _ = tone == True  # noqa: E712  a bool is not a level index
    assert repr(tone) == "<jev score 'neutral' (expected level 0.84; p=[0.17, 0.83, 0.00])>"


def test_score_failure_text_has_a_bar_per_level() -> None:
    tone = score((0.17, 0.83, 0.0))
    assert tone.explain(">=", "warm") == [
        "jev gave P(level >= 'warm') = 0.00, needs >= 0.80", "question: How polite?",
        "  0 rude     0.17  ███░░░░░░░░░░░░░░░░░", "  1 neutral  0.83  █████████████████░░░",
        "  2 warm     0.00  ░░░░░░░░░░░░░░░░░░░░", "expected level 0.84, confidence 0.75"]
    assert assertrepr("<=", "warm", tone) == tone.explain(">=", "warm")
    assert tone.explain(">=", "polite") is None and tone.explain(">=", True) is None
    assert assertrepr("==", 1, 2) is None


def test_small_helpers() -> None:
    assert bar(0.5) == "█" * 10 + "░" * 10 and bar(-1) == "░" * 20 and bar(2) == "█" * 20
    assert preview({"a": 1}) == "{'a': 1}" and preview("a\n b") == "'a b'"
    assert claim_question("  apologizes?! ") == "Does `text` satisfy: apologizes?"
    assert score_levels({"low": "calm", "high": "angry"}) == (("low", "high"), ["calm", "angry"])
    assert describe_claims([("a", "holds"), ("b", "lacks"), ("c", "holds"), ("d", "holds")]) == \
        "holds 'a', lacks 'b' and 2 more claims"
    for bad in (0.49, 1.01):
        with pytest.raises(ValueError, match="between 0.5 and 1"):
            check_threshold(bad)


class Recorder:
    """An Asker that answers every question from a table, and remembers what it was asked."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[tuple[Any, Any, str]] = []

    def __call__(self, state: Any, questions: Any, what: str) -> Any:
        self.asked.append((state, questions, what))
        return self.answers


def test_questions_are_pytest_jevs_word_for_word() -> None:
    ask = Recorder({"claim_0": {"noul": 0.9}, "claim_1": {"noul": 0.1},
                    "choice": {"choice": "b", "confidence": 0.5, "probabilities": {"b": 0.7, "a": 0.3}},
                    "score": {"score": 1.0, "confidence": 0.5, "probabilities": {"0": 0.2, "1": 0.8}}})
    jev = Jev(ask, model="jev-latest", threshold=0.8)
    jev.expect("reply", holds="apologizes.", lacks=["blames"], context={"policy": "p"})
    assert ask.asked[-1] == ({"text": "reply", "policy": "p"},
                             {"claim_0": {"type": "noul", "instructions": "Does `text` satisfy: apologizes?"},
                              "claim_1": {"type": "noul", "instructions": "Does `text` satisfy: blames?"}},
                             "holds 'apologizes.', lacks 'blames'")
    assert jev.choice("reply", " Which? ", ["a", "b"]) == "b"
    assert ask.asked[-1][1] == {"choice": {"type": "choice", "instructions": "Which?",
                                           "criteria": {"a": None, "b": None}}}
    assert jev.score("reply", "How?", {"low": "calm", "high": "angry"}) >= "high"
    assert ask.asked[-1][1] == {"score": {"type": "score", "instructions": "How?", "criteria": ["calm", "angry"]}}
    with pytest.raises(ValueError, match="can't use the key 'text'"):
        jev.holds("reply", "x", context={"text": "y"})
    with pytest.raises(ValueError, match="2 to 255 distinct options"):
        jev.choice("reply", "Which?", ["a", "a"])
    with pytest.raises(ValueError, match="at least one claim"):
        jev.expect("reply")
    assert repr(jev) == "<jev model=jev-latest threshold=0.8>"
