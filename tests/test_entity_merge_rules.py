"""entity-merge's labels follow from its written rules: tools/packgen/entity_merge.py (the procedure
of the pack README, as a program) gives every gold label of cases.jsonl, the step that decided each
case gives the README's decision-path and entity-kind counts, and single rules behave as the README
states them on records written here (not the pack's)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "tools" / "packgen" / "entity_merge.py"
PACK = ROOT / "packs" / "entity-merge"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("entity_merge_rules", RULES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


em = _load()


def _cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (PACK / "cases.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_rules_give_every_gold_label() -> None:
    assert em.check(PACK / "cases.jsonl") == []


def test_the_command_names_a_gold_label_the_rules_do_not_give(tmp_path: Path) -> None:
    changed = tmp_path / "cases.jsonl"
    lines = []
    for case in _cases():
        if case["id"] == "em-0126":
            case["expect"] = {"same_entity": True, "resolution": "needs_review"}
        lines.append(json.dumps(case, ensure_ascii=False))
    changed.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(RULES), str(changed)], capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "em-0126: gold needs_review/true, rules keep_separate/false (decisive conflict; 1 points; given names, "
        "email)"]
    clean = subprocess.run([sys.executable, str(RULES), str(PACK / "cases.jsonl")], capture_output=True, text=True,
                           check=False)
    assert (clean.returncode, clean.stdout.strip()) == (0, "")


def test_the_readme_counts_are_the_rules_decision_paths() -> None:
    """README "Case mix": the entity-kind table and the decision-path line, from the rules' steps."""
    paths: Counter[tuple[str, str]] = Counter()
    kinds: Counter[tuple[str, str]] = Counter()
    for case in _cases():
        result = em.label(case["state"]["record_a"], case["state"]["record_b"])
        paths[(result.path, result.resolution)] += 1
        kinds[(result.kind, result.resolution)] += 1
    readme = (PACK / "README.md").read_text(encoding="utf-8")

    def n(path: str, resolution: str | None = None) -> int:
        return sum(v for (p, r), v in paths.items() if p == path and resolution in (None, r))

    line = ("Decision path (the step of section 5 that decided each case): "
            f"decisive conflict {n('decisive conflict')}; decisive conflict outweighed by a key identifier "
            f"{n('conflict outweighed by a key identifier')}; differing lifelong ID {n('differing lifelong ID')} "
            f"({n('differing lifelong ID', 'needs_review')} review, {n('differing lifelong ID', 'keep_separate')} "
            f"separate); near-miss {n('near-miss')}; review triggers "
            f"{n('surname or middle name') + n('suffix or marker')} "
            f"({n('surname or middle name', 'needs_review')} surname or middle name with points, "
            f"{n('surname or middle name', 'keep_separate')} surname with no point, {n('suffix or marker')} suffix, "
            f"deceased or dissolved); points only {n('points')} ({n('points', 'merge')} merge, "
            f"{n('points', 'needs_review')} one point, {n('points', 'unknown')} no point).")
    assert line in readme
    for kind, row in (("person", "persons"), ("organisation", "organisations")):
        cells = [kinds[(kind, label)] for label in ("merge", "keep_separate", "needs_review", "unknown")]
        assert re.search(rf"^\| {row} \| {' | '.join(map(str, cells))} \| {sum(cells)} \|$", readme, re.M), row


# single rules, on records written here ------------------------------------------------------

def person(name: str, **fields: Any) -> dict[str, Any]:
    return {"customer_id": "X1", "full_name": name, **fields, "source": "test"}


def company(name: str, **fields: Any) -> dict[str, Any]:
    return {"vendor_no": "V1", "legal_name": name, **fields, "source": "test"}


@pytest.mark.parametrize(("a", "b", "verdict"), [
    ("1985-04-03", "03/04/1985", "same"),  # ambiguous: 3 April under the day-first reading
    ("1985-03-04", "03/04/1985", "same"),  # ... and 4 March under the month-first one
    ("2 June 2002", "06/02/2002", "same"),  # em-0439's rule: the country never decides
    ("03/04/1985", "04/03/1985", "near"),  # two ambiguous dates that swap day and month
    ("03/04/1985", "03/04/1985", "same"),
    ("1970-01-30", "1970-01-31", "near"),  # one digit
    ("1970-01-30", "19700103", "near"),  # two adjacent digits swapped
    ("1970-05-07", "1970-07-05", "near"),  # day and month swapped
    ("23/04/1985", "1985-04-23", "same"),  # a part above 12 is not ambiguous
    ("03.04.1985", "1985-04-03", "same"),  # dots: day first
    ("1970-01-30", "1971-02-28", "far"),
])
def test_dates(a: str, b: str, verdict: str) -> None:
    assert em.dates_compare(em.parse_date(a), em.parse_date(b)) == verdict


