"""The scoreboard's page data: the frozen dataclasses `board.build` fills and the template lays out
(a Board of PackBlocks, each of SplitBlocks of Columns, with their Backends, Pairs, Marks and
held-out reports).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..formats.flips_json import Power
from ..formats.protocol_json import Rate
from ..formats.run_json import LocaleNumbers, ThresholdCoverage
from . import charts


@dataclass(frozen=True)
class Mark:
    kind: str  # css class: mock, older, uncalibrated, nodetail
    text: str
    title: str


@dataclass(frozen=True)
class Backend:
    folder: str
    name: str
    provider: str
    kind: str
    model: str
    endpoint: str
    license: str
    pricing: str
    calibrated: bool | None
    notes: str
    record: str | None  # backend.json `reproduce`: the command that records it
    mock: bool
    embedded: bool
    packs: tuple[str, ...] = ()
    replay: tuple[str, ...] = ()  # the commands that grade its columns again, offline


@dataclass(frozen=True)
class Column:
    key: int  # its number in the block (tables and the cost chart)
    backend: Backend
    group: str  # ranked | older | mock
    standing: str  # leader | tied | below | nobeat (below the baseline) | untested | only | older | mock
    standing_label: str
    standing_note: str
    accuracy: float | None
    accuracy_ci: tuple[float, float] | None
    ece: float | None
    ece_ci: tuple[float, float] | None
    cost: float | None
    p50: float | None
    p95: float | None
    n_cases: int | None
    n_items: int | None
    case_errors: int | None
    missing_items: int | None
    auto: ThresholdCoverage | None  # items auto-accepted under the pack's floors, and their precision
    pack_version: str | None
    mode: str
    served: tuple[str, ...]
    recorded_at: str | None
    sha: str | None
    marks: tuple[Mark, ...]
    row: Mapping[str, Any]  # interval_row geometry
    reliability: Mapping[str, Any] | None
    curve: Mapping[str, Any] | None
    locales: Mapping[str, LocaleNumbers]
    frontier: bool
    replay: str
    in_folder: bool  # its recording lives in its backend folder (replayed with --jev-backend)
    links: tuple[tuple[str, str], ...]  # (label, href)
    has_detail: bool


@dataclass(frozen=True)
class Pair:
    first: str
    second: str
    b: int  # right only for first
    c: int  # right only for second
    n: int
    p: float | None
    why: str  # when p is None
    cases: tuple[tuple[int, int, int], ...] = ()  # (b, c, n) of each case both answered (stats.case_pairs)
    detectable: float | None = None  # the smallest accuracy difference the pack finds at this pair's discordance


@dataclass(frozen=True)
class HeldoutRow:
    """One question and locale of a held-out report: the threshold applied and what it gave."""

    question: str
    locale: str
    threshold: float | None
    rule: str
    coverage: Rate
    precision: Rate  # selective precision


@dataclass(frozen=True)
class Heldout:
    backend: str
    mock: bool
    source: str
    rows: tuple[HeldoutRow, ...]
    link: str | None


@dataclass(frozen=True)
class SplitBlock:
    split: str
    anchor: str  # its id in the page: pack-<id>, or pack-<id>--<split> (pack ids never hold "--")
    n_cases: int | None
    n_items: int | None
    baseline: float | None
    axis: Mapping[str, Any]
    columns: tuple[Column, ...]
    leader: str | None
    tied: tuple[str, ...]
    below: tuple[str, ...]
    untested: tuple[str, ...]
    pairs: Mapping[str, Mapping[str, Pair]]  # first -> second -> pair, over ranked columns
    pair_list: tuple[Pair, ...]  # each pair of ranked columns once, in rank order
    ranked: tuple[str, ...]
    cost_chart: Mapping[str, Any] | None
    cost_unknown: tuple[str, ...]
    locale_names: tuple[str, ...]
    heldout: tuple[Heldout, ...]
    comparison: str | None
    no_leader: str | None = None  # why no column leads: the best is no better than the baseline
    power: Power | None = None  # the smallest difference the split can find (flips.pack_power); None: no cases


@dataclass(frozen=True)
class PackBlock:
    id: str
    anchor: str
    version: str | None
    license: str | None
    description: str | None
    questions: tuple[tuple[str, str, int], ...]  # id, type, number of labels
    locales: tuple[str, ...]
    n_cases: int | None
    link: str | None
    digest: str
    problem: str | None
    splits: tuple[SplitBlock, ...]
    absent: tuple[str, ...]  # backend folders without results for this pack


@dataclass(frozen=True)
class Board:
    packs: tuple[PackBlock, ...]
    backends: tuple[Backend, ...]
    no_column: tuple[Mapping[str, str], ...]
    embedded: tuple[str, ...]
    embedded_range: tuple[float, float] | None
    total_cases: int
    dates: tuple[str, ...]
    problems: tuple[str, ...]
    overview: tuple[Mapping[str, Any], ...]
    overview_backends: tuple[str, ...]
    legend_row: Mapping[str, Any] = field(default_factory=lambda: charts.interval_row(0.55, 0.62, 0.69, 0.40))

