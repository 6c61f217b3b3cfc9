"""pytest_jev: typed-decision question packs as pytest tests (distribution: jev-packs).

The public API, usable without pytest::

    from pytest_jev import load_pack, load_recording, grade_pack
    pack = load_pack("packs/support-triage")   # immutable Pack; PackError on bad input
    run = grade_pack(pack, load_recording("results/x/support-triage.predictions.jsonl"))
    run.accuracy, run.accuracy_ci, run.to_json()   # a frozen RunResult

Importing this package is cheap: numpy, jsonschema, yaml and httpx load when needed.

pytest-jev 0.1.0's public names import from here too, so code written for it (`def test_x(jev:
Jev)`, `from pytest_jev import Claim`) runs unchanged: `Jev`, `Claim`, `Claims`, `ChoiceVerdict`,
`ScoreVerdict` (the `jev` fixture's classes, loaded on first use) and `__version__` (this
distribution's, jev-packs).

PYTEST_DONT_REWRITE: the plugin asserts nothing, so pytest need not rewrite it (and must
not warn when a test suite has imported it before a pytester run loads it as a plugin).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import JevError, OptionError, PackError, RecordingError, RecordingNotFound
from .packs.loader import load_pack
from .packs.model import Case, Gates, Pack, Question
from .recording_file import Recording, load_recording

if TYPE_CHECKING:
    from .evaluate import Settings
    from .fixture.judge import Jev
    from .run_result import RunResult
    from .verdicts import ChoiceVerdict, Claim, Claims, ScoreVerdict

__all__ = [
    "Case", "ChoiceVerdict", "Claim", "Claims", "Gates", "Jev", "JevError", "OptionError", "Pack", "PackError",
    "Question", "Recording", "RecordingError", "RecordingNotFound", "ScoreVerdict", "__version__", "grade_pack",
    "load_pack", "load_recording",
]
# pytest-jev's names -> the module that defines them (imported on first use)
_LAZY_NAMES = {"Jev": ".fixture.judge", "Claim": ".verdicts", "Claims": ".verdicts", "ChoiceVerdict": ".verdicts",
               "ScoreVerdict": ".verdicts"}


def __getattr__(name: str) -> Any:
    """pytest-jev's public names, loaded on first use (`import pytest_jev` stays cheap)."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("jev-packs")
        except PackageNotFoundError:  # a checkout on sys.path that was never installed
            found = "0"
        globals()["__version__"] = found
        return found
    module = _LAZY_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_jev' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def grade_pack(pack: Pack, recording: Recording, settings: Settings | None = None) -> RunResult:
    """Grade a pack's recording: every metric and gate, as a frozen RunResult (numpy loads here:
    grading imports it, and importing this package must stay cheap)."""
    from .evaluate import evaluate

    return evaluate(pack, recording, settings).run
