"""The scoreboard's inputs: which files of a registry (packs/ and results/) a pack's block is made
from, and how they are read into the typed models of pytest_jev.formats (a file that cannot be
read is left out of the page with one problem line, never fails it).

Inputs of a pack's block (`pack_inputs`): its pack.yaml and case files, the results files and
held-out protocol reports of every backend folder for it, those folders' backend.json, and the
merged comparisons. `pack_digest` hashes exactly those bytes; the page carries it per block, so a
stale block is found without rendering the page.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from pathlib import Path
from typing import Any

from ..errors import JevError
from ..fileio import is_regular, loads, read_bytes
from ..formats.backend_json import BackendInfo
from ..formats.protocol_json import ProtocolReport
from ..formats.run_json import ResultsFile
from ..packs import load_pack
from ..packs.model import Pack
from ..paths import backend_json, column_folders

NOT_RESULTS = ("thresholds",)  # <pack>.<name>.json files that are not results of a split
SHOWN_REPORTS = ("heldout",)  # protocol reports the page shows: <pack>.report.<split>.json


class BoardError(JevError):
    """A scoreboard input that cannot be used."""


# --- inputs ------------------------------------------------------------------------------------

# Not paths.shown(): digest and links need `/` on every OS and no symlink resolving (shown() resolves, uses os.sep)
def rel(path: Path, root: Path) -> str:
    """A path from the registry's root, with `/`."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def backend_folders(root: Path) -> list[Path]:
    """Folders of the registry's results/ that hold a backend.json, by name."""
    return column_folders(root / "results")


def split_of(name: str, pack_id: str) -> tuple[str, str] | None:
    """('results', split) or ('report', split) for a file of `pack_id`'s in a backend folder."""
    if name == f"{pack_id}.json":
        return "results", ""
    if not (name.startswith(f"{pack_id}.") and name.endswith(".json")):
        return None
    rest = name[len(pack_id) + 1:-5]
    if rest.startswith("report.") and rest[7:] in SHOWN_REPORTS:
        return "report", rest[7:]
    if rest and "." not in rest and rest not in NOT_RESULTS and rest != "report":
        return "results", rest
    return None


def pack_ids(root: Path) -> list[str]:
    """Every pack with a folder in packs/ or a results file in a backend folder, sorted."""
    ids: set[str] = set()
    packs = root / "packs"
    if packs.is_dir():
        ids.update(p.name for p in packs.iterdir() if is_regular(p / "pack.yaml"))
    for folder in backend_folders(root):
        for file in folder.glob("*.json"):
            head = file.name.split(".", 1)[0]
            if head != "backend" and split_of(file.name, head):
                ids.add(head)
    return sorted(ids)


def pack_inputs(root: Path, pack_id: str) -> list[Path]:
    """The files a pack's block is made from, in a fixed order."""
    out: list[Path] = []
    folder = root / "packs" / pack_id
    if is_regular(folder / "pack.yaml"):
        out.append(folder / "pack.yaml")
        out.extend(sorted(p for p in folder.glob("*.jsonl") if is_regular(p) and not p.name.startswith("predictions")))
    for backend in backend_folders(root):
        own = sorted(p for p in backend.glob(f"{pack_id}*.json") if is_regular(p) and split_of(p.name, pack_id))
        if own:
            out.extend([backend_json(backend), *own])
    comparisons = root / "results" / "comparisons"
    if comparisons.is_dir():
        out.extend(sorted(p for p in comparisons.glob(f"{pack_id}.*.json") if is_regular(p)))
    return out


def pack_digest(root: Path, pack_id: str) -> str:
    """sha256 over the names and bytes of a pack's inputs: `sha256:<hex>`."""
    return digest_of(root, pack_inputs(root, pack_id))


def digest_of(root: Path, inputs: list[Path]) -> str:
    total = hashlib.sha256()
    for path in inputs:
        data = read_bytes(path, BoardError)
        total.update(f"{rel(path, root)}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    return f"sha256:{total.hexdigest()}"


def _read_object(path: Path, problems: list[str], root: Path) -> dict[str, Any] | None:
    try:
        doc = loads(read_bytes(path, BoardError))
    except (BoardError, ValueError, UnicodeDecodeError) as exc:
        problems.append(f"{rel(path, root)}: cannot be read ({exc}); it is left out of the page")
        return None
    if not isinstance(doc, dict):
        problems.append(f"{rel(path, root)}: is not a JSON object; it is left out of the page")
        return None
    return doc


def read_backend(folder: Path, problems: list[str], root: Path) -> BackendInfo:
    """A backend folder's backend.json (an empty one when it cannot be read: a problem line says so)."""
    doc = _read_object(backend_json(folder), problems, root)
    return BackendInfo.from_json(doc) if doc is not None else BackendInfo()


def read_results(path: Path, problems: list[str], root: Path) -> ResultsFile | None:
    """A results file; None (and a problem line) when it cannot be read or holds no numbers."""
    doc = _read_object(path, problems, root)
    if doc is None:
        return None
    results = ResultsFile.from_json(doc)
    if results.n_items is None and not results.has("accuracy"):
        problems.append(f"{rel(path, root)}: not a results file (no n_items, no accuracy); it is left out of the page")
        return None
    return results


def read_report(path: Path, problems: list[str], root: Path) -> ProtocolReport | None:
    """A protocol report; None (and a problem line) when it cannot be read."""
    doc = _read_object(path, problems, root)
    return ProtocolReport.from_json(doc) if doc is not None else None


_SAFE_LINK = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/-]*$")


def link(path: str | None) -> str | None:
    """A link from docs/index.html to a file of the repository, for a safe relative path only."""
    if path is None or not _SAFE_LINK.match(path) or ".." in path.split("/"):
        return None
    return f"../{path}"


# --- the pack -------------------------------------------------------------------------------------

def load_pack_or_problem(root: Path, pack_id: str) -> tuple[Pack | None, str | None]:
    """The pack of packs/<pack_id>, or why the page cannot check numbers against it."""
    folder = root / "packs" / pack_id
    if not is_regular(folder / "pack.yaml"):
        return None, f"no pack folder packs/{pack_id}: the numbers below cannot be checked against a pack version"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_pack(folder), None
    except JevError as exc:
        return None, f"the pack does not load ({exc.one_line()}): pack version and cases unknown"
