"""The scoreboard's data: every number, order, tie, frontier and mark of `docs/index.html`,
built from a results folder and a packs folder. Pure (reads files, renders nothing, no jinja):
the template only lays it out.

Per pack and split, the columns (one per backend folder with a results file) are put in three
groups, in this order:

- ranked: live recordings on the pack's current version, by accuracy (then folder name). The
  first is the leader; every other one is paired with it item by item (`detail.correct`) and
  called *tied with the leader* when the exact McNemar p-value is >= 0.05, *below* otherwise,
  *untested* when the two cannot be paired (a results file without detail, other questions);
- older: live recordings of an older (or unrecorded) pack version: shown, never ranked;
- harness checks: mock recordings (`mode: mock`), which answer from the gold labels.

Inputs of a pack's block (`pack_inputs`): its pack.yaml and case files, the results files and
held-out protocol reports of every backend folder for it, those folders' backend.json, and the
merged comparisons. `pack_digest` hashes exactly those bytes; the page carries it per block, so a
stale block is found without rendering the page.
"""

from __future__ import annotations

import hashlib
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import JevError
from ..files import is_regular, loads, read_bytes
from . import charts
from .stats import frontier, mcnemar_exact, pair_counts

ALPHA = 0.05  # McNemar: tied with the leader at p >= ALPHA
NOT_RESULTS = ("thresholds",)  # <pack>.<name>.json files that are not results of a split
SHOWN_REPORTS = ("heldout",)  # protocol reports the page shows: <pack>.report.<split>.json
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
_SAFE_LINK = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/-]*$")


class BoardError(JevError):
    """A scoreboard input that cannot be used."""


# --- inputs ------------------------------------------------------------------------------------

def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def backend_folders(root: Path) -> list[Path]:
    """Folders of results/ that hold a backend.json, by name."""
    results = root / "results"
    if not results.is_dir():
        return []
    return sorted((p for p in results.iterdir() if p.is_dir() and is_regular(p / "backend.json")),
                  key=lambda p: p.name)


def _split_of(name: str, pack_id: str) -> tuple[str, str] | None:
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
            if head != "backend" and _split_of(file.name, head):
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
        own = sorted(p for p in backend.glob(f"{pack_id}*.json") if is_regular(p) and _split_of(p.name, pack_id))
        if own:
            out.extend([backend / "backend.json", *own])
    comparisons = root / "results" / "comparisons"
    if comparisons.is_dir():
        out.extend(sorted(p for p in comparisons.glob(f"{pack_id}.*.json") if is_regular(p)))
    return out


