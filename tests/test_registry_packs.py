"""The registry's own packs keep the rules a registry pack promises (issue: label quality as a
number): balanced labels, abstention in the gold, no repeated state, an audit in the README,
both embedded recordings committed, and gates no looser than the sparrow evidence gives."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from conftest import COMPAT
from pytest_jev.formats.run_json import ResultsFile, RunObject
from pytest_jev.packs import load_pack
from pytest_jev.packs.model import Pack
from pytest_jev.packs.yamlfile import read_yaml
from pytest_jev.registry.derive import baseline, derive, looser

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
    assert looser(committed, derive(baseline([RunObject.from_json(run) for run in runs]))) == []


@pytest.mark.parametrize("name", ["sms-spam", "boolq-yes-no"])
def test_derivation_reproduces_the_seed_registrys_gates(name: str) -> None:
    if not COMPAT.is_dir():
        pytest.skip(f"the compatibility corpus is not at {COMPAT}")
    evidence = json.loads((COMPAT / "results" / "jev-1.13.0" / f"{name}.json").read_text())
    published, _ = read_yaml(COMPAT / "packs" / name / "gates.yaml")
    assert derive(baseline([ResultsFile.from_json(evidence)])) == pytest.approx(published, abs=1e-12)
