"""index.json: the registry's list of packs, derived from the packs and results/ alone.

One entry per pack folder: id, version, path, license, status, evidence, the backends with
results for it, the identity of each split (identity.py) and the dataset's manifest. A backend is
`current` when every results file of it carries the identity the pack has today (identity.compare:
a threshold or a case edited without a version bump makes it stale). `verified` only when
evidence.md exists for the pinned (`tested`) model and the results of that model are current;
otherwise `provisional`. The file is a pure
function of the repository, so a check compares it byte for byte with what it should be.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import JevError
from ..fileio import exists, is_regular, loads, read_text
from ..formats.index_json import IndexBackend, IndexEntry, RegistryIndex
from ..formats.run_json import ResultsFile
from ..identity import compare, dataset_of, of
from ..packs import load_pack
from ..packs.model import Pack
from ..paths import shown
from .results_files import ResultsError, read, results_file

INDEX = "index.json"
FIX = "regenerate it with `jev-packs refresh` (or `jev-packs index`)"


def _results(pack: Pack, folder: Path) -> list[ResultsFile]:
    out = []
    for split in pack.splits:
        path = results_file(folder, pack.id, split)
        if is_regular(path):
            try:
                out.append(read(path))
            except ResultsError:
                continue
    return out


def entry(pack: Pack, root: Path, results_dir: Path, found: list[tuple[Path, list[ResultsFile]]] | None = None
          ) -> IndexEntry:
    backends = []
    verified = False
    identities = {split: of(pack, split) for split in pack.splits}
    for folder, docs in found if found is not None else _found(pack, results_dir):
        if not docs:
            continue
        versions = sorted({str(d.numbers_version) for d in docs})
        models = sorted({m for d in docs for m in d.recorded_models})
        modes = sorted({d.mode or "live" for d in docs})
        # current: every results file's numbers are those of the pack as it is (its identity, not its version)
        current = all(d.identity is not None and compare(identities[d.split or ""], d.identity).same
                      for d in docs if (d.split or "") in identities)
        backends.append(IndexBackend(folder.name, tuple(models), tuple(versions),
                                     modes[-1] if len(modes) == 1 else "mixed", current))
        if pack.tested is not None and pack.tested in models and current:
            verified = True
    evidence = pack.path / "evidence.md"
    verified = verified and is_regular(evidence)
    return IndexEntry(
        id=pack.id, version=pack.version, path=shown(pack.path, root), license=pack.license,
        status="verified" if verified else "provisional",
        evidence=shown(evidence, root) if is_regular(evidence) else None, tested=pack.tested, spec=pack.spec,
        splits=tuple(pack.splits) if pack.declares_splits else (),
        locales=tuple(sorted({c.locale for c in pack.cases if c.locale})), cases=len(pack.cases),
        questions={qid: q.type for qid, q in pack.questions.items()}, backends=tuple(backends),
        identities={split: identity.sha256 or "" for split, identity in identities.items()}, dataset=dataset_of(pack))


def build(root: Path, packs_dir: Path | None = None, results_dir: Path | None = None) -> RegistryIndex:
    packs_dir = packs_dir or root / "packs"
    results_dir = results_dir or root / "results"
    packs = [load_pack(p.parent) for p in sorted(packs_dir.glob("*/pack.yaml"))]
    found = [_found(pack, results_dir) for pack in packs]
    dates = [d.recorded_at for rows in found for _, docs in rows for d in docs if d.recorded_at]
    return RegistryIndex(spec=0, kind=RegistryIndex.KIND, updated=max(dates, default=None),
                         packs=tuple(entry(pack, root, results_dir, rows) for pack, rows in zip(packs, found)))


def _found(pack: Pack, results_dir: Path) -> list[tuple[Path, list[ResultsFile]]]:
    return [(folder, _results(pack, folder)) for folder in _folders(results_dir)]


def write(root: Path) -> Path:
    return build(root).write(root / INDEX)


def stale_problem(root: Path) -> str | None:
    path = root / INDEX
    if not exists(path):
        return f"{INDEX}: missing; {FIX}"
    if read_text(path, JevError) != build(root).dumps():
        return f"{INDEX}: does not match the packs and results/; {FIX}"
    return None


def entry_problem(pack: Pack, root: Path) -> str | None:
    """Whether index.json's entry for this pack is the one the pack and results/ give."""
    path = root / INDEX
    try:
        doc = loads(read_text(path, JevError))
    except (JevError, ValueError) as exc:
        return f"{INDEX}: unreadable ({exc}); {FIX}"
    found = RegistryIndex.from_json(doc).entry(pack.id) if isinstance(doc, dict) else None
    if found is None:
        return f"{INDEX}: no entry for pack {pack.id}; {FIX}"
    want, have = entry(pack, root, root / "results").to_json(), found.to_json()
    wrong = [key for key in want if have.get(key) != want[key]]
    if wrong:
        return f"{INDEX}: the entry of {pack.id} is out of date ({', '.join(wrong)}); {FIX}"
    return None


NOT_BACKENDS = ("comparisons", "flips")  # results/ folders `jev-packs merge` and `refresh` write: no backend's


def _folders(results_dir: Path) -> list[Path]:
    return (sorted(p for p in results_dir.iterdir() if p.is_dir() and p.name not in NOT_BACKENDS)
            if results_dir.is_dir() else [])
