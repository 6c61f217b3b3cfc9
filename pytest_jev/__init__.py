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

from typing import TYPE_CHECKING

from .errors import JevError, OptionError, PackError, RecordingError, RecordingNotFound
from .packs.loader import load_pack
from .packs.model import Case, Gates, Pack, Question
from .recording_file import Recording, load_recording

if TYPE_CHECKING:
    from .evaluate import Settings
    from .run_result import RunResult

__all__ = [
    "Case", "Gates", "JevError", "OptionError", "Pack", "PackError", "Question", "Recording", "RecordingError",
    "RecordingNotFound", "grade_pack", "load_pack", "load_recording",
]


def grade_pack(pack: Pack, recording: Recording, settings: Settings | None = None) -> RunResult:
    """Grade a pack's recording: every metric and gate, as a frozen RunResult (numpy loads here:
    grading imports it, and importing this package must stay cheap)."""
    from .evaluate import evaluate

    return evaluate(pack, recording, settings).run
