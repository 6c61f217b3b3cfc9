"""Where files live: the one place that knows the layout of results/ and of a pack folder.

    results/<backend-id>/backend.json                   who answered: provider, model, pricing, ...
    results/<backend-id>/<pack>.predictions.jsonl       the recording replay grades (round 1)
    results/<backend-id>/<pack>.predictions-r<k>.jsonl  round k of --jev-repeat (jevassert's naming)
    packs/<pack>/predictions.jsonl                      the spec-v0 place of a pack's own recording

A backend folder is named by the model actually served (jev-1.13.0, sparrow-0.2.0-...),
through safe_name(), so a served model name can never become a path. Which recording a run
grades, given --jev-backend, is recording_lookup.py's business.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import RecordingError
from .fileio import is_regular, loads, read_text
from .numbers import at_least_zero

PREDICTIONS_SUFFIX = ".predictions.jsonl"
BACKEND_JSON = "backend.json"
PACK_RECORDING = "predictions.jsonl"
SCOREBOARD_PAGE = Path("docs") / "index.html"  # under the registry's root
# backend.json written by jevassert names a provider, ours the backend kind
PROVIDER_KINDS = {"typesafe": "jev", "anthropic": "anthropic", "openai": "openai", "openrouter": "openrouter"}
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


# -- backend.json --------------------------------------------------------------------------

def backend_info(folder: Path) -> dict[str, Any] | None:
    """backend.json of a backend folder as a dict; None when it is absent.

    RecordingError when it exists but is not a readable JSON object."""
    path = backend_json(folder)
    if not is_regular(path):
        if path.exists() or path.is_symlink():
            raise RecordingError("is not a regular file", file=path, fix="replace it with the backend's JSON")
        return None
    try:
        info = loads(read_text(path, RecordingError))
    except ValueError as exc:
        raise RecordingError(f"not valid JSON ({getattr(exc, 'msg', exc)})", file=path,
                             fix="repair it, or delete it and re-record") from None
    if not isinstance(info, dict):
        raise RecordingError("must be a JSON object", file=path, fix="repair it, or delete it and re-record")
    return info


def pricing(folder: Path, default: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    """(input, output) USD per million tokens from backend.json, else `default`.

    Our `pricing: {input_usd_per_mtok, output_usd_per_mtok}` and jevassert's
    `pricing_usd_per_mtok: {input, output}` are both read. A price given as null is
    unknown (a model without a list price). Anything else that is not a finite number
    >= 0 (negative, NaN, a boolean, a string) is refused with one line."""
    info = backend_info(folder)
    if info is None:
        return default
    table = info.get("pricing", info.get("pricing_usd_per_mtok"))
    if table is None:
        return default
    fix = 'give pricing as {"input_usd_per_mtok": x, "output_usd_per_mtok": y}, prices >= 0 or null'
    if not isinstance(table, Mapping):
        raise RecordingError("unreadable pricing (not an object)", file=backend_json(folder), fix=fix)
    prices: list[float | None] = []
    for ours, theirs, fallback in (("input_usd_per_mtok", "input", default[0]),
                                   ("output_usd_per_mtok", "output", default[1])):
        key = ours if ours in table else theirs if theirs in table else None
        value = table[key] if key is not None else fallback
        if key is not None and value is not None and not at_least_zero(value):
            raise RecordingError(f"unreadable pricing ({key} = {value!r} is not a number >= 0)",
                                 file=backend_json(folder), fix=fix)
        prices.append(None if value is None else float(value))
    return prices[0], prices[1]


def folder_identity(folder: Path) -> tuple[str | None, str | None]:
    """(backend kind, model) a backend folder's backend.json names; (None, None) without one."""
    try:
        info = backend_info(folder)
    except RecordingError:
        return None, None
    if info is None:
        return None, None
    kind = info.get("backend")
    if not isinstance(kind, str):
        provider = info.get("provider")
        kind = PROVIDER_KINDS.get(provider) if isinstance(provider, str) else None
    model = info.get("model")
    return kind, model if isinstance(model, str) else None


def shown(path: Path, rootdir: Path) -> str:
    """A path as the user reads it: relative to the rootdir when it lies inside."""
    try:
        return str(path.resolve().relative_to(rootdir.resolve()))
    except ValueError:
        return str(path)
