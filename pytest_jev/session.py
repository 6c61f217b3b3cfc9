"""Glue between options, files on disk and PackResults (no pytest hooks here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import JevError, RecordingError
from .options import Options


def load_inputs(folder: Path, options: Options
                ) -> tuple[Any, Any, tuple[float | None, float | None] | None, JevError | None, JevError | None]:
    """(pack, recording, pricing, pack problem, recording problem): problems become failing check items."""
    from .packs import load_pack
    from .recording import find_recording, load_recording

    try:
        pack = load_pack(folder)
    except JevError as exc:
        return None, None, None, exc, None
    try:
        path = find_recording(folder, pack.id, explicit=options.recording, backend=options.backend,
                              results_dir=options.results_dir)
        return pack, load_recording(path), backend_pricing(options, path), None, None
    except JevError as exc:
        return pack, None, None, None, exc


def backend_pricing(options: Options, recording_path: Path) -> tuple[float | None, float | None]:
    """Prices per million tokens: the flags, else backend.json beside the recording, else Jev's list price.

    A price backend.json gives as null is unknown (a model without a list price): the
    cost is then unknown too, never priced at Jev's rate.
    """
    from .evaluate import JEV_PRICE_INPUT

    price_in: float | None = JEV_PRICE_INPUT
    price_out: float | None = 0.0
    backend_json = recording_path.parent / "backend.json"
    if backend_json.is_file():
        try:
            info = json.loads(backend_json.read_text(encoding="utf-8"))
            pricing = info.get("pricing") or info.get("pricing_usd_per_mtok") or {}
            price_in = _price(pricing.get("input_usd_per_mtok", pricing.get("input", price_in)))
            price_out = _price(pricing.get("output_usd_per_mtok", pricing.get("output", price_out)))
        except (ValueError, TypeError, AttributeError) as exc:
            raise RecordingError(f"unreadable pricing ({exc})", file=backend_json,
                                 fix="give pricing as {\"input_usd_per_mtok\": x, \"output_usd_per_mtok\": y}")
    if options.price_input is not None:
        price_in = options.price_input
    if options.price_output is not None:
        price_out = options.price_output
    return price_in, price_out


def _price(value: Any) -> float | None:
    if value is None:
        return None
    price = float(value)
    if not price >= 0:
        raise ValueError(f"price {value!r} is not a number >= 0")
    return price


def prepare_pack(pack: Any, recording: Any, options: Options, pricing: tuple[float | None, float | None]
                 ) -> Any:
    """Grade a pack's recording under the run's options; the result no longer needs the recording."""
    from .evaluate import Settings, prepare

    settings = Settings(bootstrap=options.bootstrap, seed=options.seed, price_input=pricing[0],
                        price_output=pricing[1], target_precision=options.target_precision,
                        no_gates=options.no_gates)
    backend = options.backend
    models = recording.models()
    if backend is None and options.recording is None and len(models) == 1:
        backend = models[0]
    return prepare(pack, recording, settings, backend=backend, shown_path=shown(recording.path, options.rootdir))


def shown(path: Path, rootdir: Path) -> str:
    """A path as the user reads it: relative to the rootdir when it lies inside."""
    try:
        return str(path.resolve().relative_to(rootdir.resolve()))
    except ValueError:
        return str(path)
