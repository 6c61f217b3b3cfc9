"""The scoreboard's data: every number, order, tie, frontier and mark of `docs/index.html`,
built from a results folder and a packs folder (read by `board_inputs`) into the dataclasses of
`board_model`, whose public names are re-exported here. Pure (reads files, renders nothing, no
jinja): the template only lays it out.

Per pack and split, the columns (one per backend folder with a results file) are put in three
groups, in this order:

- ranked: live recordings on the pack's current version, by accuracy (then folder name). The
  first is the leader, unless it is no more accurate than the majority-label baseline (always
  answering each question's commonest gold label): then no column leads, each is *below
  baseline*, and the block says so. Every other one is paired with the leader item by item
  (`detail.correct`) and
  called *tied with the leader* when the exact McNemar p-value is >= 0.05, *below* otherwise,
  *untested* when the two cannot be paired (a results file without detail, other questions);
- older: live recordings of an older (or unrecorded) pack version: shown, never ranked;
- harness checks: mock recordings (`mode: mock`), which answer from the gold labels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..flips import pack_power
from ..formats.protocol_json import ProtocolReport
from ..formats.run_json import Detail, ResultsFile
from ..packs.model import Pack
from ..stats import case_pairs, frontier, majority_baseline, mcnemar_exact
from . import charts
from .board_inputs import (
    BoardError,
    backend_folders,
    digest_of,
    link,
    load_pack_or_problem,
    pack_digest,
    pack_ids,
    pack_inputs,
    read_backend,
    read_report,
    read_results,
    rel,
    split_of,
)
from .board_model import Backend, Board, Column, Heldout, HeldoutRow, Mark, PackBlock, Pair, SplitBlock

__all__ = ["ALPHA", "EMBEDDED_KINDS", "KNOWN_KINDS", "Backend", "Board", "BoardError", "Column", "Heldout", "Mark",
           "PackBlock", "Pair", "SplitBlock", "backend_folders", "build", "pack_digest", "pack_ids", "pack_inputs"]

ALPHA = 0.05  # McNemar: tied with the leader at p >= ALPHA
# Backends this registry knows how to record: (backend.json `backend` kinds or jevassert `provider`s,
# name, what recording needs, command). One without a folder gets a "no column yet" line.
KNOWN_KINDS = (
    (("jev", "typesafe"), "Jev (TypeSafe System One API)", "TYPESAFE_API_KEY",
     "pytest packs/ --jev-record --jev-backend=jev"),
    (("anthropic",), "Claude (Anthropic API)", "ANTHROPIC_API_KEY",
     "pytest packs/ --jev-record --jev-backend=sonnet"),
    (("openai",), "local LLMs (an OpenAI-compatible server: Ollama, vLLM)", "a running server",
     "pytest packs/ --jev-record --jev-backend=openai:qwen2.5:7b --jev-base-url http://localhost:11434/v1"),
)
EMBEDDED_KINDS = {"sparrow": "sparrow", "minilm": "MiniLM"}


def _backend(folder: Path, problems: list[str], root: Path) -> Backend:
    info = read_backend(folder, problems, root)
    kind = info.backend or ""
    return Backend(
        folder=folder.name, name=info.name or info.id or folder.name, provider=info.provider or "", kind=kind,
        model=info.model or "", endpoint=info.endpoint or "", license=info.license or "not stated",
        pricing=info.pricing_label(), calibrated=info.calibrated, notes=info.notes or "",
        record=info.reproduce or None, mock=kind == "mock", embedded=kind in EMBEDDED_KINDS)


def _float(value: float | None) -> float | None:
    """A number of a file as the page computes with it (a file may hold 1 where it means 1.0)."""
    return None if value is None else float(value)


def _floats(pair: tuple[float, float] | None) -> tuple[float, float] | None:
    return None if pair is None else (float(pair[0]), float(pair[1]))


def _marks(backend: Backend, mode: str, version: str | None, current: str | None, detail: bool) -> tuple[Mark, ...]:
    marks = []
    if backend.mock or mode == "mock":
        marks.append(Mark("mock", "mock: harness check",
                          "answers come from the gold labels with noise: the numbers only show the harness works"))
    if current is not None and version != current:
        marks.append(Mark("older", f"pack v{version}" if version else "pack version unknown",
                          f"recorded on pack version {version or '(not recorded)'}; the pack is now {current}: "
                          "not comparable with current columns"))
    if backend.calibrated is False:
        marks.append(Mark("uncalibrated", "uncalibrated",
                          "backend.json says its probabilities are not calibrated (embedded-model or "
                          "self-reported scores): read the reliability diagram, not the probabilities"))
    elif backend.calibrated is None:
        marks.append(Mark("uncalibrated", "calibration not declared",
                          "backend.json does not say whether its probabilities are calibrated (an LLM's "
                          "self-reported probabilities usually are not): read the reliability diagram"))
    if not detail:
        marks.append(Mark("nodetail", "no per-case detail",
                          "this results file has no `detail` (written by jevassert or an older jev-packs): "
                          "no charts, no per-locale numbers, no McNemar test"))
    return tuple(marks)


def _replay(pack_path: str, folder: str, predictions: str | None) -> str:
    if predictions and not predictions.startswith(f"results/{folder}/"):
        return f"pytest {pack_path} --jev-replay --jev-recording {predictions} --jev-write-results"
    return f"pytest {pack_path} --jev-replay --jev-backend={folder} --jev-write-results"


def _standing(group: str, accuracy: float | None, leader: str | None, pair: Pair | None,
              n_ranked: int) -> tuple[str, str, str]:
    """(code, label, note) of a column: where it stands against the leader, and why."""
    if group == "mock":
        return "mock", "harness check", "not ranked"
    if group == "older":
        return "older", "older version", "not ranked"
    if accuracy is None:
        return "untested", "no accuracy", "the results file has no accuracy"
    if leader is None:
        return "only", "only backend", "nothing to compare with"
    if pair is None or pair.p is None:
        return "untested", "not tested", pair.why if pair else "no pair"
    shown = "p < 0.001" if pair.p < 0.001 else f"p = {pair.p:.3f}"
    if pair.p >= ALPHA:
        return "tied", "tied with leader", f"McNemar {shown}; {cannot_tell(pair.detectable)}"
    return "below", "below leader", f"McNemar {shown}"


def cannot_tell(detectable: float | None) -> str:
    """What a tie means at the pack's size: the differences it cannot tell from none."""
    if detectable is None:
        return "this pack is too small to tell even the largest difference these two could have"
    return f"this pack cannot tell differences below {100 * detectable:.1f} pp"


