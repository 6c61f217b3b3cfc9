"""docs/index.html, the registry's scoreboard: rendering, writing and the staleness checks.

The page is a pure function of packs/ and results/ (`board.build`) laid out by
`templates/scoreboard.html.j2`: same inputs, same bytes, so "is it stale?" is a byte comparison.
Each pack's block carries `data-inputs="sha256:..."`, the digest of the files it is made from
(`board.pack_digest`), so one pack's block can be checked without rendering the page.
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path
from typing import Any

from ..fileio import atomic_write
from ..paths import SCOREBOARD_PAGE
from .board import build, pack_digest, pack_ids
from .render import render

__all__ = ["PAGE", "pack_digest", "pack_stale_problem", "render_scoreboard", "stale_problem", "write_scoreboard"]

PAGE = SCOREBOARD_PAGE
FIX = "regenerate it with `jev-packs scoreboard`"


def _rate(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def _interval(ci: Any) -> str:
    return "" if not ci else f"{ci[0]:.3f}–{ci[1]:.3f}"


def _usd(value: Any) -> str:
    """Cost per case: two significant figures, `free` for zero, `unknown` when not computed."""
    if value is None:
        return "unknown"
    if value == 0:
        return "free"
    places = max(2, 1 - math.floor(math.log10(value)))
    return f"${value:.{places}f}"


def _ms(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:,.1f} ms" if value < 10 else f"{value:,.0f} ms"


def _p(value: Any) -> str:
    if value is None:
        return "–"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def _pp(value: Any) -> str:
    """A detectable difference in percentage points; `–` when the pack cannot find any."""
    return "–" if value is None else f"{100 * value:.1f} pp"


def _threshold(value: Any) -> str:
    return "none" if value is None else f"{value:.2f}"


def render_scoreboard(root: Path) -> str:
    """The page of the registry at `root` (its packs/ and results/)."""

    board = build(Path(root))
    helpers = {"rate": _rate, "interval": _interval, "usd": _usd, "lat": _ms, "pval": _p, "cut": _threshold, "pp": _pp}
    return render("scoreboard.html.j2", {"board": board, **helpers}, html=True)


def write_scoreboard(root: Path) -> Path:
    """Render the page and replace docs/index.html atomically; returns its path."""

    path = Path(root) / PAGE
    atomic_write(path, render_scoreboard(root).encode("utf-8"))
    return path


def stale_problem(root: Path) -> str | None:
    """One line when docs/index.html is missing or differs from what packs/ and results/ give."""
    path = Path(root) / PAGE
    try:
        written = path.read_bytes()
    except OSError:
        return f"{PAGE.as_posix()}: missing; {FIX}"
    if written != render_scoreboard(root).encode("utf-8"):
        return f"{PAGE.as_posix()}: stale (not the page packs/ and results/ give now); {FIX}"
    return None


def _block_digest(page: str, pack_id: str) -> str | None:
    shown = re.escape(html.escape(pack_id, quote=True))
    found = re.search(rf'<section [^>]*data-pack="{shown}" data-inputs="(sha256:[0-9a-f]{{64}})"', page)
    return found.group(1) if found else None


def pack_stale_problem(root: Path, pack_id: str) -> str | None:
    """One line when the block of `pack_id` in docs/index.html was made from other inputs than
    today's (its pack files, results files, backend.json, held-out reports), or is missing."""
    path = Path(root) / PAGE
    try:
        page = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return f"{PAGE.as_posix()}: missing; {FIX}"
    shown = _block_digest(page, pack_id)
    if shown is None:
        if pack_id not in pack_ids(Path(root)):
            return None
        return f"{PAGE.as_posix()}: has no block for pack {pack_id}; {FIX}"
    if shown != pack_digest(Path(root), pack_id):
        return (f"{PAGE.as_posix()}: the block of pack {pack_id} is stale (its pack files, results files or "
                f"backend.json changed since the page was written); {FIX}")
    return None
