"""A pack's gates.yaml against its evidence: derive it (`jev-packs derive-gates`), and check that
a committed one is no looser than its evidence gives (a regression is explained, not absorbed)."""

from __future__ import annotations

import difflib
from pathlib import Path

from ..errors import JevError, RecordingError
from ..fileio import exists, read_text
from ..formats.backend_json import folder_info
from ..formats.run_json import ResultsFile
from ..packs.model import Pack
from ..paths import shown
from .derive import Derivation, baseline, derivation, looser, merged, render, source_of
from .results_files import ResultsError, read, results_file


class GatesError(JevError):
    """No evidence to derive gates from."""


def evidence_folder(pack: Pack, results_dir: Path, backend: str | None) -> Path:
    """The backend folder whose results set the gates: named, else the pinned model's."""
    name = backend or pack.tested
    if name is None:
        raise GatesError(f"pack {pack.id} pins no model (`tested: null`): name the backend whose evidence sets "
                         "its gates", file=pack.pack_file, fix="pass --backend <results folder>, e.g. --backend "
                         "sparrow-0.2.0-nano-general-v1.1")
    folder = results_dir / name
    if not folder.is_dir():
        matches = sorted(p for p in results_dir.glob(f"{name}*") if p.is_dir()) if results_dir.is_dir() else []
        if len(matches) != 1:
            raise GatesError(f"no results folder {folder}" + (f" (candidates: {', '.join(m.name for m in matches)})"
                                                               if matches else ""),
                             fix="name a folder under results/ that holds this pack's <pack>.json")
        folder = matches[0]
    return folder


def evidence(pack: Pack, folder: Path) -> list[ResultsFile]:
    """The results files of a pack in a backend folder: one, or one per split."""
    docs = []
    for split in pack.splits:
        path = results_file(folder, pack.id, split)
        if not exists(path):
            raise GatesError("no results file to derive gates from", file=path,
                             fix=f"write it: pytest {pack.path} --jev-replay --jev-backend={folder.name} "
                                 "--jev-write-results")
        docs.append(read(path))
    return docs


def in_process(folder: Path) -> bool:
    """Whether the backend of a results folder runs inside the test process (backend.json's
    `endpoint: in-process`): its latency is the machine's."""
    try:
        info = folder_info(folder)
    except RecordingError as exc:
        raise GatesError(exc.what, file=exc.file, fix=exc.fix) from None
    return info is not None and info.endpoint == "in-process"


def derivation_of(pack: Pack, folder: Path) -> Derivation:
    """The gates a pack's evidence in `folder` gives, and those left out with the reason."""
    return derivation(baseline(evidence(pack, folder)), in_process=in_process(folder))


def derived_text(pack: Pack, folder: Path, root: Path) -> tuple[str, str, dict[str, str]]:
    """(the gates.yaml derivation gives, the committed text or "", the gates left out: gate -> why)."""
    found = derivation_of(pack, folder)
    committed_text = read_text(pack.gates_file, GatesError) if exists(pack.gates_file) else ""
    source = shown(folder, root) + "/"
    return render(merged(pack.gates.values, found.gates), source, found.left_out), committed_text, found.left_out


def diff(old: str, new: str, name: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        f"{name} (committed)", f"{name} (derived)"))


def looser_problems(pack: Pack, root: Path) -> list[str]:
    """One line per gate the committed gates.yaml sets looser than the evidence it names."""
    if not exists(pack.gates_file):
        return []
    source = source_of(read_text(pack.gates_file, GatesError))
    if source is None:
        return []  # hand-written gates: nothing to compare with
    folder = root / source
    try:
        found = derivation_of(pack, folder)
    except (GatesError, ResultsError) as exc:
        return [exc.one_line()]
    fix = (f"re-derive with `jev-packs derive-gates {shown(pack.path, root)} --backend {folder.name} --write` "
           "and explain the regression")
    return [f"{shown(pack.gates_file, root)}: {line} (evidence {source}); {fix}"
            for line in looser(pack.gates.values, found.gates)]

