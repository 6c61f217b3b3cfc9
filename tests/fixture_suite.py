"""A pytest-jev 0.1.0 style test suite, and a fake `jev_client`, for the fixture's tests.

SUITE uses every method and comparison of the `jev` fixture, thresholds per call, per marker
and per flag, context, and a test without `jev`; some of its tests fail or error on purpose.
FAKE_CONFTEST overrides `jev_client` exactly as pytest-jev documents, with a deterministic
fake of the TypeSafe SDK: a noul's probability is the number written in its claim, a choice's
or a score's distribution the numbers in brackets in its question; a `policy` in the context
flips a noul, and the model `jev-strict` lowers every noul by 0.1. So both plugins can run
the very same files and must give every test the same outcome.
"""

from __future__ import annotations

SUITE = '''
import pytest

REPLY = "We are sorry: the duplicate payment of order #1042 was refunded to your card."
TEAMS = {"billing": "Payments, charges, invoices and refunds", "technical": "Bugs, errors and crashes",
         "account": "Logins and passwords", "other": "Anything else"}
POLITENESS = {"rude": "Rude or blaming", "neutral": "Matter-of-fact", "warm": "Warm and polite"}


def test_holds_passes(jev):
    assert jev.holds(REPLY, "apologizes (0.93)")


def test_holds_fails_below_threshold(jev):
    assert jev.holds(REPLY, "says the payment was refunded (0.16)")


def test_holds_at_the_threshold(jev):
    assert jev.holds(REPLY, "sits on the threshold (0.8)")


def test_lacks_passes(jev):
    assert jev.lacks(REPLY, "asks for a password (0.01)")


def test_lacks_at_its_bound(jev):
    assert jev.lacks(REPLY, "sits on the lower bound (0.2)")


def test_unsure_band_fails_holds(jev):
    assert jev.holds(REPLY, "is a coin flip (0.5)")


def test_unsure_band_fails_lacks(jev):
    assert jev.lacks(REPLY, "is a coin flip (0.5)")


def test_result_carries_p(jev):
    claim = jev.holds(REPLY, "apologizes (0.93)")
    assert claim.p == pytest.approx(0.93)
    assert "p=0.93" in repr(claim) and bool(claim)


def test_threshold_per_call_stricter(jev):
    assert jev.holds(REPLY, "apologizes (0.85)", threshold=0.9)


def test_threshold_per_call_looser(jev):
    assert jev.holds(REPLY, "apologizes (0.65)", threshold=0.6)


def test_threshold_per_call_out_of_range(jev):
    jev.holds(REPLY, "apologizes (0.93)", threshold=0.3)


def test_empty_claim_is_an_error(jev):
    jev.holds(REPLY, "   ")


@pytest.mark.jev(threshold=0.9)
def test_marker_threshold(jev):
    assert jev.holds(REPLY, "apologizes (0.85)")


@pytest.mark.jev(threshold=0.6)
def test_marker_threshold_lacks(jev):
    assert jev.lacks(REPLY, "blames the customer (0.35)")


@pytest.mark.jev(model="jev-strict")
def test_marker_model(jev):
    assert jev.holds(REPLY, "apologizes (0.85)")


@pytest.mark.jev(colour="blue")
def test_marker_unknown_option(jev):
    assert jev.holds(REPLY, "apologizes (0.93)")


def test_expect_all_pass(jev):
    claims = jev.expect(REPLY, holds=["apologizes (0.93)", "mentions the order (0.99)"],
                        lacks="blames the customer (0.02)")
    assert len(claims) == 3 and claims.passed and [c.expect for c in claims] == ["holds", "holds", "lacks"]


def test_expect_fails_with_a_report(jev):
    jev.expect(REPLY, holds=["apologizes (0.04)", "says it was refunded (0.21)"],
               lacks=["blames the customer (0.79)", "asks for a card number (0.01)"])


def test_expect_report_text(jev):
    with pytest.raises(AssertionError) as info:
        jev.expect(REPLY, holds=["apologizes (0.04)"], lacks=["asks for a card number (0.01)"])
    text = str(info.value)
    assert text.startswith("jev: 1 of 2 claims failed")
    assert "p=0.04  apologizes (0.04)  (needs >= 0.80)" in text


def test_expect_needs_a_claim(jev):
    jev.expect(REPLY)


def test_expect_threshold_per_call(jev):
    jev.expect(REPLY, holds=["apologizes (0.75)"], threshold=0.7)


def test_context_is_sent(jev):
    assert jev.lacks(REPLY, "contradicts the policy in `policy` (0.95)", context={"policy": "Refunds in 5 days."})


def test_context_cannot_use_text(jev):
    jev.holds(REPLY, "apologizes (0.93)", context={"text": "other"})


def test_choice_equals(jev):
    assert jev.choice(REPLY, "Which team should handle this? [0.88 0.12 0 0]", TEAMS) == "billing"


def test_choice_wrong_label_fails(jev):
    assert jev.choice(REPLY, "Which team should handle this? [0.1 0.9 0 0]", TEAMS) == "billing"


def test_choice_not_equal(jev):
    assert jev.choice(REPLY, "Which team should handle this? [0.1 0.9 0 0]", TEAMS) != "billing"


def test_choice_not_equal_fails(jev):
    assert jev.choice(REPLY, "Which team should handle this? [0.88 0.12 0 0]", TEAMS) != "billing"


def test_choice_reversed(jev):
    assert "technical" == jev.choice(REPLY, "Which team should handle this? [0.1 0.9 0 0]", TEAMS)


def test_choice_list_options_and_p(jev):
    team = jev.choice(REPLY, "Which team? [0.3 0.7]", ["billing", "technical"])
    assert team == "technical" and team.p("billing") == pytest.approx(0.3)


def test_choice_label_not_an_option(jev):
    assert jev.choice(REPLY, "Which team? [0.3 0.7]", ["billing", "technical"]) == "biling"


def test_choice_needs_two_options(jev):
    jev.choice(REPLY, "Which team? [1]", ["billing"])


def test_choice_context(jev):
    assert jev.choice(REPLY, "Which team? [0.3 0.7]", ["billing", "technical"], context={"docs": "x"}) == "technical"


def test_score_at_least(jev):
    assert jev.score(REPLY, "How polite is this reply? [0 0.1 0.9]", POLITENESS) >= "warm"


def test_score_at_least_fails(jev):
    assert jev.score(REPLY, "How polite is this reply? [0.17 0.83 0]", POLITENESS) >= "warm"


def test_score_at_least_neutral(jev):
    assert jev.score(REPLY, "How polite is this reply? [0.17 0.83 0]", POLITENESS) >= "neutral"


def test_score_greater(jev):
    assert jev.score(REPLY, "How polite is this reply? [0.1 0.5 0.4]", POLITENESS) > "rude"


def test_score_at_most_index(jev):
    assert jev.score(REPLY, "How polite is this reply? [0.5 0.35 0.15]", POLITENESS) <= 1


def test_score_less_fails(jev):
    assert jev.score(REPLY, "How polite is this reply? [0.5 0.35 0.15]", POLITENESS) < "neutral"


def test_score_equal(jev):
    assert jev.score(REPLY, "How polite is this reply? [0.05 0.9 0.05]", POLITENESS) == "neutral"


def test_score_not_equal(jev):
    assert jev.score(REPLY, "How polite is this reply? [0.05 0.9 0.05]", POLITENESS) != "warm"


def test_score_reversed(jev):
    assert "neutral" <= jev.score(REPLY, "How polite is this reply? [0 0.1 0.9]", POLITENESS)


def test_score_level_and_list_levels(jev):
    tone = jev.score(REPLY, "How polite? [0.2 0.7 0.1]", ["rude", "neutral", "warm"])
    assert tone.level == "neutral" and tone.expected == pytest.approx(0.9)


def test_score_threshold_per_call(jev):
    assert jev.score(REPLY, "How polite is this reply? [0.1 0.5 0.4]", POLITENESS, threshold=0.95) > "rude"


def test_score_index_out_of_range(jev):
    assert jev.score(REPLY, "How polite is this reply? [0.1 0.5 0.4]", POLITENESS) >= 3


def test_score_bad_level(jev):
    assert jev.score(REPLY, "How polite is this reply? [0.1 0.5 0.4]", POLITENESS) >= "polite"


class TestGrouped:
    def test_in_a_class(self, jev):
        assert jev.holds(REPLY, "apologizes (0.93)")

    @pytest.mark.parametrize("p", ["0.81", "0.79"])
    def test_parametrized(self, jev, p):
        assert jev.holds(REPLY, f"is polite ({p})")


def test_without_jev():
    assert REPLY.startswith("We are sorry")
'''

