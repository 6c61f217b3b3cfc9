"""pytest-jev 0.1.0's `pytest_jev.verdicts`: what the `jev` fixture's methods return.

The classes live in pytest_jev.fixture.verdicts; this module gives them the import path code
written for pytest-jev uses (`from pytest_jev.verdicts import Claim, ScoreVerdict`).
"""

from __future__ import annotations

from .fixture.verdicts import FLIPPED, OPERATORS, ChoiceVerdict, Claim, Claims, ScoreVerdict, bar, preview

__all__ = ["FLIPPED", "OPERATORS", "ChoiceVerdict", "Claim", "Claims", "ScoreVerdict", "bar", "preview"]
