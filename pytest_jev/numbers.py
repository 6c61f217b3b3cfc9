"""Numbers read from user files and from servers: a JSON number (never a boolean) that a float
can hold. An integer such as 10**400 makes `math.isfinite` raise OverflowError; here it is
simply not a usable number."""

from __future__ import annotations

import math
from typing import Any


def finite(value: Any) -> float | None:
    """The value as a float when it is a finite number (not a boolean); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return number if math.isfinite(number) else None


def at_least_zero(value: Any) -> bool:
    """A finite number >= 0: a price, a cost, a latency."""
    number = finite(value)
    return number is not None and number >= 0