FAKE_CONFTEST = '''
import json
import re
from types import SimpleNamespace

import pytest


def numbers(text):
    return [float(x) for x in re.findall(r"\\d+(?:\\.\\d+)?", text)]


class FakeJev:
    """Answers like the TypeSafe SDK: objects with .type, .noul, .choice, ... ."""

    def system_one(self, *, state, questions, model):
        answers = {}
        for name, q in questions.items():
            if q["type"] == "noul":
                p = numbers(q["instructions"])[-1]
                if "policy" in state:
                    p = round(1 - p, 4)
                if model == "jev-strict":
                    p = round(p - 0.1, 4)
                answers[name] = SimpleNamespace(type="noul", noul=p)
                continue
            spread = numbers(q["instructions"][q["instructions"].index("["):])
            keys = list(q["criteria"]) if q["type"] == "choice" else list(range(len(q["criteria"])))
            probs = dict(zip(keys, spread))
            best = max(keys, key=probs.__getitem__)
            if q["type"] == "choice":
                answers[name] = SimpleNamespace(type="choice", choice=best, confidence=0.81, probabilities=probs)
            else:
                score = sum(i * p for i, p in probs.items())
                answers[name] = SimpleNamespace(type="score", score=score, confidence=0.75, probabilities=probs)
        usage = SimpleNamespace(input_tokens=len(json.dumps(state)) // 4, output_tokens=0)
        return SimpleNamespace(model="fake-jev-1.0", answers=answers, usage=usage)


@pytest.fixture(scope="session")
def jev_client():
    return FakeJev()
'''
