"""The writing helpers the models use: record/journal.py's atomic_write, write_json and scrub,
reached on the first write. journal.py also reads recordings (it imports recording_file), which
a plain pytest session never needs, and every session imports these models (a RunResult holds
them). When the base layer's io module lands (issue 17), this module becomes three plain imports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def atomic_write(path: Path, data: bytes) -> None:
    """Write beside `path`, fsync, replace `path`, fsync its folder."""
    from ..record.journal import atomic_write as write

    write(path, data)


def write_json(path: Path, doc: Any) -> None:
    """A JSON document written atomically: sorted keys, two-space indent, UTF-8, a final newline."""
    from ..record.journal import write_json as write

    write(path, doc)


def scrub(text: str) -> str:
    """`text` with any secret of the environment masked."""
    from ..record.journal import scrub as masked

    return masked(text)
