"""The scoreboard, docs/index.html (pytest_jev/registry/board.py, scoreboard.py, stats.py).

Unit tests run on small registries written here: two packs (`alpha`, one yes/no question and 100
cases; `beta`, spec 1 with tune/heldout splits in two locales) and six backend folders whose
results files are written by hand, so every accuracy, discordant pair and cost is known:

    folder        alpha accuracy  cost   detail  what it is
    a-best        0.80            0.01   yes     the leader
    b-close       0.78            0.001  yes     4 / 2 discordant items with a-best: tied
    c-free        0.50            0      yes     35 / 5 discordant with a-best: below; embedded (sparrow)
    e-jevassert   0.70            0.02   no      a jevassert-written file: not testable, dominated
    d-old         0.99            0      yes     recorded on pack version 0.1.0: never ranked
    mock-1        0.95            0      yes     mode mock: never ranked

Browser tests load the written page in a real headless chromium (file://) and read its DOM, its
console, its network log and a screenshot. The compat test replays the seed registry's corpus
(../shared/compat/jev-packs) and checks that every published number is reproduced and shown.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from conftest import COMPAT
from pytest_jev.cli import main
from pytest_jev.registry import charts
from pytest_jev.registry.board import Board, Column, SplitBlock, build, pack_digest
from pytest_jev.registry.scoreboard import (
    pack_stale_problem,
    render_scoreboard,
    stale_problem,
    write_scoreboard,
)
from pytest_jev.stats import frontier, mcnemar_exact, pair_counts

REPO = Path(__file__).resolve().parents[1]
HOSTILE = "<script>alert(1)</script>"
BOLD = "<b>x</b>"

# --- the synthetic registry --------------------------------------------------------------------

PACK = """\
spec: {spec}
id: {id}
version: {version}
license: CC0-1.0
tested: null
description: "{description}"
state:
  description: One message.
  fields: [message]
questions:
  ok:
    type: noul
    instructions: "Is the message fine?"
