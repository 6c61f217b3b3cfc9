"""The registry packs' blind audits can be checked by anyone (issue 19, item 11): each pack keeps
its annotators' labels in packs/<id>/audit/, the commands its audit README gives reproduce the
samples those labels are for, and every figure of a pack README's Audit tables (and of the
top-level README's audit kappa column) is recomputed from the committed labels and the gold as
it stood before the disagreements were resolved: today's gold, with the earlier label of each
case packs/<id>/audit/resolutions.jsonl says was changed. Kappa comes from reference.py, not
from pytest_jev."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reference import cohen_kappa

from pytest_jev.cli import main
from pytest_jev.packs import load_pack
from pytest_jev.packs.model import Pack

ROOT = Path(__file__).resolve().parents[1]
PACKS = sorted(p.parent for p in (ROOT / "packs").glob("*/pack.yaml"))
ROUNDS = ("seed-11", "seed-12-excluding-seed-11")


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def commands(readme: str) -> Iterator[tuple[list[str], str]]:
    """(argv after `jev-packs`, the labels file it is for) of each `jev-packs audit sample` line."""
    for line in readme.splitlines():
        if line.startswith("jev-packs audit sample "):
            command, _, target = line.partition("# -> ")
            yield shlex.split(command)[1:], target.strip()


@pytest.mark.parametrize("folder", PACKS, ids=[p.name for p in PACKS])
def test_each_pack_keeps_both_rounds_and_how_to_draw_them(folder: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    audit = folder / "audit"
    for name in ROUNDS:
        assert (audit / f"{name}.labels.jsonl").is_file() and (audit / f"{name}.notes.md").is_file()
    assert (audit / "resolutions.jsonl").is_file()
    drawn = list(commands((audit / "README.md").read_text(encoding="utf-8")))
    assert sorted(target for _, target in drawn) == sorted(f"{name}.labels.jsonl" for name in ROUNDS)
    monkeypatch.chdir(ROOT)  # the commands are written from the repository root
    for argv, target in drawn:
        out = tmp_path / target
        argv[argv.index("--out") + 1] = str(out)
        assert main(argv) == 0
        blind = [doc["id"] for doc in rows(out / "blind.jsonl")]
        assert blind == [doc["id"] for doc in rows(audit / target)], target  # the same cases, in the same order
    first, second = ({doc["id"] for doc in rows(audit / f"{name}.labels.jsonl")} for name in ROUNDS)
    assert not first & second and len(first) == len(second)


@pytest.mark.parametrize("folder", PACKS, ids=[p.name for p in PACKS])
def test_every_sampled_case_has_a_label_the_question_allows(folder: Path) -> None:
    pack = load_pack(folder)
    for name in ROUNDS:
        for doc in rows(folder / "audit" / f"{name}.labels.jsonl"):
            assert set(doc["labels"]) == set(pack.questions), doc["id"]
            for qid, label in doc["labels"].items():
                allowed = {True, False} if pack.questions[qid].type == "noul" else set(pack.questions[qid].labels)
                assert label in allowed, (name, doc["id"], qid, label)


# -- the figures the READMEs state ---------------------------------------------------------------

def resolutions(pack: Pack) -> list[dict[str, Any]]:
    return rows(pack.path / "audit" / "resolutions.jsonl")


def gold_before(pack: Pack) -> dict[str, dict[str, Any]]:
    """The gold the audit rounds were compared with: today's, with the earlier label of every
    case resolutions.jsonl says was changed since."""
    gold = {case.id: dict(case.expect) for case in pack.cases}
    for entry in resolutions(pack):
        gold[entry["case"]][entry["question"]] = entry["gold_before"]
    return gold


def figures(pack: Pack, labels_file: str) -> dict[str, tuple[int, str, str, list[str]]]:
    """question -> (n, observed agreement, kappa (both to 3 places), disagreeing case ids)."""
    gold = gold_before(pack)
    docs = rows(pack.path / "audit" / labels_file)
    out = {}
    for qid in pack.questions:
        pairs = [(doc["id"], gold[doc["id"]][qid], doc["labels"][qid]) for doc in docs]
        agree = sum(g == a for _, g, a in pairs)
        out[qid] = (len(pairs), f"{agree / len(pairs):.3f}",
                    f"{cohen_kappa([g for _, g, _ in pairs], [a for _, _, a in pairs]):.3f}",
                    [cid for cid, g, a in pairs if g != a])
    return out


def audit_problems(pack: Pack, readme: str) -> tuple[list[str], list[str]]:
    """(what in the README's Audit tables differs from a recomputation, the labels files checked).

    A table is `| question | n | observed agreement | Cohen's kappa | disagreements |`; the
    paragraph before it names the labels file (`audit/<round>.labels.jsonl`) and the version
    whose gold it was compared with ("against the gold of 0.1.2")."""
    versions = {entry["version_before"] for entry in resolutions(pack)} or {pack.version}
    problems, checked = [], []
    lines = readme.splitlines()
    for number, line in enumerate(lines):
        if not line.startswith("| question | n | observed agreement | Cohen's kappa |"):
            continue
        start = number
        while start > 0 and lines[start - 1].strip():
            start -= 1
        start -= 1
        while start > 0 and lines[start - 1].strip():
            start -= 1
        lead = " ".join(lines[start:number])
        named = re.search(r"`audit/([\w.-]+\.labels\.jsonl)`", lead)
        version = re.search(r"against the gold of (\d+\.\d+\.\d+)", lead)
        if not named or not version:
            problems.append(f"README.md:{number + 1}: the paragraph before the table names no labels file "
                            "or no gold version")
            continue
        checked.append(named[1])
        if version[1] not in versions:
            problems.append(f"README.md:{number + 1}: gold of {version[1]}, but the rounds were compared with "
                            f"{', '.join(sorted(versions))}")
        want = figures(pack, named[1])
        seen = set()
        for offset, row in enumerate(lines[number + 2:], number + 3):
            if not row.startswith("|"):
                break
            cells = [cell.strip() for cell in row.strip("|").split("|")]
            qid = cells[0].strip("`")
            seen.add(qid)
            n, agreement, kappa, ids = want[qid]
            stated = (int(cells[1]), cells[2], cells[3], [] if cells[4] == "–" else cells[4].split(", "))
            if stated != (n, agreement, kappa, ids):
                problems.append(f"README.md:{offset}: {named[1]} {qid}: written {stated}, "
                                f"recomputed {(n, agreement, kappa, ids)}")
        if seen != set(pack.questions):
            problems.append(f"README.md:{number + 1}: {named[1]}: rows for {sorted(seen)}, "
                            f"questions {sorted(pack.questions)}")
    return problems, checked


@pytest.fixture(scope="module", params=PACKS, ids=[p.name for p in PACKS])
def pack(request: pytest.FixtureRequest) -> Pack:
    return load_pack(request.param)


def test_resolutions_list_every_disagreement_and_the_gold_it_left(pack: Pack) -> None:
    entries = resolutions(pack)
    current = {case.id: case.expect for case in pack.cases}
    for entry in entries:
        assert entry["gold_after"] == current[entry["case"]][entry["question"]], entry["case"]
        assert entry["version_after"] == pack.version and entry["decision"] in ("relabelled",
                                                                                 "kept; definition fixed")
        assert (entry["gold_after"] != entry["gold_before"]) == (entry["decision"] == "relabelled"), entry["case"]
    listed = {(e["round"], e["case"], e["question"]): e for e in entries}
    gold = gold_before(pack)
    for name in ROUNDS:
        for doc in rows(pack.path / "audit" / f"{name}.labels.jsonl"):
            for qid, label in doc["labels"].items():
                key = (name, doc["id"], qid)
                if label != gold[doc["id"]][qid]:
                    assert key in listed and listed[key]["annotator"] == label, key  # every disagreement resolved
                else:
                    assert key not in listed, key


def test_every_audit_figure_in_the_readme_is_recomputed(pack: Pack) -> None:
    problems, checked = audit_problems(pack, (pack.path / "README.md").read_text(encoding="utf-8"))
    assert sorted(checked) == sorted(f"{name}.labels.jsonl" for name in ROUNDS)
    assert problems == []


def test_a_wrong_audit_figure_is_named() -> None:
    pack = load_pack(ROOT / "packs" / "moderation")
    readme = (pack.path / "README.md").read_text(encoding="utf-8")
    right = "| `severity` | 115 | 0.957 | 0.946 | md-0221, md-0238, md-0319, md-0380, md-0435 |"
    assert right in readme  # round B before resolution: md-0221 was low, md-0319 unknown
    problems, _ = audit_problems(pack, readme.replace(right, right.replace("0.946", "0.950")))
    assert len(problems) == 1 and "seed-12-excluding-seed-11.labels.jsonl severity: written" in problems[0]
    problems, _ = audit_problems(pack, readme.replace("against the gold of 0.1.2", "against the gold of 0.2.0", 1))
    assert len(problems) == 1 and "gold of 0.2.0, but the rounds were compared with 0.1.2" in problems[0]


def kappa_range(pack: Pack, labels_file: str) -> str:
    kappas = sorted(kappa for _, _, kappa, _ in figures(pack, labels_file).values())
    return kappas[0] if kappas[0] == kappas[-1] else f"{kappas[0]}-{kappas[-1]}"


def test_the_top_level_readme_states_each_packs_audit_kappas() -> None:
    """The pack table's "audit kappa, round B (round A)" column, recomputed from the labels."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stated = {}
    for line in readme.splitlines():
        found = re.match(r"\| ([a-z-]+) (\d+\.\d+\.\d+)\b[^|]*\| \d+ \| [^|]+ \| (\S+) \((\S+)\)", line)
        if found:
            stated.setdefault(found[1], set()).add((found[2], found[3], found[4]))
    assert set(stated) == {p.name for p in PACKS}
    for folder in PACKS:
        pack = load_pack(folder)
        assert stated[pack.id] == {(pack.version, kappa_range(pack, f"{ROUNDS[1]}.labels.jsonl"),
                                    kappa_range(pack, f"{ROUNDS[0]}.labels.jsonl"))}, pack.id