def _paired(a: tuple[str, Detail | None], b: tuple[str, Detail | None]) -> Pair:
    (name_a, da), (name_b, db) = a, b
    if da is None or db is None:
        return Pair(name_a, name_b, 0, 0, 0, None, "no per-case detail")
    if da.questions != db.questions:
        return Pair(name_a, name_b, 0, 0, 0, None, "different questions")
    if da.correct is None or db.correct is None:
        return Pair(name_a, name_b, 0, 0, 0, None, "no per-case marks")
    per_case = tuple(case_pairs(da.correct, db.correct))  # pair_counts, case by case
    b_, c_, n = (sum(x[i] for x in per_case) for i in range(3))
    if n == 0:
        return Pair(name_a, name_b, 0, 0, 0, None, "no item answered by both")
    return Pair(name_a, name_b, b_, c_, n, mcnemar_exact(b_, c_), "", per_case)


@dataclass(frozen=True)
class _Entry:
    """A results file of one split, read, before ranking."""
    backend: Backend
    doc: ResultsFile
    file: str  # its path from the registry's root
    group: str
    accuracy: float | None
    detail: Detail | None
    version: str | None


def _order(entries: list[_Entry]) -> list[_Entry]:
    def key(e: _Entry) -> tuple[int, float, str]:
        return ({"ranked": 0, "older": 1, "mock": 2}[e.group],
                -e.accuracy if e.accuracy is not None else math.inf, e.backend.folder)
    return sorted(entries, key=key)


