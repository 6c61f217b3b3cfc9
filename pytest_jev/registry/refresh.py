"""`jev-packs refresh`: one command that regenerates every registry artefact from the committed
recordings (results files and reports per backend, evidence.md, the flip reports of
results/flips/, index.json, the scoreboard), or with --check writes nothing and fails on
anything stale.

Each backend column is a replay of its recordings through pytest (`--jev-write-results`), in a
child process per backend, so the numbers are exactly those `pytest packs/ --jev-replay` gives.
Only the check items run (`-k check`): gate failures of a weak backend are not refresh errors.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..fileio import is_regular
from ..formats.backend_json import folder_identity
from ..packs import load_pack
from ..packs.model import Pack
from ..paths import column_folders, pack_recording, predictions_in
from . import index, scoreboard


@dataclass(frozen=True)
class Column:
    """A backend folder and the packs it has recordings of."""

    folder: Path
    packs: tuple[Pack, ...]


def columns(root: Path) -> Iterator[Column]:
    """Backend folders (with backend.json) and their packs: a recording in the folder, or the
    pinned model's recording in the pack folder (jevassert's place for it)."""
    packs = [load_pack(p.parent) for p in sorted((root / "packs").glob("*/pack.yaml"))]
    for folder in column_folders(root / "results"):
        _, model = folder_identity(folder)
        mine = tuple(pack for pack in packs
                     if is_regular(predictions_in(folder, pack.id))
                     or (pack.tested is not None and pack.tested in (model, folder.name)
                         and is_regular(pack_recording(pack.path))))
        if mine:
            yield Column(folder, mine)


def replay(root: Path, column: Column, *, write: bool) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "pytest", *(str(p.path.relative_to(root)) for p in column.packs), "--jev-replay",
            f"--jev-backend={column.folder.name}", "-k", "check", "-q", "-p", "no:cacheprovider", "-p",
            "no:randomly", "--rootdir", str(root)]
    if write:
        args.append("--jev-write-results")
    return subprocess.run(args, cwd=root, capture_output=True, text=True, check=False)


def refresh(root: Path, *, check: bool, say: Callable[[str], object] = print) -> int:
    """Regenerate (or check) everything; returns the exit status (0 fine, 1 stale or broken)."""

    from . import flip_files  # grades recordings in this process (numpy, scipy): only refresh pays

    status = 0
    for column in columns(root):
        done = replay(root, column, write=not check)
        if done.returncode not in (0, 5):
            status = 1
            lines = [line for line in done.stdout.splitlines() if line.startswith(("results/", "packs/", "index"))
                     or "FAILED" in line] or done.stdout.splitlines()[-5:]
            say(f"{column.folder.name}: {'stale' if check else 'failed'}:")
            for line in lines:
                say(f"  {line}")
        else:
            say(f"{column.folder.name}: {'up to date' if check else 'written'} "
                f"({', '.join(p.id for p in column.packs)})")
    if check:
        for problem in (flip_files.stale_problem(root), index.stale_problem(root), scoreboard.stale_problem(root)):
            if problem:
                status = 1
                say(problem)
    else:
        written = flip_files.write(root)
        say(f"written: {len(written)} flip report file(s) under results/{flip_files.FOLDER}/")
        say(f"written: {index.write(root)}")
        say(f"written: {scoreboard.write_scoreboard(root)}")
    return status
