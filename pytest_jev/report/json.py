"""--jev-json: {"runs": [...]} with jevassert check --json keys plus backend and recording."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_runs(path: Path, runs: list[dict[str, Any]]) -> Path:
    """Write atomically (temp file + rename) so a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"runs": runs}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