def _column(key: int, e: _Entry, standing: tuple[str, str, str], on_frontier: bool, current: str | None,
            baseline: float | None, pack_path: str) -> Column:
    doc, detail = e.doc, e.detail
    ci = _floats(doc.accuracy_ci)
    predictions = doc.predictions or None
    folder = e.backend.folder
    links = [(label, href) for label, href in (
        ("report", link(doc.report)), ("results JSON", link(e.file)), ("recording", link(predictions))) if href]
    sha = doc.sha256
    mode = doc.mode or "live"
    return Column(
        key=key, backend=e.backend, group=e.group, standing=standing[0], standing_label=standing[1],
        standing_note=standing[2],
        accuracy=e.accuracy, accuracy_ci=ci, ece=_float(doc.ece), ece_ci=_floats(doc.ece_ci),
        cost=_float(doc.cost_per_case_usd), p50=_float(doc.p50_latency_ms), p95=_float(doc.p95_latency_ms),
        n_cases=doc.n_cases, n_items=doc.n_items, case_errors=doc.case_errors, missing_items=doc.missing_items,
        auto=doc.threshold_coverage, pack_version=e.version, mode="mock" if e.group == "mock" else mode,
        served=doc.recorded_models, recorded_at=doc.recorded_at or None, sha=sha[:12] if sha else None,
        marks=_marks(e.backend, mode, e.version, current, detail is not None),
        row=charts.interval_row(ci[0] if ci else None, e.accuracy, ci[1] if ci else None, baseline),
        reliability=charts.reliability(detail.reliability) if detail is not None and detail.reliability else None,
        curve=charts.coverage_curve(detail.curve) if detail is not None and detail.curve else None,
        locales=detail.locales if detail is not None else {},
        frontier=on_frontier, replay=_replay(pack_path, folder, predictions),
        in_folder=not predictions or predictions.startswith(f"results/{folder}/"), links=tuple(links),
        has_detail=detail is not None)


def _heldout(report: ProtocolReport, backend: Backend, order: Sequence[str], href: str | None) -> Heldout:
    rows = []
    questions = report.questions
    for qid in sorted(questions, key=lambda q: (order.index(q) if q in order else len(order), q)):
        for locale, m in sorted(questions[qid].locales.items()):
            rows.append(HeldoutRow(qid, locale, _float(m.threshold), m.rule or "", m.coverage,
                                   m.selective_precision))
    return Heldout(backend=backend.folder, mock=backend.mock or report.mode == "mock",
                   source=report.thresholds_source or "", rows=tuple(rows), link=href)


def _entries(found: Sequence[tuple[Backend, ResultsFile, str]], current: str | None) -> list[_Entry]:
    """The results files of a split, grouped (ranked, older, mock) and in page order."""
    entries = []
    for backend, doc, file in found:
        version = doc.pack_version or None
        group = ("mock" if backend.mock or doc.mode == "mock" else
                 "older" if current is not None and version != current else "ranked")
        entries.append(_Entry(backend, doc, file, group, _float(doc.accuracy), doc.detail, version))
    return _order(entries)


def _pairs(ranked: Sequence[_Entry], n_cases: int, n_questions: int) -> tuple[dict[str, dict[str, Pair]], list[Pair]]:
    """Every pair of ranked columns, tested once (in rank order) and looked up both ways, with
    the smallest difference the pack finds at the pair's discordance (flips.pack_power)."""
    pairs: dict[str, dict[str, Pair]] = {}
    tested = []
    for i, a in enumerate(ranked):
        for b in ranked[i + 1:]:
            pair = _paired((a.backend.folder, a.detail), (b.backend.folder, b.detail))
            if pair.p is not None and n_cases:
                pair = replace(pair, detectable=pack_power(n_cases, n_questions, [pair.cases]).detectable_difference)
            tested.append(pair)
            pairs.setdefault(a.backend.folder, {})[b.backend.folder] = pair
            pairs.setdefault(b.backend.folder, {})[a.backend.folder] = replace(
                pair, first=pair.second, second=pair.first, b=pair.c, c=pair.b,
                cases=tuple((c, b, n) for b, c, n in pair.cases))
    return pairs, tested


def _frontier(ranked: Sequence[_Entry]) -> dict[str, bool]:
    costed = [(e.backend.folder, _float(e.doc.cost_per_case_usd), e.accuracy) for e in ranked]
    drawn = [(folder, cost, acc) for folder, cost, acc in costed if cost is not None and acc is not None]
    return dict(zip((folder for folder, _, _ in drawn), frontier([(cost, acc) for _, cost, acc in drawn])))


def _cost_chart(columns: Sequence[Column]) -> dict[str, Any] | None:
    points = [{"key": str(c.key), "cost": c.cost, "accuracy": c.accuracy,
               "ci": list(c.accuracy_ci) if c.accuracy_ci else None, "frontier": c.frontier,
               "title": f"{c.backend.folder}: accuracy {c.accuracy:.3f}, "
                        + ("free" if c.cost == 0 else f"${c.cost:.6g} per case")}
              for c in columns if c.group == "ranked" and c.cost is not None and c.accuracy is not None]
    return charts.cost_accuracy(points) if points else None


