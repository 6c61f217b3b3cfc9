"""pytest_jev: typed-decision question packs as pytest tests (distribution: jev-packs).

The public API, usable without pytest::

    from pytest_jev import load_pack, load_recording, grade_pack
    pack = load_pack("packs/support-triage")   # immutable Pack; PackError on bad input
    run = grade_pack(pack, load_recording("results/x/support-triage.predictions.jsonl"))
    run.accuracy, run.accuracy_ci, run.to_json()   # a frozen RunResult

Importing this package is cheap: numpy, jsonschema, yaml and httpx load when needed.

PYTEST_DONT_REWRITE: the plugin asserts nothing, so pytest need not rewrite it (and must
not warn when a test suite has imported it before a pytester run loads it as a plugin).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import JevError, OptionError, PackError, RecordingError, RecordingNotFound
from .packs.loader import load_pack
from .packs.model import Case, Gates, Pack, Question

if TYPE_CHECKING:
    from .evaluate import Settings
    from .recording_file import Recording
    from .run_result import RunResult

__all__ = [
    "Case", "Gates", "JevError", "OptionError", "Pack", "PackError", "Question", "RecordingError",
    "RecordingNotFound", "grade_pack", "load_pack", "load_recording",
]


def load_recording(path: Any) -> Recording:
    """Read a recording file (jevassert's predictions.jsonl or ours); RecordingError on bad input."""
    from .recording_file import load_recording as load

    return load(path)


def grade_pack(pack: Pack, recording: Recording, settings: Settings | None = None) -> RunResult:
    """Grade a pack's recording: every metric and gate, as a frozen RunResult (numpy loads here)."""
    from .evaluate import evaluate

    return evaluate(pack, recording, settings).run
