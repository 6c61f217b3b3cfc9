"""Prices and token estimates: the one place a list price is written down or a token count guessed.

Prices are USD per million tokens, as (input, output). Jev's is wire-contract §1.4 (input
$0.042, output free); Anthropic's are platform.claude.com list prices (wire-contract §3);
embedded models, the mock and local OpenAI-compatible servers cost nothing. A backend.json
carries its price as {"input_usd_per_mtok": x, "output_usd_per_mtok": y} (`per_mtok`).

Token estimates (--jev-dry-run, the mock's usage) use one provider-neutral rate, never billing.
"""

from __future__ import annotations

import re
from typing import Any

Price = tuple[float, float]  # USD per million tokens: (input, output)

JEV_LIST_PRICE: Price = (0.042, 0.0)  # Jev: input, output (output is free)
FREE: Price = (0.0, 0.0)
CLAUDE_PRICES: dict[str, Price] = {
    "claude-sonnet-5-5": (2.0, 10.0), "claude-sonnet-5": (2.0, 10.0), "claude-sonnet-4-6": (3.0, 15.0),
    "claude-sonnet-4-5": (3.0, 15.0), "claude-haiku-4-5": (1.0, 5.0)}
CHARS_PER_TOKEN = 4  # a rough, provider-neutral rate for estimates (--jev-dry-run), never for billing


def claude_list_price(model: str) -> Price | None:
    """List price of a Claude model id or of a dated snapshot of it (claude-sonnet-5-20261001)."""
    for prefix, price in CLAUDE_PRICES.items():
        if model == prefix or re.fullmatch(re.escape(prefix) + r"-\d{8}", model):
            return price
    return None


def per_mtok(price: Price) -> dict[str, Any]:
    """A price as backend.json writes it."""
    return {"input_usd_per_mtok": price[0], "output_usd_per_mtok": price[1]}


def text_tokens(text: str) -> int:
    """Tokens a text is estimated to bill."""
    return len(text) // CHARS_PER_TOKEN + 1


# Where the prices of a cost come from (`price_source` in results files, --jev-json and protocol reports):
GIVEN = "given"  # --jev-price-input / --jev-price-output (or their ini twins)
LISTED = "backend.json"  # the list price the recording's backend.json states
DEFAULT = "default"  # Jev's list price: the backend.json states none (jevassert's rule)


def price_source(sources: tuple[str, str], prices: tuple[float | None, float | None]) -> str | None:
    """One word for where a cost's (input, output) prices come from: given, backend.json or default,
    or two joined by " + " when they differ; None when neither price is known (no cost)."""
    if prices[0] is None and prices[1] is None:
        return None
    return sources[0] if sources[0] == sources[1] else " + ".join(sources)
