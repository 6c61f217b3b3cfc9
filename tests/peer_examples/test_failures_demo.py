"""These tests fail on purpose, to show what pytest-jev reports when a reply goes wrong.

pytest examples/test_failures_demo.py --jev-model jev-1.13
"""

REFUND_POLICY = (
    "Duplicate charges are refunded to the original payment method. "
    "Refunds appear within 5 business days."
)

# A reply from a bad prompt change: it invents a policy and gets curt.
BAD_REPLY = "Double charges happen when you click twice. You'll get store credit within 24 hours."

TEAMS = {
    "billing": "Payments, charges, invoices and refunds",
    "technical": "Bugs, errors, crashes and integrations",
    "account": "Logins, passwords and account settings",
    "other": "Anything that fits none of the teams above",
}

POLITENESS = {
    "rude": "Rude, dismissive or blaming the customer",
    "neutral": "Neutral and matter-of-fact, no warmth",
    "warm": "Warm and polite, acknowledges the customer's frustration",
}


def test_refund_reply_follows_policy(jev):
    jev.expect(
        BAD_REPLY,
        holds=["apologizes to the customer", "says the duplicate payment was refunded"],
        lacks=["blames the customer", "asks for a password or a full card number"],
    )


def test_reply_confirms_the_refund(jev):
    assert jev.holds(BAD_REPLY, "says the duplicate payment was refunded")


def test_refund_reply_matches_the_docs(jev):
    assert jev.lacks(
        BAD_REPLY, "contradicts the policy in `policy`", context={"policy": REFUND_POLICY}
    )


def test_checkout_errors_go_to_billing(jev):
    ticket = "Your checkout page throws a 500 error when I enter my card."
    assert jev.choice(ticket, "Which team should handle this ticket?", TEAMS) == "billing"


def test_reply_is_warm(jev):
    tone = jev.score(BAD_REPLY, "How polite is this support reply?", POLITENESS)
    assert tone >= "warm"
