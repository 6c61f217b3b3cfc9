"""The evaluation protocol: tune/held-out thresholds with a leakage guard, selective metrics with
Wilson intervals, reports and their merge (frozen splits are packs/cases.py's, rubric
fingerprints rubric.py's)."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """PROTOCOL_VERSION, kept here for code that imported it from this package: it lives with the
    identity every protocol file carries (formats/identity_json.py), loaded when first asked for (every
    session imports this package, and the file models wait for the first pack)."""
    if name == "PROTOCOL_VERSION":
        from ..formats.identity_json import PROTOCOL_VERSION

        return PROTOCOL_VERSION
    raise AttributeError(name)