def _split_block(pack: Pack | None, pack_id: str, split: str, found: list[tuple[Backend, ResultsFile, str]],
                 reports: Mapping[str, tuple[ProtocolReport, str]], comparison: str | None,
                 backends: Mapping[str, Backend]) -> SplitBlock:
    current = pack.version if pack is not None else None
    cases = pack.splits[split].cases if pack is not None and split in pack.splits else ()
    questions = list(pack.questions) if pack is not None else []
    baseline = majority_baseline([case.expect for case in cases], questions)
    entries = _entries(found, current)
    ranked = [e for e in entries if e.group == "ranked" and e.accuracy is not None]
    best = ranked[0] if ranked else None
    # a backend no more accurate than always answering the commonest label leads nothing
    beaten = best is not None and baseline is not None and (best.accuracy or 0.0) <= baseline
    leader = ranked[0].backend.folder if len(ranked) >= 2 and not beaten else None
    no_leader = (f"no backend beats the majority-label baseline ({baseline:.3f}): the most accurate, "
                 f"{best.backend.folder}, has {best.accuracy:.3f}"
                 if beaten and best is not None and baseline is not None and best.accuracy is not None else None)
    pairs, tested = _pairs(ranked, len(cases), len(questions))
    on_frontier = _frontier(ranked)
    columns = []
    for key, e in enumerate(entries, start=1):
        lead = pairs.get(leader or "", {}).get(e.backend.folder)
        standing = (("leader", "leader", "highest accuracy") if e.backend.folder == leader else
                    ("nobeat", "below baseline", f"accuracy {e.accuracy:.3f}, baseline {baseline:.3f}")
                    if beaten and e.group == "ranked" and e.accuracy is not None and baseline is not None else
                    _standing(e.group, e.accuracy, leader, lead, len(ranked)))
        columns.append(_column(key, e, standing, on_frontier.get(e.backend.folder, False), current, baseline,
                               f"packs/{pack_id}"))
    return SplitBlock(
        split=split, anchor=f"pack-{pack_id}--{split}" if split else f"pack-{pack_id}",
        n_cases=len(cases) or None, n_items=len(cases) * len(questions) or None, baseline=baseline,
        axis=charts.interval_axis(), columns=tuple(columns), leader=leader,
        tied=tuple(c.backend.folder for c in columns if c.standing == "tied"),
        below=tuple(c.backend.folder for c in columns if c.standing == "below"),
        untested=tuple(c.backend.folder for c in columns if c.standing == "untested"),
        pairs=pairs, pair_list=tuple(tested), ranked=tuple(e.backend.folder for e in ranked),
        cost_chart=_cost_chart(columns),
        cost_unknown=tuple(c.backend.folder for c in columns if c.group == "ranked" and c.cost is None),
        locale_names=tuple(sorted({name for c in columns for name in c.locales})),
        heldout=tuple(_heldout(doc, backends.get(folder) or _placeholder(folder), questions, href)
                      for folder, (doc, href) in sorted(reports.items(),
                                                        key=lambda kv: _report_order(kv[0], columns))),
        comparison=comparison, no_leader=no_leader,
        power=pack_power(len(cases), len(questions), [p.cases for p in tested if p.p is not None]) if cases else None)


def _report_order(folder: str, columns: Sequence[Column]) -> tuple[int, str]:
    keys = [c.key for c in columns if c.backend.folder == folder]
    return (keys[0] if keys else len(columns) + 1, folder)


def _placeholder(folder: str) -> Backend:
    return Backend(folder=folder, name=folder, provider="", kind="", model="", endpoint="", license="",
                   pricing="", calibrated=None, notes="", record=None, mock=False, embedded=False)