def pack_digest(root: Path, pack_id: str) -> str:
    """sha256 over the names and bytes of a pack's inputs: `sha256:<hex>`."""
    total = hashlib.sha256()
    for path in pack_inputs(root, pack_id):
        data = read_bytes(path, BoardError)
        total.update(f"{_rel(path, root)}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    return f"sha256:{total.hexdigest()}"


def _read_json(path: Path, problems: list[str], root: Path) -> dict[str, Any] | None:
    try:
        doc = loads(read_bytes(path, BoardError))
    except (BoardError, ValueError, UnicodeDecodeError) as exc:
        problems.append(f"{_rel(path, root)}: cannot be read ({exc}); it is left out of the page")
        return None
    if not isinstance(doc, dict):
        problems.append(f"{_rel(path, root)}: is not a JSON object; it is left out of the page")
        return None
    return doc


# --- values, parsed at the boundary -------------------------------------------------------------

def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _pair(value: Any) -> tuple[float, float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        lo, hi = _num(value[0]), _num(value[1])
        if lo is not None and hi is not None:
            return lo, hi
    return None


def _int(value: Any) -> int | None:
    number = _num(value)
    return int(number) if number is not None and number == int(number) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _link(path: Any) -> str | None:
    """A link from docs/index.html to a file of the repository, for a safe relative path only."""
    if not isinstance(path, str) or not _SAFE_LINK.match(path) or ".." in path.split("/"):
        return None
    return f"../{path}"


def _pricing(info: Mapping[str, Any]) -> str:
    table = info.get("pricing")
    if isinstance(table, Mapping):
        prices = table.get("input_usd_per_mtok"), table.get("output_usd_per_mtok")
    else:
        table = info.get("pricing_usd_per_mtok")
        prices = (table.get("input"), table.get("output")) if isinstance(table, Mapping) else (None, None)
    given = [_num(p) for p in prices]
    if all(p is None for p in given):
        return "not stated"
    if all(p == 0 for p in given):
        return "free ($0 per M tokens)"
    return " / ".join("?" if p is None else f"${p:g}" for p in given) + " per M tokens (input / output)"


# --- the page's data ------------------------------------------------------------------------------

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
    standing: str  # leader | tied | below | untested | only | older | mock
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
    auto: Mapping[str, Any] | None  # threshold_coverage: n_auto, n_total, coverage, precision
    pack_version: str | None
    mode: str
    served: tuple[str, ...]
    recorded_at: str | None
    sha: str | None
    marks: tuple[Mark, ...]
    row: Mapping[str, Any]  # interval_row geometry
    reliability: Mapping[str, Any] | None
    curve: Mapping[str, Any] | None
    locales: Mapping[str, Any]
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


@dataclass(frozen=True)
class Heldout:
    backend: str
    mock: bool
    source: str
    rows: tuple[Mapping[str, Any], ...]  # question, locale, threshold, rule, coverage, precision
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


def _backend(folder: Path, problems: list[str], root: Path) -> Backend:
    info = _read_json(folder / "backend.json", problems, root) or {}
    kind = _text(info.get("backend")) or ""
    provider = _text(info.get("provider")) or ""
    calibrated = info.get("calibrated")
    mock = kind == "mock"
    return Backend(
        folder=folder.name, name=_text(info.get("name")) or _text(info.get("id")) or folder.name,
        provider=provider, kind=kind, model=_text(info.get("model")) or "", endpoint=_text(info.get("endpoint")) or "",
        license=_text(info.get("license")) or "not stated", pricing=_pricing(info),
        calibrated=calibrated if isinstance(calibrated, bool) else None, notes=_text(info.get("notes")) or "",
        record=_text(info.get("reproduce")), mock=mock, embedded=kind in EMBEDDED_KINDS)


def _baseline(cases: Sequence[Any], questions: Sequence[str]) -> float | None:
    """Accuracy of always answering each question's most common gold label (ties: any)."""
    if not cases or not questions:
        return None
    hits = 0
    for qid in questions:
        counts: dict[str, int] = {}
        for case in cases:
            label = str(case.expect.get(qid))
            counts[label] = counts.get(label, 0) + 1
        hits += max(counts.values())
    return hits / (len(cases) * len(questions))


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
        return ("only", "only backend", "nothing to compare with") if n_ranked == 1 else \
            ("leader", "leader", "highest accuracy")
    if pair is None or pair.p is None:
        return "untested", "not tested", pair.why if pair else "no pair"
    shown = "p < 0.001" if pair.p < 0.001 else f"p = {pair.p:.3f}"
    if pair.p >= ALPHA:
        return "tied", "tied with leader", f"McNemar {shown}"
    return "below", "below leader", f"McNemar {shown}"


def _paired(a: tuple[str, Mapping[str, Any] | None], b: tuple[str, Mapping[str, Any] | None]) -> Pair:
    (name_a, da), (name_b, db) = a, b
    if not da or not db:
        return Pair(name_a, name_b, 0, 0, 0, None, "no per-case detail")
    if da.get("questions") != db.get("questions"):
        return Pair(name_a, name_b, 0, 0, 0, None, "different questions")
    ca, cb = da.get("correct"), db.get("correct")
    if not isinstance(ca, Mapping) or not isinstance(cb, Mapping):
        return Pair(name_a, name_b, 0, 0, 0, None, "no per-case marks")
    b_, c_, n = pair_counts({k: str(v) for k, v in ca.items()}, {k: str(v) for k, v in cb.items()})
    if n == 0:
        return Pair(name_a, name_b, 0, 0, 0, None, "no item answered by both")
    return Pair(name_a, name_b, b_, c_, n, mcnemar_exact(b_, c_), "")


@dataclass(frozen=True)
class _Entry:
    """A results file of one split, parsed, before ranking."""
    backend: Backend
    doc: Mapping[str, Any]
    group: str
    accuracy: float | None
    detail: Mapping[str, Any] | None
    version: str | None


def _order(entries: list[_Entry]) -> list[_Entry]:
    def key(e: _Entry) -> tuple[int, float, str]:
        return ({"ranked": 0, "older": 1, "mock": 2}[e.group],
                -e.accuracy if e.accuracy is not None else math.inf, e.backend.folder)
    return sorted(entries, key=key)


def _column(key: int, e: _Entry, standing: tuple[str, str, str], on_frontier: bool, current: str | None,
            baseline: float | None, pack_path: str) -> Column:
    doc, detail = e.doc, e.detail or {}
    ci = _pair(doc.get("accuracy_ci"))
    auto = doc.get("threshold_coverage")
    predictions = _text(doc.get("predictions"))
    folder = e.backend.folder
    links = [(label, link) for label, link in (
        ("report", _link(doc.get("report"))), ("results JSON", _link(doc.get("_file"))),
        ("recording", _link(predictions))) if link]
    reliability = detail.get("reliability")
    curve = detail.get("curve")
    sha = _text(doc.get("predictions_sha256")) or _text(doc.get("recording_sha256"))
    return Column(
        key=key, backend=e.backend, group=e.group, standing=standing[0], standing_label=standing[1],
        standing_note=standing[2],
        accuracy=e.accuracy, accuracy_ci=ci, ece=_num(doc.get("ece")), ece_ci=_pair(doc.get("ece_ci")),
        cost=_num(doc.get("cost_per_case_usd")), p50=_num(doc.get("p50_latency_ms")),
        p95=_num(doc.get("p95_latency_ms")), n_cases=_int(doc.get("n_cases")), n_items=_int(doc.get("n_items")),
        case_errors=_int(doc.get("case_errors")), missing_items=_int(doc.get("missing_items")),
        auto={k: auto.get(k) for k in ("n_auto", "n_total", "coverage", "precision")} if isinstance(auto, Mapping)
        else None,
        pack_version=e.version, mode="mock" if e.group == "mock" else (_text(doc.get("mode")) or "live"),
        served=tuple(str(m) for m in doc.get("recorded_models") or () if isinstance(m, str)),
        recorded_at=_text(doc.get("recorded_at")), sha=sha[:12] if sha else None,
        marks=_marks(e.backend, str(doc.get("mode") or "live"), e.version, current, bool(e.detail)),
        row=charts.interval_row(ci[0] if ci else None, e.accuracy, ci[1] if ci else None, baseline),
        reliability=charts.reliability(reliability) if isinstance(reliability, list) and reliability else None,
        curve=charts.coverage_curve(curve) if isinstance(curve, list) and curve else None,
        locales=_mapping(detail.get("locales")),
        frontier=on_frontier, replay=_replay(pack_path, folder, predictions),
        in_folder=not predictions or predictions.startswith(f"results/{folder}/"), links=tuple(links),
        has_detail=bool(e.detail))


def _heldout(report: Mapping[str, Any], backend: Backend, order: Sequence[str], link: str | None) -> Heldout:
    rows = []
    questions = _mapping(report.get("questions"))
    for qid in sorted(questions, key=lambda q: (order.index(q) if q in order else len(order), q)):
        locales = _mapping(_mapping(questions[qid]).get("locales"))
        for locale, m in sorted(locales.items()):
            if not isinstance(m, Mapping):
                continue
            rows.append({"question": qid, "locale": locale, "threshold": _num(m.get("threshold")),
                         "rule": _text(m.get("rule")) or "", "coverage": _rate(m.get("coverage")),
                         "precision": _rate(m.get("selective_precision"))})
    return Heldout(backend=backend.folder, mock=backend.mock or report.get("mode") == "mock",
                   source=_text(report.get("thresholds_source")) or "", rows=tuple(rows), link=link)


def _rate(value: Any) -> Mapping[str, Any]:
    value = value if isinstance(value, Mapping) else {}
    return {"value": _num(value.get("value")), "k": _int(value.get("k")), "n": _int(value.get("n")),
            "ci": _pair(value.get("ci"))}


def _entries(found: Sequence[tuple[Backend, Mapping[str, Any]]], current: str | None) -> list[_Entry]:
    """The results files of a split, grouped (ranked, older, mock) and in page order."""
    entries = []
    for backend, doc in found:
        version = _text(doc.get("pack_version"))
        detail = doc.get("detail") if isinstance(doc.get("detail"), Mapping) else None
        group = ("mock" if backend.mock or doc.get("mode") == "mock" else
                 "older" if current is not None and version != current else "ranked")
        entries.append(_Entry(backend, doc, group, _num(doc.get("accuracy")), detail, version))
    return _order(entries)


def _pairs(ranked: Sequence[_Entry]) -> tuple[dict[str, dict[str, Pair]], list[Pair]]:
    """Every pair of ranked columns, tested once (in rank order) and looked up both ways."""
    pairs: dict[str, dict[str, Pair]] = {}
    tested = []
    for i, a in enumerate(ranked):
        for b in ranked[i + 1:]:
            pair = _paired((a.backend.folder, a.detail), (b.backend.folder, b.detail))
            tested.append(pair)
            pairs.setdefault(a.backend.folder, {})[b.backend.folder] = pair
            pairs.setdefault(b.backend.folder, {})[a.backend.folder] = Pair(
                pair.second, pair.first, pair.c, pair.b, pair.n, pair.p, pair.why)
    return pairs, tested


def _frontier(ranked: Sequence[_Entry]) -> dict[str, bool]:
    costed = [(e.backend.folder, _num(e.doc.get("cost_per_case_usd")), e.accuracy) for e in ranked]
    drawn = [(folder, cost, acc) for folder, cost, acc in costed if cost is not None and acc is not None]
    return dict(zip((folder for folder, _, _ in drawn), frontier([(cost, acc) for _, cost, acc in drawn])))


def _cost_chart(columns: Sequence[Column]) -> dict[str, Any] | None:
    points = [{"key": str(c.key), "cost": c.cost, "accuracy": c.accuracy,
               "ci": list(c.accuracy_ci) if c.accuracy_ci else None, "frontier": c.frontier,
               "title": f"{c.backend.folder}: accuracy {c.accuracy:.3f}, "
                        + ("free" if c.cost == 0 else f"${c.cost:.6g} per case")}
              for c in columns if c.group == "ranked" and c.cost is not None and c.accuracy is not None]
    return charts.cost_accuracy(points) if points else None


def _split_block(pack: Any, pack_id: str, split: str, found: list[tuple[Backend, Mapping[str, Any]]],
                 reports: Mapping[str, tuple[Mapping[str, Any], str]], comparison: str | None,
                 backends: Mapping[str, Backend]) -> SplitBlock:
    current = pack.version if pack is not None else None
    cases = pack.splits[split].cases if pack is not None and split in pack.splits else ()
    questions = list(pack.questions) if pack is not None else []
    baseline = _baseline(cases, questions)
    entries = _entries(found, current)
    ranked = [e for e in entries if e.group == "ranked" and e.accuracy is not None]
    leader = ranked[0].backend.folder if len(ranked) >= 2 else None
    pairs, tested = _pairs(ranked)
    on_frontier = _frontier(ranked)
    columns = []
    for key, e in enumerate(entries, start=1):
        lead = pairs.get(leader or "", {}).get(e.backend.folder)
        standing = (("leader", "leader", "highest accuracy") if e.backend.folder == leader else
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
        heldout=tuple(_heldout(doc, backends.get(folder) or _placeholder(folder), questions, link)
                      for folder, (doc, link) in sorted(reports.items(),
                                                        key=lambda kv: _report_order(kv[0], columns))),
        comparison=comparison)


def _report_order(folder: str, columns: Sequence[Column]) -> tuple[int, str]:
    keys = [c.key for c in columns if c.backend.folder == folder]
    return (keys[0] if keys else len(columns) + 1, folder)


def _placeholder(folder: str) -> Backend:
    return Backend(folder=folder, name=folder, provider="", kind="", model="", endpoint="", license="",
                   pricing="", calibrated=None, notes="", record=None, mock=False, embedded=False)


def _load_pack(root: Path, pack_id: str) -> tuple[Any, str | None]:
    from ..packs import load_pack

    folder = root / "packs" / pack_id
    if not is_regular(folder / "pack.yaml"):
        return None, f"no pack folder packs/{pack_id}: the numbers below cannot be checked against a pack version"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_pack(folder), None
    except JevError as exc:
        return None, f"the pack does not load ({exc.one_line()}): pack version and cases unknown"


def _pack_block(root: Path, pack_id: str, backends: Mapping[str, Backend], problems: list[str]) -> PackBlock:
    pack, problem = _load_pack(root, pack_id)
    found: dict[str, list[tuple[Backend, Mapping[str, Any]]]] = {}
    reports: dict[str, dict[str, tuple[Mapping[str, Any], str]]] = {}
    comparison: dict[str, str] = {}
    for path in pack_inputs(root, pack_id):
        rel = _rel(path, root)
        if path.parent.name == "comparisons" and path.parent.parent == root / "results":
            comparison[path.name[len(pack_id) + 1:-5]] = _link(rel) or ""
            continue
        parsed = _split_of(path.name, pack_id) if path.parent.parent == root / "results" else None
        if parsed is None:
            continue
        doc = _read_json(path, problems, root)
        if doc is None:
            continue
        kind, split = parsed
        backend = backends[path.parent.name]
        if kind == "report":
            reports.setdefault(split, {})[backend.folder] = (doc, _link(rel) or "")
        elif _num(doc.get("n_items")) is None and "accuracy" not in doc:
            problems.append(f"{rel}: not a results file (no n_items, no accuracy); it is left out of the page")
        else:
            found.setdefault(split, []).append((backend, {**doc, "_file": rel}))
    names = list(pack.splits) if pack is not None and pack.declares_splits else [""]
    names += sorted(s for s in found if s not in names)
    blocks = tuple(_split_block(pack, pack_id, split, found.get(split, []), reports.get(split, {}),
                                comparison.get(split), backends)
                   for split in names if split in found or pack is not None)
    present = {b.folder for rows in found.values() for b, _ in rows}
    return PackBlock(
        id=pack_id, anchor=f"pack-{pack_id}", version=pack.version if pack else None,
        license=pack.license if pack else None,
        description=pack.description if pack else None,
        questions=tuple((q.id, q.type, len(q.labels)) for q in pack.questions.values()) if pack else (),
        locales=tuple(pack.locales) if pack else (), n_cases=len(pack.cases) if pack else None,
        link=_link(f"packs/{pack_id}") if pack else None, digest=pack_digest(root, pack_id), problem=problem,
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
    overview = tuple({"pack": p.id, "split": s.split, "anchor": s.anchor,
                      "n_cases": s.n_cases, "cells": {c.backend.folder: c for c in s.columns}}
                     for p in packs for s in p.splits)
    return Board(
        packs=tuple(packs), backends=listed, no_column=no_column,
        embedded=tuple(sorted({EMBEDDED_KINDS[b.kind] for b in listed if b.embedded and b.packs})),
        embedded_range=(min(embedded_acc), max(embedded_acc)) if embedded_acc else None,
        total_cases=sum(p.n_cases or 0 for p in packs),
        dates=tuple(sorted({c.recorded_at for p in packs for s in p.splits for c in s.columns if c.recorded_at})),
        problems=tuple(problems), overview=overview, overview_backends=overview_backends)
