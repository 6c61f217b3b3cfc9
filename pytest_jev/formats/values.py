"""How the format models read values and keep key order.

Readers are tolerant by design: the scoreboard and the registry also read files that
jevassert or an older jev-packs wrote, so a value of the wrong type reads as absent (None)
rather than failing the page; the JSON Schemas are what is strict, and the test of the
committed files holds them to it. A number is read as the file holds it (an int stays an
int, a float a float), so writing a model back gives the same bytes.

Each top-level model remembers the keys it was read with, in file order, and the keys it
does not name (`extra`): written back, a file read from disk is the same bytes, whoever
wrote it; a model built in memory writes its format's own key order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..numbers import finite


def number(value: Any) -> float | None:
    """A finite JSON number (never a boolean), as read; None otherwise."""
    return value if finite(value) is not None else None


def integer(value: Any) -> int | None:
    """A whole JSON number (an integral float such as 5.0 reads as 5); None otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number = finite(value)
    return int(number) if number is not None and number == int(number) else None


def text(value: Any) -> str | None:
    """A non-empty string; None otherwise."""
    return value if isinstance(value, str) and value else None


def string(value: Any) -> str | None:
    """Any string, the empty one included; None otherwise."""
    return value if isinstance(value, str) else None


def flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def pair(value: Any) -> tuple[float, float] | None:
    """[lo, hi] of two finite numbers; None otherwise."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        lo, hi = number(value[0]), number(value[1])
        if lo is not None and hi is not None:
            return lo, hi
    return None


def listed(value: tuple[float, float] | None) -> list[float] | None:
    return list(value) if value is not None else None


def mapping(value: Any) -> Mapping[str, Any]:
    """A JSON object; {} otherwise."""
    return value if isinstance(value, Mapping) else {}


def strings(value: Any) -> tuple[str, ...]:
    """The strings of a JSON array (anything else in it is left out); () when not an array."""
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, (list, tuple)) else ()


def extra_keys(doc: Mapping[str, Any], known: Iterable[str]) -> dict[str, Any]:
    """The keys of `doc` a model does not name, in file order, values as read (`known` given as a
    frozenset is used as is: a model read once per line passes one)."""
    named = known if isinstance(known, frozenset) else set(known)
    return {key: value for key, value in doc.items() if key not in named}


def emit(known: Mapping[str, Any], order: tuple[str, ...], extra: Mapping[str, Any]) -> dict[str, Any]:
    """A model's JSON object: in the order it was read (`order`), else its format's own order
    (`known`'s), then the keys it does not name."""
    if not order:
        return {**known, **extra}
    return {key: known[key] if key in known else extra[key] for key in order if key in known or key in extra}