def _pack_block(root: Path, pack_id: str, backends: Mapping[str, Backend], problems: list[str]) -> PackBlock:
    pack, problem = load_pack_or_problem(root, pack_id)
    found: dict[str, list[tuple[Backend, ResultsFile, str]]] = {}
    reports: dict[str, dict[str, tuple[ProtocolReport, str]]] = {}
    comparison: dict[str, str] = {}
    inputs = pack_inputs(root, pack_id)
    for path in inputs:
        shown = rel(path, root)
        if path.parent.name == "comparisons" and path.parent.parent == root / "results":
            comparison[path.name[len(pack_id) + 1:-5]] = link(shown) or ""
            continue
        parsed = split_of(path.name, pack_id) if path.parent.parent == root / "results" else None
        if parsed is None:
            continue
        kind, split = parsed
        backend = backends[path.parent.name]
        if kind == "report":
            report = read_report(path, problems, root)
            if report is not None:
                reports.setdefault(split, {})[backend.folder] = (report, link(shown) or "")
            continue
        results = read_results(path, problems, root)
        if results is not None:
            found.setdefault(split, []).append((backend, results, shown))
    names = list(pack.splits) if pack is not None else [""]
    names += sorted(s for s in found if s not in names)
    blocks = tuple(_split_block(pack, pack_id, split, found.get(split, []), reports.get(split, {}),
                                comparison.get(split), backends)
                   for split in names if split in found or pack is not None)
    present = {b.folder for rows in found.values() for b, _, _ in rows}
    return PackBlock(
        id=pack_id, anchor=f"pack-{pack_id}", version=pack.version if pack else None,
        license=pack.license if pack else None,
        description=pack.description if pack else None,
        questions=tuple((q.id, q.type, len(q.labels)) for q in pack.questions.values()) if pack else (),
        locales=tuple(pack.locales) if pack else (), n_cases=len(pack.cases) if pack else None,
        link=link(f"packs/{pack_id}") if pack else None, digest=digest_of(root, inputs), problem=problem,
        splits=blocks, absent=tuple(sorted(set(backends) - present)))


def _backend_replay(folder: str, columns: Sequence[tuple[str, Column]], with_folder: set[str]) -> tuple[str, ...]:
    """One command grading every column of a backend whose recordings live in its folder (all
    packs: `packs/`), else each column's own command."""
    if not columns:
        return ()
    if not all(c.in_folder for _, c in columns):
        return tuple(sorted({c.replay for _, c in columns}))
    ids = {i for i, _ in columns}
    target = "packs/" if ids == with_folder else " ".join(f"packs/{i}" for i in sorted(ids))
    return (f"pytest {target} --jev-replay --jev-backend={folder} --jev-write-results",)


def build(root: Path) -> Board:
    """The scoreboard of the registry at `root` (its packs/ and results/ folders)."""
    problems: list[str] = []
    backends = {f.name: _backend(f, problems, root) for f in backend_folders(root)}
    packs = [_pack_block(root, pack_id, backends, problems) for pack_id in pack_ids(root)]
    recorded: dict[str, list[tuple[str, Column]]] = {}
    for block in packs:
        for split in block.splits:
            for c in split.columns:
                recorded.setdefault(c.backend.folder, []).append((block.id, c))
    with_folder = {p.id for p in packs if p.link}
    listed = tuple(replace(b, packs=tuple(sorted({i for i, _ in recorded.get(b.folder, [])})),
                           replay=_backend_replay(b.folder, recorded.get(b.folder, []), with_folder))
                   for b in sorted(backends.values(), key=lambda b: (b.mock, b.folder)))
    kinds = {b.kind for b in listed} | {b.provider for b in listed}
    no_column = tuple({"name": name, "needs": needs, "command": command}
                      for aliases, name, needs, command in KNOWN_KINDS if not kinds & set(aliases))
    embedded_acc = [c.accuracy for p in packs for s in p.splits for c in s.columns
                    if c.backend.embedded and c.group == "ranked" and c.accuracy is not None]
    overview_backends = tuple(b.folder for b in listed if b.packs)
    overview = tuple({"pack": p.id, "split": s.split, "anchor": s.anchor, "n_cases": s.n_cases, "power": s.power,
                      "cells": {c.backend.folder: c for c in s.columns}}
                     for p in packs for s in p.splits)
    return Board(
        packs=tuple(packs), backends=listed, no_column=no_column,
        embedded=tuple(sorted({EMBEDDED_KINDS[b.kind] for b in listed if b.embedded and b.packs})),
        embedded_range=(min(embedded_acc), max(embedded_acc)) if embedded_acc else None,
        total_cases=sum(p.n_cases or 0 for p in packs),
        dates=tuple(sorted({c.recorded_at for p in packs for s in p.splits for c in s.columns if c.recorded_at})),
        problems=tuple(problems), overview=overview, overview_backends=overview_backends)