@pytest.mark.parametrize(("a", "b", "verdict"), [
    ("ZZT-3466-0102", "ZZT34660102", "same"), ("ZZT/34660102", "zzt 3466 0102", "same"),
    ("VAT ZZV462140952", "ZZV 462 140 952", "same"), ("No. ZZ25024488", "ZZ25024488", "same"),
    ("ZZH 630 690 624", "ZZH 630 609 624", "near"), ("ZZ12345678", "ZZ1234567", "near"),
    ("ZZ12345678", "ZZ87654321", "far"),
])
def test_identifiers(a: str, b: str, verdict: str) -> None:
    assert em.ids_compare(a, b) == verdict


@pytest.mark.parametrize(("a", "b", "match"), [
    ("07700 900123", "+44 7700 900123", True), ("+44 (0)7700 900123", "447700900123", True),
    ("0555 014 902", "0049 555 014 902", True), ("(608) 555-0197", "16085550197", True),
    ("07700 900123", "07700 900124", False),  # no near-miss for phones: simply not a match
])
def test_phones(a: str, b: str, match: bool) -> None:
    assert em.phones_match(a, b) is match


@pytest.mark.parametrize(("a", "b", "compatible"), [
    ("William", "Bill", True), ("Hans", "Johannes", True), ("Mohammed", "Mohd", True), ("J.", "James", True),
    ("Micheal", "Michael", True), ("Müller", "Mueller", True), ("Søren", "Soeren", True),
    ("Francis", "Frances", False), ("Paul", "Paula", False), ("Wei", "Wen", False), ("Aleksandr", "Aleksei", False),
    ("James", "John", False),
])
def test_given_names(a: str, b: str, compatible: bool) -> None:
    """Nicknames, transliterations, initials and one-letter typos are compatible; look-alikes are not."""
    assert em.given_compatible(a, b) is compatible


def test_a_decisive_conflict_is_not_outweighed_by_shared_contacts() -> None:
    """Step 1: different given names at one address, phone and email are two people (a household)."""
    shared = {"email": "home@mail.example", "mobile": "07700 900123", "address": "5 Larch Rise, York YO10 3YH"}
    got = em.label(person("Anna Webb", **shared), person("Hugo Webb", **shared))
    assert (got.resolution, got.same_entity, got.path) == ("keep_separate", False, "decisive conflict")


def test_a_key_identifier_outweighs_exactly_one_decisive_conflict() -> None:
    one = em.label(person("Anna Webb", national_id="ZZ123456789", dob="1980-01-02"),
                   person("Hugo Webb", national_id="ZZ 123 456 789", dob="1980-01-02"))
    two = em.label(person("Anna Webb", national_id="ZZ123456789", dob="1980-01-02"),
                   person("Hugo Webb", national_id="ZZ 123 456 789", dob="2011-09-30"))
    assert (one.resolution, one.path) == ("needs_review", "conflict outweighed by a key identifier")
    assert (two.resolution, two.path) == ("keep_separate", "decisive conflict")


def test_points_decide_when_nothing_conflicts() -> None:
    """Step 5, with the household rule: address and phone together are one point."""
    home = {"mobile": "07700 900123", "address": "5 Larch Rise, York YO10 3YH"}
    assert em.label(person("Anna Webb", **home), person("ANNA WEBB", **home)).resolution == "needs_review"
    assert em.label(person("Anna Webb", dob="1980-01-02", **home),
                    person("Anna Webb", dob="02/01/1980", **home)).resolution == "merge"
    assert em.label(person("Anna Webb"), person("A. Webb")).resolution == "unknown"


def test_review_triggers_with_and_without_points() -> None:
    """Step 4: a surname change is separate without a point; a lone suffix is unknown without one."""
    assert em.label(person("Anna Webb"), person("Anna Cole")).resolution == "keep_separate"
    assert em.label(person("Anna Webb", dob="1980-01-02"), person("Anna Cole", dob="1980-01-02")).resolution \
        == "needs_review"
    assert em.label(person("Anna Webb", dob="1980-01-02"),
                    person("Anna Cole", dob="1980-01-02", previous_surname="Webb")).resolution == "needs_review"
    assert em.label(person("Anna Webb", dob="1980-01-02", email="a@x.example"),
                    person("Anna Cole", dob="1980-01-02", email="A@X.EXAMPLE", previous_surname="Webb")
                    ).resolution == "merge"
    assert em.label(person("Hugo Webb Jr"), person("Hugo Webb")).resolution == "unknown"
    assert em.label(person("Hugo Webb Jr"), person("Hugo Webb Sr")).resolution == "keep_separate"


def test_company_names_and_legal_forms() -> None:
    contact = {"phone": "+44 7700 900123", "website": "www.ashgrove.example"}
    same_form = em.label(company("Ashgrove Dental Ltd", **contact), company("ASHGROVE DENTAL LIMITED", **contact))
    other_form = em.label(company("Ashgrove Dental plc", **contact), company("Ashgrove Dental Limited", **contact))
    no_form = em.label({"crm_account_id": "A1", "account_name": "Ashgrove Dental", **contact},
                       company("Ashgrove Dental plc", **contact))
    assert (same_form.resolution, other_form.resolution, no_form.resolution) == ("merge", "keep_separate", "merge")
