"""The registry's own packs keep the rules a registry pack promises (issue: label quality as a
number): balanced labels, abstention in the gold, no repeated state, an audit in the README,
count tables in the README that agree with the cases, both embedded recordings committed, and
gates no looser than the sparrow evidence gives."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from readme_counts import check as recount

from conftest import COMPAT, COMPAT_MISSING
from pytest_jev.formats.run_json import ResultsFile, RunObject
from pytest_jev.packs import load_pack
from pytest_jev.packs.model import Pack
from pytest_jev.packs.yamlfile import read_yaml
from pytest_jev.registry.derive import baseline, derive, looser
from pytest_jev.registry.gates_files import in_process

ROOT = Path(__file__).resolve().parents[1]
PACKS = sorted(p.parent for p in (ROOT / "packs").glob("*/pack.yaml"))
EMBEDDED = ("sparrow-0.2.0-nano-general-v1.1", "minilm-l6-int8-zeroshot-1.0.0")
IDS = [p.name for p in PACKS]


@pytest.fixture(scope="module", params=PACKS, ids=IDS)
def pack(request: pytest.FixtureRequest) -> Pack:
    return load_pack(request.param)


def test_the_registry_ships_eight_packs() -> None:
    assert {p.name for p in PACKS} >= {"support-triage", "rag-passage-relevance", "citation-support",
                                        "rag-answerability", "moderation", "entity-merge", "editorial-review",
                                        "semantic-drift"}


def test_no_label_holds_more_than_60_percent_of_a_question(pack: Pack) -> None:
    for qid in pack.questions:
        counts = Counter(str(case.expect[qid]) for case in pack.cases)
        label, top = counts.most_common(1)[0]
        assert top / len(pack.cases) <= 0.60, f"{pack.id}.{qid}: {label} is {top}/{len(pack.cases)}"


def test_choice_and_score_questions_have_unknown_in_the_gold(pack: Pack) -> None:
    for qid, question in pack.questions.items():
        if question.type == "noul":
            continue
        unknown = sum(1 for case in pack.cases if case.expect[qid] == "unknown")
        assert unknown / len(pack.cases) >= 0.03, f"{pack.id}.{qid}: unknown in {unknown}/{len(pack.cases)}"


def test_no_two_cases_share_a_state(pack: Pack) -> None:
    seen = Counter(json.dumps(dict(case.state), sort_keys=True, ensure_ascii=False) for case in pack.cases)
    assert [n for n in seen.values() if n > 1] == []


def test_readme_states_guidelines_distribution_and_kappa_per_question(pack: Pack) -> None:
    readme = (pack.path / "README.md").read_text(encoding="utf-8")
    assert "Cohen's kappa" in readme
    for qid in pack.questions:
        # a row of the audit table: | `qid` | n | agreement | kappa | ...
        assert re.search(rf"^\|\s*`?{qid}`?\s*\|\s*\d+\s*\|\s*[01]\.\d+\s*\|\s*-?[01]\.\d+", readme, re.M), qid
    assert (pack.path / "CHANGELOG.md").is_file()


def test_readme_count_tables_agree_with_the_cases(pack: Pack) -> None:
    """Every label-distribution, cross and split table of the README, recounted from the cases."""
    problems, checked = recount(pack, (pack.path / "README.md").read_text(encoding="utf-8"))
    assert checked, f"{pack.id}: no count table of a known shape in README.md (tests/readme_counts.py)"
    assert problems == []


def test_the_recount_names_a_cell_that_disagrees() -> None:
    """The table moderation 0.1.1 left behind (md-0488 moved from allow/low to allow/none), its
    unknown row as 0.1.2 left it (0.2.0 moved md-0319 from unknown/unknown to allow/none)."""
    pack = load_pack(ROOT / "packs" / "moderation")
    stale = ("| action \\ severity | none | low | medium | high | critical | unknown |\n"
             "|---|---|---|---|---|---|---|\n"
             "| `allow` | 118 | 68 | – | – | – | – |\n"
             "| `unknown` | – | – | – | – | – | 27 |\n")
    problems, checked = recount(pack, stale)
    assert checked == [1]
    assert problems == ["README.md:3: action allow x severity none: 118 written, 119 in the cases",
                        "README.md:3: action allow x severity low: 68 written, 67 in the cases",
                        "README.md:4: action unknown x severity unknown: 27 written, 26 in the cases",
                        "README.md:1: action escalate: no row, 52 cases",
                        "README.md:1: action label: no row, 41 cases",
                        "README.md:1: action remove: no row, 244 cases",
                        "README.md:1: action restrict: no row, 26 cases"]
    share = "| question | label | cases | share |\n|---|---|---|---|\n| `severity` | `none` | 119 | 20.5% |\n"
    assert recount(pack, share)[0] == ["README.md:3: severity none: share 20.5% written, 20.70% in the cases"]


def test_the_recount_reads_split_and_tag_tables() -> None:
    """A spec-1 pack's tables by split and locale: a wrong cell, a wrong share, a tag's gold."""
    pack = load_pack(ROOT / "packs" / "semantic-drift")
    wrong = ("| `drift` | heldout vi | heldout en | all |\n|---|---|---|---|\n"
             "| true | 17 (50%) | 16 (50%) | 34 (49%) |\n\n"
             "| tag | gold | heldout vi | heldout en | all |\n|---|---|---|---|---|\n"
             "| `aligned` | true | 8 | 8 | 16 |\n\n"
             "| split | file | cases | use |\n|---|---|---|---|\n"
             "| `heldout` | `heldout.jsonl` | 68 (34 vi + 33 en) | frozen |\n")
    problems, checked = recount(pack, wrong)
    assert checked == [1, 5, 9]
    assert problems == ["README.md:3: true in heldout en: 16 written, 17 in the cases",
                        "README.md:3: true in all: share 49% written, 50.0% in the cases",
                        "README.md:7: tag aligned: gold true written, ['false'] in the cases",
                        "README.md:11: split heldout: 33 en written, 34 in heldout.jsonl"]


def test_the_changelog_says_where_the_gates_come_from(pack: Pack) -> None:
    """A pack that ships gates.yaml says so in its CHANGELOG, naming the evidence folder the gates
    were derived from (the older entries said no gates.yaml ships, long after one did)."""
    gates = (pack.path / "gates.yaml").read_text(encoding="utf-8")
    folder = re.search(r"^# Derived from the evidence in: (\S+)$", gates, re.M)
    assert folder, f"{pack.id}: gates.yaml does not name its evidence folder"
    changelog = (pack.path / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"`{folder.group(1)}`" in " ".join(changelog.split()), f"{pack.id}: CHANGELOG.md never names {folder[1]}"


@pytest.mark.parametrize("backend", EMBEDDED)
def test_both_embedded_recordings_are_committed_and_complete(pack: Pack, backend: str) -> None:
    path = ROOT / "results" / backend / f"{pack.id}.predictions.jsonl"
    ids = {json.loads(line)["case_id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
    assert ids == {case.id for case in pack.cases}


def test_committed_gates_are_not_looser_than_the_sparrow_evidence(pack: Pack, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    pytest_args = [str(pack.path), "--jev-replay", "--jev-backend", EMBEDDED[0], "--jev-json", str(out),
                   "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", str(ROOT)]
    done = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout[-2000:]
    runs = json.loads(out.read_text())["runs"]
    committed, _ = read_yaml(pack.path / "gates.yaml")
    sparrow = ROOT / "results" / EMBEDDED[0]
    derived = derive(baseline([RunObject.from_json(run) for run in runs]), in_process=in_process(sparrow))
    assert looser(committed, derived) == []
    # a re-derivation leaves out the gates a re-record of the embedded model could fail: its latency is
    # the machine's, and it is free
    assert in_process(sparrow) and not {"max_p95_latency_ms", "max_cost_per_case_usd"} & set(committed)


@pytest.mark.parametrize("name", ["sms-spam", "boolq-yes-no"])
def test_derivation_reproduces_the_seed_registrys_gates(name: str) -> None:
    if not COMPAT.is_dir():
        pytest.skip(COMPAT_MISSING)
    evidence = json.loads((COMPAT / "results" / "jev-1.13.0" / f"{name}.json").read_text())
    published, _ = read_yaml(COMPAT / "packs" / name / "gates.yaml")
    assert derive(baseline([ResultsFile.from_json(evidence)])) == pytest.approx(published, abs=1e-12)


def test_a_pack_with_frozen_splits_pins_its_rubric(pack: Pack) -> None:
    """The rubric a frozen split was labelled for is pinned in pack.yaml (SPEC S4), so a recording run
    against changed wording stops with rubric drift before any call (protocol/preflight.py)."""
    from pytest_jev.rubric import rubric_fingerprint

    if not pack.declares_splits:
        pytest.skip(f"{pack.id} has no frozen splits")
    assert pack.rubric_pin == rubric_fingerprint(pack.questions_as_sent())


def test_the_readme_table_reports_each_locale_apart() -> None:
    """A pack whose cases carry a locale has one row per split and locale in the README's table, each
    accuracy (Wilson 95%) its results file's, never vi and en pooled."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in PACKS:
        pack = load_pack(path)
        if not pack.locales:
            continue
        for split in pack.splits:
            for locale in pack.locales:
                row = re.search(rf"^\| {pack.id} {pack.version}, {split}, {locale} \|.*\|$", readme, re.M)
                assert row, f"README.md: no row for {pack.id} {split} {locale}"
                cells = [c.strip() for c in row.group(0).strip("|").split("|")]
                for cell, backend in zip(cells[-2:], EMBEDDED):
                    results = json.loads((ROOT / "results" / backend / f"{pack.id}.{split}.json").read_text())
                    numbers = results["detail"]["locales"][locale]
                    lo, hi = numbers["accuracy_ci"]
                    assert cell == f"{numbers['accuracy']:.3f} ({lo:.3f}-{hi:.3f})", (pack.id, split, locale, backend)
        assert not re.search(rf"^\| {pack.id} {pack.version} \(vi, en\)", readme, re.M), f"{pack.id}: a pooled row"
