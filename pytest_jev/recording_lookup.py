"""Where a pack's recording is looked for, given --jev-recording and the parsed --jev-backend:
the results folder it names, the folders whose backend.json names its kind (and model), and the
pack's own predictions.jsonl (jevassert's place for the pinned model's recording)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from .backends.catalog import Catalog
from .backends.kinds import BackendSpec
from .errors import OptionError, RecordingNotFound
from .fileio import exists, is_regular
from .formats.backend_json import folder_identity
from .paths import pack_recording, predictions_in, recording_file, safe_name


def backend_folders(results_dir: Path, spec: BackendSpec) -> list[Path]:
    """Folders under `results_dir` holding recordings of the backend `spec` names."""
    if not results_dir.is_dir():
        return []
    return [folder for folder in sorted(p for p in results_dir.iterdir() if p.is_dir()) if recorded_by(folder, spec)]


def recorded_by(folder: Path, spec: BackendSpec) -> bool:
    """Whether a backend folder holds recordings of the backend `spec` names.

    A folder is named by the model served, so a kind (`jev`, `sparrow`) or a model spec
    (`openai:qwen2.5:7b`, `sonnet`) is matched against what the folder's backend.json
    says: its backend kind and, for model specs, its model. Never by a prefix of the
    folder name (`openai:mi` must not find `minilm-...`)."""
    folder_kind, folder_model = folder_identity(folder)
    return folder_kind == spec.kind and (spec.model is None or same_model(folder_model, spec.model))


def same_model(recorded: str | None, wanted: str) -> bool:
    """A recorded model is the wanted one, or a dated snapshot of it (claude-sonnet-5-20261001)."""
    if recorded is None:
        return False
    return recorded == wanted or re.fullmatch(re.escape(wanted) + r"-\d{8}", recorded) is not None


def candidate_recordings(pack_dir: Path, pack_id: str, *, explicit: str | None, backend: BackendSpec | None,
                         results_dir: Path, tested: str | None = None) -> Iterator[Path]:
    """Where a pack's recording is looked for, in order (the first regular file wins):
    --jev-recording; results/<backend>/ when --jev-backend names a folder; the folders of
    that backend kind or model, newest recording first; else the pack's predictions.jsonl,
    which is also where jevassert keeps the pinned (`tested`) Jev model's recording, so a
    backend naming that model (`jev`, `jev-1.13.0`, or its results folder) finds it there.
    Lazy: the backend folders are only read when the folder --jev-backend names has none."""
    if explicit:
        path = Path(explicit)
        yield predictions_in(path, pack_id) if path.is_dir() else path
    elif backend:
        exact = recording_file(results_dir, backend.text, pack_id)
        yield exact
        family = [predictions_in(folder, pack_id) for folder in backend_folders(results_dir, backend)]
        family = [p for p in family if is_regular(p) and p != exact]
        family.sort(key=lambda p: (-p.stat().st_mtime, str(p)))
        yield from family
        if tested and _names_pinned(backend, tested, results_dir):
            yield pack_recording(pack_dir)
    else:
        yield pack_recording(pack_dir)


def _names_pinned(backend: BackendSpec, tested: str, results_dir: Path) -> bool:
    """Whether --jev-backend names the pack's pinned Jev model: the model, the jev kind, or a results
    folder whose backend.json serves that model."""
    if backend.text == tested or backend.kind == "jev":
        return True
    folder = results_dir / safe_name(backend.text)
    return folder.is_dir() and folder_identity(folder)[1] == tested


def find_recording(pack_dir: Path, pack_id: str, *, explicit: str | None, backend: BackendSpec | None,
                   results_dir: Path, tested: str | None = None) -> Path:
    tried = []
    for path in candidate_recordings(pack_dir, pack_id, explicit=explicit, backend=backend,
                                     results_dir=results_dir, tested=tested):
        if exists(path):  # a folder or FIFO in its place is reported by the reader, not skipped
            return path
        tried.append(path)
    if backend:
        where = f"{tried[0]}, nor any folder of {results_dir} whose backend.json names backend {backend.text!r}"
        how = f"pytest {pack_dir} --jev-record --jev-backend={backend.text}"
    else:
        where = ", ".join(str(p) for p in tried)
        how = f"pytest {pack_dir} --jev-record --jev-backend=<name>"
    raise RecordingNotFound(
        f"no recording for pack '{pack_id}' (tried {where})",
        fix=f"record one with `{how}`, or point at one with --jev-recording PATH / --jev-backend NAME")


def parse_target(text: str, catalog: Catalog, here: Path, flag: str = "--jev-baseline"
                 ) -> tuple[BackendSpec | None, Path | None]:
    """A recording named as --jev-baseline (or `jev-packs flips`) names it: a path when it names an
    existing file or folder (from `here`) or looks like one (a `/`, or a .jsonl/.json name), else a
    backend or results folder name, parsed by the catalog as --jev-backend is (without --jev-model,
    which names the current backend's model)."""
    text = text.strip()
    if not text:
        raise OptionError(f"{flag} is empty", fix=f"pass {flag} NAME|PATH")
    path = Path(text)
    if (here / path).exists() or "/" in text or "\\" in text or text.endswith((".jsonl", ".json")):
        return None, here / path
    return catalog.parse(text), None
