"""Where files live: the one place that knows the layout of results/ and of a pack folder.

    results/<backend-id>/backend.json                   who answered: provider, model, pricing, ...
    results/<backend-id>/<pack>.predictions.jsonl       the recording replay grades (round 1)
    results/<backend-id>/<pack>.predictions-r<k>.jsonl  round k of --jev-repeat (jevassert's naming)
    packs/<pack>/predictions.jsonl                      the spec-v0 place of a pack's own recording

A backend folder is named by the model actually served (jev-1.13.0, sparrow-0.2.0-...),
through safe_name(), so a served model name can never become a path. Which recording a run
grades, given --jev-backend, is recording_lookup.py's business; what a backend.json says,
formats/backend_json.py's.
"""

from __future__ import annotations

import re
from pathlib import Path

from .fileio import is_regular

PREDICTIONS_SUFFIX = ".predictions.jsonl"
BACKEND_JSON = "backend.json"
PACK_RECORDING = "predictions.jsonl"
SCOREBOARD_PAGE = Path("docs") / "index.html"  # under the registry's root
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_NAME = 120


def safe_name(name: str, fallback: str = "backend") -> str:
    """A folder name made from a model name: letters, digits, `.`, `_` and `-` only, no
    leading dot or dash, never `.` or `..`, at most 120 characters. `jev-/../../x` -> `jev-x`."""
    parts = [part for part in _UNSAFE.sub("-", name).split("-") if part.strip(".")]  # no `..` survives
    cleaned = "-".join(parts).strip("-.")[:MAX_NAME].strip("-.")
    return cleaned or fallback


def recording_file(results_dir: Path, backend_id: str, pack_id: str, round_number: int = 1) -> Path:
    """results/<backend-id>/<pack>.predictions.jsonl (round k: .predictions-r<k>.jsonl)."""
    return round_path(results_dir / safe_name(backend_id) / f"{pack_id}{PREDICTIONS_SUFFIX}", round_number)


def round_path(first: Path, round_number: int) -> Path:
    """The recording of round `round_number` beside round 1 (which is `first` itself)."""
    if round_number == 1:
        return first
    return first.with_name(f"{first.stem}-r{round_number}{first.suffix}")


def backend_json(folder: Path) -> Path:
    return folder / BACKEND_JSON


def pack_recording(pack_dir: Path) -> Path:
    return pack_dir / PACK_RECORDING


def predictions_in(folder: Path, pack_id: str) -> Path:
    """A pack's recording in a backend folder: <folder>/<pack>.predictions.jsonl."""
    return folder / f"{pack_id}{PREDICTIONS_SUFFIX}"


def column_folders(results_dir: Path) -> list[Path]:
    """The backend folders of a results folder (those holding a backend.json), by name."""
    if not results_dir.is_dir():
        return []
    return sorted((p for p in results_dir.iterdir() if p.is_dir() and is_regular(backend_json(p))),
                  key=lambda p: p.name)


def inside(path: Path, folder: Path) -> bool:
    """Whether `path` lies inside `folder` once both are resolved."""
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def shown(path: Path, rootdir: Path) -> str:
    """A path as the user reads it: relative to the rootdir when it lies inside."""
    try:
        return str(path.resolve().relative_to(rootdir.resolve()))
    except ValueError:
        return str(path)
