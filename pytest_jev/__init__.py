"""pytest_jev: typed-decision question packs as pytest tests (distribution: jev-packs).

The public API, usable without pytest::

    from pytest_jev import load_pack
    pack = load_pack("packs/support-triage")   # immutable Pack; PackError on bad input

Importing this package is cheap: numpy, jsonschema, yaml and httpx load when needed.

PYTEST_DONT_REWRITE: the plugin asserts nothing, so pytest need not rewrite it (and must
not warn when a test suite has imported it before a pytester run loads it as a plugin).
"""

from .errors import JevError, OptionError, PackError, RecordingError, RecordingNotFound
from .packs.loader import load_pack
from .packs.model import Case, Gates, Pack, Question

__all__ = [
    "Case", "Gates", "JevError", "OptionError", "Pack", "PackError", "Question", "RecordingError",
    "RecordingNotFound", "load_pack", "load_recording", "evaluate",
]


def __getattr__(name: str):  # lazy: these pull numpy in
    if name == "load_recording":
        from .recording import load_recording

        return load_recording
    if name == "evaluate":
        from .evaluate import evaluate

        return evaluate
    raise AttributeError(name)
