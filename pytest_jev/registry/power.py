"""`jev-packs power PACK [--difference D]`: how big an accuracy difference a pack can tell at its
size, and how many cases a given difference needs. The figure is the scoreboard's (board.build:
flips.pack_power over the pack's ranked backends in the registry at --root), so the command and
the page never disagree; without two recorded backends the discordance is the stated default."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..flips import pack_power
from ..formats.flips_json import Power
from ..packs.model import Pack
from ..stats import DEFAULT_DISCORDANCE, cases_needed
from .board import build


def split_powers(pack: Pack, root: Path) -> Iterator[tuple[str, Power, tuple[str, ...]]]:
    """(split, its power, the ranked backends it comes from) of each split of the pack."""
    blocks = {p.id: p for p in build(root).packs} if (root / "packs").is_dir() else {}
    found = {s.split: s for s in blocks[pack.id].splits} if pack.id in blocks else {}
    for name, split in pack.splits.items():
        block = found.get(name)
        if block is not None and block.power is not None and block.power.cases == len(split.cases):
            yield name, block.power, block.ranked
        else:
            yield name, pack_power(len(split.cases), len(pack.questions), []), ()


def report_lines(pack: Pack, root: Path, difference: float | None = None) -> Iterator[str]:
    """The pack's power in words, per split; with `difference`, the cases it needs."""
    for name, power, ranked in split_powers(pack, root):
        title = pack.id + (f" ({name} split)" if name else "")
        per = power.items_per_case
        yield (f"{title}: {power.cases:,} cases x {per:g} question{'s' if per != 1 else ''} = "
               f"{round(power.cases * per):,} items")
        if power.source == "default":
            yield (f"  discordance {power.discordance:.2f} assumed (DEFAULT_DISCORDANCE: fewer than two backends "
                   "have a results file of this pack's current version: write them with --jev-write-results), "
                   "items taken as independent (design effect 1)")
        else:
            between = " and ".join(ranked) if len(ranked) == 2 else f"its {len(ranked)} ranked backends (mean)"
            yield (f"  discordance {power.discordance:.3f} between {between}: the share of items answered "
                   f"differently; design effect {power.design_effect:.2f}: worth {power.effective_items:,} "
                   "independent items")
        chance = f"{100 * power.power:.0f}% power, two-sided {power.alpha:g}, exact McNemar test over cases"
        if power.detectable_difference is None:
            yield f"  it cannot tell even the largest possible difference from none ({chance})"
        else:
            yield (f"  it tells accuracy differences of {100 * power.detectable_difference:.1f} pp or more from "
                   f"none ({chance})")
        if difference is not None:
            yield "  " + _needed(abs(difference), power)


def _needed(difference: float, power: Power) -> str:
    if difference == 0:
        return "a difference of 0 is never told from none: give --difference above 0"
    if difference > power.discordance:
        return (f"a difference of {100 * difference:.1f} pp cannot arise between backends that answer only "
                f"{100 * power.discordance:.1f}% of items differently")
    needed = cases_needed(difference, power.discordance, power.items_per_case, power.design_effect)
    if needed is None:
        return f"to tell {100 * difference:.1f} pp it needs more than 10,000,000 cases"
    verdict = "enough" if needed <= power.cases else f"{needed - power.cases:,} more"
    return (f"to tell a difference of {100 * difference:.1f} pp it needs {needed:,} cases (it has {power.cases:,}: "
            f"{verdict})")


__all__ = ["DEFAULT_DISCORDANCE", "report_lines", "split_powers"]
