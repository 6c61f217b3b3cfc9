"""Where a pack's recording is looked for, given --jev-recording and the parsed --jev-backend:
the results folder it names, the folders whose backend.json names its kind (and model), and the
pack's own predictions.jsonl (jevassert's place for the pinned model's recording). With neither
flag, after the pack's own file: the one backend folder that holds the pack's recording (several
are an error that lists them and says how to pick one)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from .backends.catalog import Catalog
from .backends.kinds import BackendSpec
from .errors import OptionError, RecordingNotFound
from .fileio import exists, is_regular
from .formats.backend_json import folder_identity
from .paths import pack_recording, predictions_in, recording_file, safe_name, shown


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


def recorded_folders(results_dir: Path, pack_id: str) -> list[Path]:
    """Backend folders under `results_dir` that hold a recording of the pack, by name."""
    if not results_dir.is_dir():
        return []
    return sorted(folder for folder in results_dir.iterdir()
                  if folder.is_dir() and is_regular(predictions_in(folder, pack_id)))


def find_recording(pack_dir: Path, pack_id: str, *, explicit: str | None, backend: BackendSpec | None,
                   results_dir: Path, tested: str | None = None, root: Path | None = None) -> Path:
    """The recording a run grades. With neither --jev-recording nor --jev-backend (nor the ini's
    jev_backend), after the pack's own predictions.jsonl: the one backend folder of `results_dir`
    holding the pack's recording; when several do, RecordingNotFound lists them and how to choose
    (paths in messages are shown from `root`)."""
    tried = []
    for path in candidate_recordings(pack_dir, pack_id, explicit=explicit, backend=backend,
                                     results_dir=results_dir, tested=tested):
        if exists(path):  # a folder or FIFO in its place is reported by the reader, not skipped
            return path
        tried.append(path)
    if not explicit and not backend:
        folders = recorded_folders(results_dir, pack_id)
        if len(folders) == 1:
            return predictions_in(folders[0], pack_id)
        if folders:
            names = ", ".join(shown(folder, root) + "/" for folder in folders) if root else ", ".join(map(str, folders))
            first = folders[0].name
            raise RecordingNotFound(
                f"pack '{pack_id}' has recordings in {len(folders)} backend folders ({names}) and no --jev-backend or "
                "jev_backend names one", fix=f"pass --jev-backend={first} (or set jev_backend = {first} in the ini "
                                             "file) to grade that one")
    missing = f"{' and '.join(map(str, tried))} {'does' if len(tried) == 1 else 'do'} not exist"
    if explicit:
        where = missing
        how = f"pytest {pack_dir} --jev-record --jev-backend=<name>"
    elif backend:
        where = f"{missing}, and no folder of {results_dir} has a backend.json naming backend {backend.text!r}"
        how = f"pytest {pack_dir} --jev-record --jev-backend={backend.text}"
    else:
        where = f"{missing}, and no folder of {results_dir} holds one"
        how = f"pytest {pack_dir} --jev-record --jev-backend=<name>"
    raise RecordingNotFound(
        f"no recording for pack '{pack_id}': {where}",
        fix=f"record one with `{how}`, or point at one with --jev-recording PATH / --jev-backend NAME")


PINNED_NAME = re.compile(r"jev-\d", re.IGNORECASE)  # a Jev model version, as a pack's `tested` names one


def parse_target(text: str, catalog: Catalog, here: Path, flag: str = "--jev-baseline",
                 results_dir: Path | None = None) -> tuple[BackendSpec | None, Path | None]:
    """A recording named as --jev-baseline (or `jev-packs flips`) names it: a path when it names an
    existing file or folder (from `here`) or looks like one (a `/`, or a .jsonl/.json name), else a
    backend or results folder name, parsed by the catalog as --jev-backend is (without --jev-model,
    which names the current backend's model). With `results_dir`: a name that is no backend kind
    and no folder there is refused at once, with a guess (refuse_unknown)."""
    text = text.strip()
    if not text:
        raise OptionError(f"{flag} is empty", fix=f"pass {flag} NAME|PATH")
    path = Path(text)
    if (here / path).exists() or "/" in text or "\\" in text or text.endswith((".jsonl", ".json")):
        return None, here / path
    spec = catalog.parse(text)
    if results_dir is not None:
        refuse_unknown(spec, catalog, results_dir, flag)
    return spec, None


def refuse_unknown(spec: BackendSpec, catalog: Catalog, results_dir: Path, flag: str = "--jev-backend") -> None:
    """Refuse a backend name that is no installed kind and no folder of `results_dir` (a typo,
    refused before anything runs), guessing the closest kind or folder. --jev-backend's name may
    name a results folder (replay only); a --jev-baseline's (or `jev-packs flips` A/B's) may also
    be a path (parse_target). A Jev model version (`jev-1.13.0`) is never refused: it names the
    recording a jevassert pack pins (`tested`) in its own folder (candidate_recordings)."""
    text = spec.text
    if spec.known is not None or (results_dir / text).is_dir() or PINNED_NAME.match(text):
        return
    import difflib

    folders = sorted(p.name for p in results_dir.iterdir() if p.is_dir()) if results_dir.is_dir() else []
    close = difflib.get_close_matches(text, [*catalog.kinds, *folders], n=1)
    guess = f"did you mean '{close[0]}'? " if close else ""
    folder = f"{results_dir.name}/{text}"
    if flag == "--jev-backend":
        what, paths = f"unknown backend '{text}': no backend kind of that name, and no folder {folder}", ""
    else:
        label = "unknown baseline" if flag == "--jev-baseline" else f"{flag}: unknown recording"
        what = f"{label} '{text}': no backend kind of that name, no folder {folder}, and no file or folder {text}"
        paths = ", or a recording file or folder"
    raise OptionError(what, fix=f"{guess}use one of: {', '.join(catalog.forms())}, or a folder of "
                                f"{results_dir.name}/{paths}")