thresholds:
  ok: {{true: 0.8, false: 0.8}}
{splits}"""


def write_pack(root: Path, pack_id: str, n: int = 100, *, description: str = "A test pack.",
               splits: tuple[str, ...] = ()) -> list[str]:
    """A one-question pack; with `splits`, spec 1 with n/2 cases per locale (en, vi) per split.
    Returns the case ids, in file order."""
    folder = root / "packs" / pack_id
    folder.mkdir(parents=True)
    (folder / "README.md").write_text("Test pack.\n")
    (folder / "CHANGELOG.md").write_text("0.2.0\n")

    def lines(prefix: str, locale: bool) -> list[dict[str, Any]]:
        return [{"id": f"{prefix}-{i:03d}", "state": {"message": f"m{i}"}, "expect": {"ok": i % 2 == 0},
                 **({"locale": "en" if i < n // 2 else "vi"} if locale else {})} for i in range(n)]

    ids: list[str] = []
    declared = []
    for split in splits or ("",):
        cases = lines(f"{pack_id}-{split}" if split else pack_id, bool(splits))
        data = "".join(json.dumps(c) + "\n" for c in cases).encode()
        (folder / (f"{split}.jsonl" if split else "cases.jsonl")).write_bytes(data)
        ids += [c["id"] for c in cases]
        if split:
            declared.append(f"  {split}: {{file: {split}.jsonl, sha256: {hashlib.sha256(data).hexdigest()}, "
                            f"lines: {len(cases)}}}")
    (folder / "pack.yaml").write_text(PACK.format(
        spec=1 if splits else 0, id=pack_id, version="0.2.0", description=description,
        splits="splits:\n" + "\n".join(declared) + "\n" if splits else ""))
    return ids


def marks(n: int, right: set[int]) -> str:
    return "".join("1" if i in right else "0" for i in range(n))


def results(pack: str, backend: str, ids: list[str], right: set[int], *, cost: float | None = 0.0,
            version: str = "0.2.0", mode: str = "live", split: str = "", detail: bool = True,
            locales: dict[str, Any] | None = None) -> dict[str, Any]:
    """A results file as --jev-write-results writes it (or, detail=False, as jevassert does)."""
    n = len(ids)
    acc = len(right) / n
    doc: dict[str, Any] = {
        "pack": pack, "n_cases": n, "n_items": n, "case_errors": 0, "missing_items": 0, "accuracy": acc,
        "accuracy_ci": [acc - 0.05, acc + 0.05], "ece": 0.1, "ece_ci": [0.05, 0.15], "cost_per_case_usd": cost,
        "p50_latency_ms": 120.0, "p95_latency_ms": 480.5, "per_question": {}, "coverage": [],
        "threshold_coverage": {"n_total": n, "n_auto": n // 4, "coverage": 0.25, "precision": 0.9},
        "gates": [], "recorded_models": [backend], "pack_version": version, "backend": backend,
        "predictions": f"results/{backend}/{pack}.predictions.jsonl", "predictions_sha256": "ab" * 32,
        "recorded_at": "2026-11-30"}
    if detail:
        by_case = {cid: marks(1, {0} if k in right else set()) for k, cid in enumerate(ids)}
        doc.update(kind="jev-packs results", mode=mode, split=split or None, detail={
            "reliability": [{"lo": 0.5, "hi": 0.6, "n": n // 2, "mean_p": 0.55, "accuracy": acc},
                            {"lo": 0.9, "hi": 1.0, "n": n - n // 2, "mean_p": 0.95, "accuracy": acc}],
            "curve": [{"t": t / 100, "coverage": 1 - (t - 50) / 50, "precision": acc} for t in range(50, 100)],
            "locales": locales or {}, "questions": ["ok"], "correct": by_case})
    return doc


def write_backend(root: Path, folder: str, **info: Any) -> Path:
    path = root / "results" / folder
    path.mkdir(parents=True, exist_ok=True)
    base = {"id": folder, "provider": "test provider", "backend": "openai-ish", "model": folder,
            "endpoint": "in-process", "license": "CC0-1.0",
            "pricing": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0}, "calibrated": False,
            "notes": "", "reproduce": f"pytest packs/ --jev-record --jev-backend={folder}"}
    (path / "backend.json").write_text(json.dumps({**base, **info}, indent=2))
    return path


def write_json(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n")


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    root = tmp_path / "reg"
    alpha = write_pack(root, "alpha", description=f"Alpha pack {BOLD} {HOSTILE}")
    beta = write_pack(root, "beta", 40, splits=("tune", "heldout"))
    a, b, c = set(range(80)), set(range(76)) | {80, 81}, set(range(45)) | set(range(80, 85))
    folders: dict[str, tuple[dict[str, Any], set[int], float]] = {
        "a-best": ({}, a, 0.01), "b-close": ({}, b, 0.001),
        "c-free": ({"backend": "sparrow", "notes": f"{HOSTILE} and {BOLD}", "provider": BOLD}, c, 0.0),
        "e-jevassert": ({"provider": "anthropic", "calibrated": None}, set(range(70)), 0.02),
        "d-old": ({}, set(range(99)), 0.0), "mock-1": ({"backend": "mock"}, set(range(95)), 0.0)}
    for folder, (info, right, cost) in folders.items():
        out = write_backend(root, folder, **info)
        write_json(out / "alpha.json", results(
            "alpha", folder, alpha, right, cost=cost, detail=folder != "e-jevassert",
            version="0.1.0" if folder == "d-old" else "0.2.0", mode="mock" if folder == "mock-1" else "live"))
    for folder in ("a-best", "c-free", "mock-1"):
        for split, ids in (("tune", beta[:40]), ("heldout", beta[40:])):
            right = set(range(30 if folder != "c-free" else 20))
            locales = {"en": {"n_items": 20, "correct": 15, "accuracy": 0.75, "accuracy_ci": [0.53, 0.89],
                              "n_cases": 20},
                       "vi": {"n_items": 20, "correct": 15, "accuracy": 0.75, "accuracy_ci": [0.53, 0.89],
                              "n_cases": 20}}
            write_json(root / "results" / folder / f"beta.{split}.json", results(
                "beta", folder, ids, right, split=split, locales=locales,
                mode="mock" if folder == "mock-1" else "live"))
    write_json(root / "results" / "a-best" / "beta.report.heldout.json", {
        "kind": "jev-packs protocol report", "mode": "live", "thresholds_source": "frozen thresholds.json",
        "questions": {"ok": {"type": "noul", "locales": {
            "en": {"threshold": 0.74, "rule": "decided at p >= threshold",
                   "coverage": {"value": 0.5, "k": 10, "n": 20, "ci": [0.3, 0.7]},
                   "selective_precision": {"value": 0.9, "k": 9, "n": 10, "ci": [0.6, 0.98]}},
            "vi": {"threshold": None, "rule": "abstain",
                   "coverage": {"value": 0.0, "k": 0, "n": 20, "ci": [0.0, 0.16]},
                   "selective_precision": {"value": None, "k": 0, "n": 0, "ci": None}}}}}})
    write_json(root / "results" / "a-best" / "beta.thresholds.json", {"kind": "thresholds"})  # not an input
    return root


def block(board: Board, pack: str, split: str = "") -> SplitBlock:
    return next(s for p in board.packs if p.id == pack for s in p.splits if s.split == split)


def column(split: SplitBlock, folder: str) -> Column:
    return next(c for c in split.columns if c.backend.folder == folder)


# --- statistics ----------------------------------------------------------------------------------

CASES = [(b, c) for b in range(0, 41, 3) for c in range(0, 41, 4)] + [
    (0, 0), (1, 0), (0, 1), (5, 5), (6, 5), (268, 203), (35, 5), (500, 440), (1200, 1100), (3000, 2)]


def exact_mcnemar(b: int, c: int) -> float:
    """The reference: two-sided exact McNemar as a sum of binomial coefficients in integers
    (with p = 0.5 the distribution is symmetric, so the p-value is min(1, 2 * P(X <= min(b, c))))."""
    n, k = b + c, min(b, c)
    if n == 0 or 2 * k == n:
        return 1.0
    return min(1.0, float(Fraction(2 * sum(math.comb(n, i) for i in range(k + 1)), 2**n)))


@pytest.mark.parametrize(("b", "c"), CASES)
def test_mcnemar_exact_equals_an_exact_integer_sum(b: int, c: int) -> None:
    expected = exact_mcnemar(b, c)
    assert abs(mcnemar_exact(b, c) - expected) <= 1e-12
    assert mcnemar_exact(b, c) == mcnemar_exact(c, b)


def test_mcnemar_refuses_negative_counts() -> None:
    with pytest.raises(ValueError, match="b=-1"):
        mcnemar_exact(-1, 3)


def test_pair_counts_pair_only_items_both_answered() -> None:
    first = {"x": "10-", "y": "01", "z": "11"}
    second = {"x": "011", "y": "-1", "w": "00"}  # z absent, w unknown to first
    assert pair_counts(first, second) == (1, 1, 3)  # x: (1,0) b, (0,1) c; y: (1,1); '-' never pairs


def test_frontier_keeps_the_cheaper_and_better_points() -> None:
    points = [(0.0, 0.5), (0.001, 0.78), (0.01, 0.8), (0.02, 0.7), (0.01, 0.8), (0.0, 0.4)]
    assert frontier(points) == [True, True, True, False, True, False]  # equal twins both stay


# --- the board -----------------------------------------------------------------------------------

def test_columns_are_ranked_by_accuracy_with_mock_and_older_versions_apart(registry: Path) -> None:
    alpha = block(build(registry), "alpha")
    assert [c.backend.folder for c in alpha.columns] == ["a-best", "b-close", "e-jevassert", "c-free", "d-old",
                                                         "mock-1"]
    assert [c.group for c in alpha.columns] == ["ranked"] * 4 + ["older", "mock"]
    assert [c.key for c in alpha.columns] == [1, 2, 3, 4, 5, 6]
    assert alpha.leader == "a-best"  # not mock-1 (0.95) nor d-old (0.99): they are never ranked
    assert alpha.ranked == ("a-best", "b-close", "e-jevassert", "c-free")


def test_ties_with_the_leader_come_from_exact_mcnemar_on_the_per_case_marks(registry: Path) -> None:
    alpha = block(build(registry), "alpha")
    standing = {c.backend.folder: c.standing for c in alpha.columns}
    assert standing == {"a-best": "leader", "b-close": "tied", "e-jevassert": "untested", "c-free": "below",
                        "d-old": "older", "mock-1": "mock"}
    close = alpha.pairs["a-best"]["b-close"]
    assert (close.b, close.c, close.n) == (4, 2, 100)
    assert close.p == mcnemar_exact(4, 2) and close.p >= 0.05
    far = alpha.pairs["a-best"]["c-free"]
    assert (far.b, far.c) == (35, 5) and far.p is not None and far.p < 0.001
    assert alpha.pairs["c-free"]["a-best"].b == 5  # the mirrored pair swaps b and c
    assert alpha.pairs["a-best"]["e-jevassert"].why == "no per-case detail"
    assert alpha.tied == ("b-close",) and alpha.below == ("c-free",) and alpha.untested == ("e-jevassert",)
    assert len(alpha.pair_list) == 6  # 4 ranked columns, each pair once


def add_skewed_pack(root: Path) -> None:
    """`gamma`: 80 of 100 gold labels are `true`, so always answering true scores 0.80; both live
    backends score less (0.60 and 0.50)."""
    ids = write_pack(root, "gamma")
    cases = root / "packs/gamma/cases.jsonl"
    rows = [json.loads(line) for line in cases.read_text().splitlines()]
    for i, row in enumerate(rows):
        row["expect"]["ok"] = i < 80
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for folder, right in (("a-best", set(range(60))), ("b-close", set(range(50)))):
        write_json(root / "results" / folder / "gamma.json", results("gamma", folder, ids, right, cost=0.01))


def test_a_backend_below_the_baseline_leads_nothing(registry: Path) -> None:
    add_skewed_pack(registry)
    board = build(registry)
    gamma = block(board, "gamma")
    assert gamma.baseline == 0.8 and gamma.leader is None
    assert gamma.no_leader == ("no backend beats the majority-label baseline (0.800): the most accurate, a-best, "
                               "has 0.600")
    assert {c.backend.folder: (c.standing, c.standing_label, c.standing_note) for c in gamma.columns} == {
        "a-best": ("nobeat", "below baseline", "accuracy 0.600, baseline 0.800"),
        "b-close": ("nobeat", "below baseline", "accuracy 0.500, baseline 0.800")}
    assert gamma.tied == () and gamma.below == ()
    assert block(board, "alpha").leader == "a-best"  # 0.80 against a 0.50 baseline: a leader
    page = render_scoreboard(registry)
    assert "<strong>No leader</strong>: no backend beats the majority-label baseline (0.800)" in page


def test_a_leader_below_the_baseline_in_a_browser(registry: Path, tmp_path: Path) -> None:
    add_skewed_pack(registry)
    write_scoreboard(registry)
    dom = check_in_browser(registry, tmp_path)
    text = " ".join("".join(dom.text).split())
    assert ("No leader: no backend beats the majority-label baseline (0.800): the most accurate, a-best, "
            "has 0.600.") in text
    assert "below baseline" in dom.rows[("gamma", "", "a-best")] and "leader" not in dom.rows[("gamma", "", "a-best")]
    assert "leader" in dom.rows[("alpha", "", "a-best")]
    shot = tmp_path / "gamma.png"
    run = browse(registry / "docs" / "index.html", tmp_path, f"--screenshot={shot}", "--hide-scrollbars",
                 height=6000)
    assert run.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("JEV_KEEP_SCREENSHOT"):  # to look at it: JEV_KEEP_SCREENSHOT=/some/folder
        shutil.copy(shot, Path(os.environ["JEV_KEEP_SCREENSHOT"]) / "gamma.png")


def test_cost_frontier_and_its_chart(registry: Path) -> None:
    alpha = block(build(registry), "alpha")
    assert {c.backend.folder: c.frontier for c in alpha.columns if c.group == "ranked"} == {
        "a-best": True, "b-close": True, "c-free": True, "e-jevassert": False}
    chart = alpha.cost_chart
    assert chart is not None
    points = {p["key"]: p for p in chart["points"]}
    assert set(points) == {"1", "2", "3", "4"}  # ranked only: no older, no mock point
    free = chart["free"]
    assert free["x0"] < points["4"]["x"] < free["x1"]  # c-free sits in the "free" band at the left edge
    assert free["x1"] < points["2"]["x"] < points["1"]["x"] < points["3"]["x"]  # log cost grows to the right
    assert points["1"]["y"] < points["4"]["y"]  # more accurate is higher
    assert [t["label"] for t in chart["xticks"]] == ["$0.001", "$0.01", "$0.1"]


def test_marks_name_mock_older_uncalibrated_and_missing_detail(registry: Path) -> None:
    alpha = block(build(registry), "alpha")
    kinds = {c.backend.folder: [m.text for m in c.marks] for c in alpha.columns}
    assert kinds["mock-1"][0] == "mock: harness check"
    assert "pack v0.1.0" in kinds["d-old"]
    assert "uncalibrated" in kinds["a-best"]
    assert "calibration not declared" in kinds["e-jevassert"] and "no per-case detail" in kinds["e-jevassert"]
    assert column(alpha, "e-jevassert").reliability is None and column(alpha, "a-best").reliability is not None


def test_splits_locales_heldout_reports_and_notices(registry: Path) -> None:
    board = build(registry)
    beta = next(p for p in board.packs if p.id == "beta")
    assert [s.split for s in beta.splits] == ["tune", "heldout"]
    assert beta.n_cases == 80 and block(board, "beta", "tune").n_cases == 40
    heldout = block(board, "beta", "heldout")
    assert heldout.locale_names == ("en", "vi")
    assert [h.backend for h in heldout.heldout] == ["a-best"]
    rows = heldout.heldout[0].rows
    assert [(r.locale, r.threshold) for r in rows] == [("en", 0.74), ("vi", None)]
    assert block(board, "beta", "tune").heldout == ()  # reports are shown for the held-out split only
    assert beta.absent == ("b-close", "d-old", "e-jevassert")
    # data-driven notices: e-jevassert's provider is anthropic, so only Jev and local LLMs lack a column
    assert [k["name"].split(" ")[0] for k in board.no_column] == ["Jev", "local"]
    assert board.embedded == ("sparrow",) and board.embedded_range == (0.5, 0.5)
    assert board.total_cases == 180


def test_pack_inputs_digest_changes_with_its_inputs_only(registry: Path) -> None:
    alpha, beta = pack_digest(registry, "alpha"), pack_digest(registry, "beta")
    (registry / "results" / "a-best" / "beta.thresholds.json").write_text("{}")  # not shown: not an input
    assert pack_digest(registry, "beta") == beta
    path = registry / "results" / "b-close" / "alpha.json"
    path.write_text(path.read_text().replace('"accuracy": 0.78', '"accuracy": 0.79'))
    assert pack_digest(registry, "alpha") != alpha
    assert pack_digest(registry, "beta") == beta


# --- the page --------------------------------------------------------------------------------------

def test_the_page_is_deterministic_and_independent_of_where_the_registry_lives(registry: Path,
                                                                               tmp_path: Path) -> None:
    first = render_scoreboard(registry)
    assert render_scoreboard(registry) == first
    moved = tmp_path / "elsewhere" / "registry"
    shutil.copytree(registry, moved)
    assert render_scoreboard(moved) == first
    assert str(tmp_path) not in first


def test_data_reaches_the_page_as_text_only(registry: Path) -> None:
    page = render_scoreboard(registry)
    assert HOSTILE not in page and BOLD not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # backend notes and pack description, as text
    assert "&lt;b&gt;x&lt;/b&gt;" in page
    assert "<script" not in page.lower()  # and the page has no script of its own


def test_the_page_shows_ranks_ties_marks_and_provenance(registry: Path) -> None:
    page = render_scoreboard(registry)
    section = re.search(r'<section class="pack" id="pack-alpha".*?</section>', page, re.S)
    assert section is not None
    alpha = section.group(0)
    rows = re.findall(r'<tr class="col g-(\w+) st-(\w+)" data-pack="alpha" data-split="" data-backend="([\w-]+)"',
                      alpha)
    assert rows == [("ranked", "leader", "a-best"), ("ranked", "tied", "b-close"),
                    ("ranked", "untested", "e-jevassert"), ("ranked", "below", "c-free"),
                    ("older", "older", "d-old"), ("mock", "mock", "mock-1")]
    assert "McNemar p = 0.688" in alpha  # mcnemar_exact(4, 2) = 0.6875
    assert "Harness check: mock oracle, not a model, never ranked" in alpha
    assert "100 cases" in alpha and "480 ms" in alpha and "one run" in alpha
    assert "pytest packs/alpha --jev-replay --jev-backend=a-best --jev-write-results" in alpha
    assert "sha256 <code>abababababab…</code>" in alpha
    assert "No column yet for Jev (TypeSafe System One API), local LLMs" in page
    assert "The embedded backends (sparrow) are near chance" in page


def test_staleness_of_the_page_and_of_each_pack_block(registry: Path) -> None:
    assert stale_problem(registry) == "docs/index.html: missing; regenerate it with `jev-packs scoreboard`"
    assert pack_stale_problem(registry, "alpha") is not None
    write_scoreboard(registry)
    assert stale_problem(registry) is None
    assert pack_stale_problem(registry, "alpha") is None and pack_stale_problem(registry, "beta") is None
    path = registry / "results" / "c-free" / "beta.heldout.json"
    doc = json.loads(path.read_text())
    doc["accuracy"] = 0.61
    write_json(path, doc)
    problem = stale_problem(registry)
    assert problem is not None and problem.startswith("docs/index.html: stale")
    assert "jev-packs scoreboard" in problem and "\n" not in problem
    beta = pack_stale_problem(registry, "beta")
    assert beta is not None and "block of pack beta is stale" in beta and "jev-packs scoreboard" in beta
    assert pack_stale_problem(registry, "alpha") is None  # the other pack's block is still current
    write_scoreboard(registry)
    assert stale_problem(registry) is None and pack_stale_problem(registry, "beta") is None


def test_cli_writes_and_checks(registry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scoreboard", "--root", str(registry), "--check"]) == 1
    assert not (registry / "docs" / "index.html").exists()  # --check writes nothing
    assert main(["scoreboard", "--root", str(registry)]) == 0
    written = (registry / "docs" / "index.html").read_bytes()
    assert written == render_scoreboard(registry).encode()
    assert main(["scoreboard", "--root", str(registry), "--check"]) == 0
    (registry / "results" / "a-best" / "alpha.json").write_text("{}")
    capsys.readouterr()
    assert main(["scoreboard", "--root", str(registry), "--check"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "docs/index.html: stale" in err
    assert (registry / "docs" / "index.html").read_bytes() == written


def test_an_unreadable_results_file_is_named_on_the_page_not_a_crash(registry: Path) -> None:
    (registry / "results" / "b-close" / "alpha.json").write_text("{not json")
    page = render_scoreboard(registry)
    assert "results/b-close/alpha.json: cannot be read" in page
    alpha = re.search(r'id="pack-alpha".*?</section>', page, re.S)
    assert alpha is not None and 'data-backend="b-close"' not in alpha.group(0)


def test_interval_rows_share_one_axis() -> None:
    low, high = charts.interval_row(0.1, 0.2, 0.3), charts.interval_row(0.6, 0.7, 0.8, baseline=0.5)
    assert low["grid"] == high["grid"] and low["x2"] < high["x1"]
    assert low["x1"] < low["cx"] < low["x2"] and high["base"] == charts.interval_row(None, 0.5, None)["cx"]
    assert charts.interval_row(None, None, None)["cx"] is None


# --- the page in a real browser --------------------------------------------------------------------

BROWSERS = [found for found in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if found]


def chromium() -> str:
    if BROWSERS:
        return BROWSERS[0]
    why = "no chromium on PATH (apt-get install -y chromium)"
    if os.environ.get("JEV_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{why}; JEV_REQUIRE_BROWSER=1 requires the browser tests", pytrace=False)
    pytest.skip(f"{why}; set JEV_REQUIRE_BROWSER=1 to make this a failure")


def browse(page: Path, tmp: Path, *args: str, width: int = 1280,
           height: int = 2000) -> subprocess.CompletedProcess[str]:
    """Headless chromium on the page (file://): no GPU, no sandbox (root in a container), its own
    profile, every host name unresolvable, console messages on stderr."""
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    command = [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND",
               "--enable-logging=stderr", "--v=0", f"--window-size={width},{height}", *args, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, check=False)


def console_problems(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if any(word in line for word in ("CONSOLE", "Uncaught",
                                                                                  "Refused to load"))]


def page_requests(net_log: Path) -> list[str]:
    """URLs the page itself asked for over the network (chromium's own background requests carry no
    file:// isolation key)."""
    log = json.loads(net_log.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [event["params"]["url"] for event in log["events"]
            if event["type"] == start and "file://" in str(event["params"].get("network_isolation_key", ""))
            and not event["params"]["url"].startswith("file:")]


class Dom(HTMLParser):
    """Start tags with their attributes, and the visible text of each scoreboard row (no SVG text)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.rows: dict[tuple[str, str, str], str] = {}
        self.text: list[str] = []
        self._row: tuple[str, str, str] | None = None
        self._svg = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append((tag, found))
        self._svg += tag == "svg"
        if tag == "tr" and "data-backend" in found and "data-pack" in found:
            self._row = (str(found["data-pack"]), str(found.get("data-split") or ""), str(found["data-backend"]))
            self.rows[self._row] = ""

    def handle_endtag(self, tag: str) -> None:
        self._svg -= tag == "svg"
        if tag == "tr":
            self._row = None

    def handle_data(self, data: str) -> None:
        if not self._svg:
            self.text.append(data)
            if self._row is not None:
                self.rows[self._row] += data


def parse(html: str) -> Dom:
    dom = Dom()
    dom.feed(html)
    return dom


def external_references(dom: Dom, html: str) -> list[str]:
    """Anything that would make the browser fetch from the network: a src/href/... to http(s) or
    //host, other than a plain link (<a href>), and CSS imports or remote url()s."""
    found = [f"<{tag} {name}={value}>" for tag, attrs in dom.tags for name, value in attrs.items()
             if name in ("src", "href", "xlink:href", "srcset", "poster", "data", "action")
             and re.match(r"\s*(https?:)?//", value or "") and not (tag == "a" and name == "href")]
    found += [tag for tag, _ in dom.tags if tag in ("script", "link", "iframe", "object", "embed")]
    lowered = html.lower()
    found += [needle for needle in ("<script src", "<link href=http", "<img src=http", "@import", "url(http",
                                    "url(//") if needle in lowered]
    return found


def expected_cells(root: Path) -> set[tuple[str, str, str]]:
    """(pack, split, backend) of every results file, read from the file names alone."""
    cells = set()
    for path in (root / "results").glob("*/*.json"):
        parts = path.name[:-5].split(".")
        if path.name == "backend.json" or not (path.parent / "backend.json").is_file():
            continue
        if len(parts) == 1 or (len(parts) == 2 and parts[1] not in ("thresholds",)):
            cells.add((parts[0], parts[1] if len(parts) == 2 else "", path.parent.name))
    return cells


def check_in_browser(root: Path, tmp: Path) -> Dom:
    """Load root's docs/index.html in chromium; fail on console messages, network requests, a
    missing backend x pack row, or a page wider than the narrowest headless window."""
    page = root / "docs" / "index.html"
    html = page.read_text(encoding="utf-8")
    assert external_references(parse(html), html) == []
    net_log = tmp / "net.json"
    run = browse(page, tmp, "--dump-dom", f"--log-net-log={net_log}")
    assert run.returncode == 0, run.stderr[-2000:]
    assert console_problems(run.stderr) == []
    assert page_requests(net_log) == []
    dom = parse(run.stdout)
    assert set(dom.rows) >= expected_cells(root), "rows missing from the page"
    assert not [tag for tag, _ in dom.tags if tag == "script"]
    ids = [str(attrs["id"]) for _, attrs in dom.tags if "id" in attrs]
    assert len(ids) == len(set(ids)), "two elements share an id"
    targets = {str(attrs["href"])[1:] for tag, attrs in dom.tags
               if tag == "a" and str(attrs.get("href")).startswith("#")}
    assert targets <= set(ids), f"links to no element: {sorted(targets - set(ids))}"
    # the narrowest window headless chromium lays out (500 px): the page itself never scrolls sideways
    probe = page.with_name("probe.html")
    probe.write_text(html.replace("</body>", '<script>document.body.dataset.width = '
                                  'document.documentElement.scrollWidth + "/" + window.innerWidth;</script></body>'))
    narrow = browse(probe, tmp, "--dump-dom", width=390, height=800)
    width, viewport = map(int, re.search(r'data-width="(\d+)/(\d+)"', narrow.stdout).groups())  # type: ignore[union-attr]
    assert width <= viewport
    return dom


def test_the_detectors_of_the_browser_test_catch_a_bad_page(tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text('<!doctype html><html><head><link rel="stylesheet" href="https://example.com/x.css"></head>'
                   '<body><img src="https://example.com/a.png"><script>console.log("hi")</script></body></html>')
    net_log = tmp_path / "net.json"
    run = browse(bad, tmp_path, "--dump-dom", f"--log-net-log={net_log}")
    assert sorted(page_requests(net_log)) == ["https://example.com/a.png", "https://example.com/x.css"]
    assert console_problems(run.stderr)
    html = bad.read_text()
    assert len(external_references(parse(html), html)) >= 3


def test_the_page_in_a_browser(registry: Path, tmp_path: Path) -> None:
    write_scoreboard(registry)
    dom = check_in_browser(registry, tmp_path)
    assert ("beta", "heldout", "mock-1") in dom.rows and ("alpha", "", "d-old") in dom.rows
    text = "".join(dom.text)
    assert HOSTILE in text and BOLD in text  # the hostile strings are text in the rendered DOM
    assert "0.800" in dom.rows[("alpha", "", "a-best")] and "tied with leader" in dom.rows[("alpha", "", "b-close")]
    shot = tmp_path / "page.png"
    run = browse(registry / "docs" / "index.html", tmp_path, f"--screenshot={shot}", "--hide-scrollbars")
    assert run.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 50_000  # a blank page of that size is about 12 kB


def test_this_repository_page_in_a_browser(tmp_path: Path) -> None:
    """The repo's own registry (packs/ and results/), rendered into a copy so nothing is written here."""
    root = tmp_path / "repo"
    for name in ("packs", "results"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("*.predictions*.jsonl",
                                                                                "*.results.*.jsonl"))
    write_scoreboard(root)
    dom = check_in_browser(root, tmp_path)
    assert expected_cells(root) and set(dom.rows) >= expected_cells(root)
    # each pack's detectable difference, in the overview and in its block, and beside every tie
    board = build(root)
    shown = {str(attrs["data-detectable"]) for tag, attrs in dom.tags if "data-detectable" in attrs}
    sentences = {str(attrs["data-power"]) for tag, attrs in dom.tags if "data-power" in attrs}
    splits = {p.id + (f"::{s.split}" if s.split else ""): s for p in board.packs for s in p.splits}
    assert shown == sentences == set(splits) and len(splits) >= 9
    text = " ".join("".join(dom.text).split())
    for split in splits.values():
        assert split.power is not None and split.power.detectable_difference is not None
        assert f"tells accuracy differences of {100 * split.power.detectable_difference:.1f} pp or more" in text
    ties = [(p.id, s.split, c.backend.folder, s.pairs[s.leader][c.backend.folder]) for p in board.packs
            for s in p.splits for c in s.columns if c.standing == "tied" and s.leader]
    assert ties, "the committed registry has ties"
    for pack, split, backend, pair in ties:
        assert pair.detectable is not None
        assert f"this pack cannot tell differences below {100 * pair.detectable:.1f} pp" in dom.rows[
            (pack, split, backend)]
    shot = tmp_path / "page.png"
    run = browse(root / "docs" / "index.html", tmp_path, f"--screenshot={shot}", "--hide-scrollbars")
    assert run.returncode == 0 and shot.stat().st_size > 50_000
    if os.environ.get("JEV_KEEP_SCREENSHOT"):  # to look at the page: JEV_KEEP_SCREENSHOT=/tmp/board.png
        shutil.copy(shot, os.environ["JEV_KEEP_SCREENSHOT"])


# --- the seed registry's corpus --------------------------------------------------------------------

def replay(root: Path, *args: str) -> None:
    run = subprocess.run([sys.executable, "-m", "pytest", "packs/", "--jev-replay", "--jev-write-results", "-q",
                          "-p", "no:randomly", "-p", "no:cacheprovider", *args],
                         cwd=root, capture_output=True, text=True, timeout=300, check=False)
    assert "registry file(s) written" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]


def test_compat_corpus_as_published_renders_without_detail() -> None:
    """jevassert's results files lack the registry's detail: every column is shown, marked, and
    neither charted nor tested, and the page says so."""
    if not COMPAT.is_dir():
        pytest.skip(f"the compatibility corpus is not at {COMPAT}")
    board = build(COMPAT)
    columns = [c for p in board.packs for s in p.splits for c in s.columns]
    assert {(c.backend.folder, c.has_detail) for c in columns} == {
        ("jev-1.13.0", False), ("claude-sonnet-5", False), ("qwen2.5-7b-ollama", False)}
    assert all(c.reliability is None and "no per-case detail" in [m.text for m in c.marks] for c in columns)
    sms = block(board, "sms-spam")
    assert [p.why for p in sms.pair_list] == ["no per-case detail"] * 3
    assert sms.leader == "jev-1.13.0" and sms.untested == ("claude-sonnet-5", "qwen2.5-7b-ollama")
    page = render_scoreboard(COMPAT)
    assert page.count("No charts: this results file carries no per-case detail") == len(columns)
    assert "$0.0015" in page and "$0.000014" in page  # cost per case of Sonnet and Jev on sms-spam


@pytest.mark.slow
def test_compat_corpus_numbers_are_reproduced_and_shown(tmp_path: Path) -> None:
    if not COMPAT.is_dir():
        pytest.skip(f"the compatibility corpus is not at {COMPAT}")
    root = tmp_path / "jev-packs"
    shutil.copytree(COMPAT, root)
    (root / "pytest.ini").write_text("[pytest]\n")  # rootdir here; the plugin loads from its entry point
    published = {path.relative_to(COMPAT).as_posix(): json.loads(path.read_text())
                 for path in sorted(COMPAT.glob("results/*/*.json")) if path.name != "backend.json"}
    assert published
    # jev-1.13.0's recordings are the spec-v0 ones in the pack folders (the pinned model's place, found
    # through its results folder); the other backends keep theirs in their results folders
    for folder in sorted({name.split("/")[1] for name in published}):
        replay(root, f"--jev-backend={folder}")
    page = write_scoreboard(root)
    dom = parse(page.read_text(encoding="utf-8"))
    for name, doc in published.items():
        written = json.loads((root / name).read_text())
        for key in ("accuracy", "accuracy_ci", "ece", "ece_ci"):
            assert written[key] == doc[key], f"{name}: {key} is {written[key]}, published {doc[key]}"
        assert written.get("detail"), f"{name}: no detail written"
        row = dom.rows[(doc["pack"], "", name.split("/")[1])]
        for shown in (f"{doc['accuracy']:.3f}", f"{doc['accuracy_ci'][0]:.3f}–{doc['accuracy_ci'][1]:.3f}",
                      f"{doc['ece']:.3f}", f"{doc['ece_ci'][0]:.3f}–{doc['ece_ci'][1]:.3f}"):
            assert shown in row, f"{name}: {shown} not in its row: {row!r}"
    board = build(root)
    sms = block(board, "sms-spam")
    assert len(sms.ranked) == 3 and all(p.p is not None for p in sms.pair_list)  # paired item by item
    assert {c.standing for c in sms.columns} <= {"leader", "tied", "below"}
    assert board.no_column == ()  # Jev, Claude and a local LLM all have a column there
    if BROWSERS or os.environ.get("JEV_REQUIRE_BROWSER") == "1":  # the numbers above hold without a browser
        check_in_browser(root, tmp_path)
