"""Label audits (registry/audit.py and `jev-packs audit`): the seeded blind sample, a second
round drawn from the cases an earlier round left (`--exclude`), and Cohen's kappa checked
against a confusion-matrix reference."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest
from packfiles import write_pack
from reference import cohen_kappa as reference_kappa

from pytest_jev.errors import JevError
from pytest_jev.packs import load_pack
from pytest_jev.registry.audit import cohen_kappa, sample


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_jev", *args], cwd=root, capture_output=True, text=True,
                          check=False)


def ids_of(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("seed", range(40))
def test_kappa_equals_the_confusion_matrix_reference(seed: int) -> None:
    rng = random.Random(seed)
    labels = ["a", "b", "c", "d"][: rng.randint(2, 4)]
    first = [rng.choice(labels) for _ in range(rng.randint(5, 120))]
    second = [label if rng.random() < 0.8 else rng.choice(labels) for label in first]
    assert math.isclose(cohen_kappa(first, second), reference_kappa(first, second), abs_tol=1e-12)


def test_kappa_of_a_textbook_table() -> None:
    """20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: p_o 0.7, p_e 0.5, kappa 0.4."""
    first = ["yes"] * 25 + ["no"] * 25
    second = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert math.isclose(cohen_kappa(first, second), 0.4)
    assert math.isclose(reference_kappa(first, second), 0.4)


@pytest.fixture
def pack_dir(tmp_path: Path) -> Path:
    return write_pack(tmp_path / "packs", 40, pack_id="forty")


def test_a_second_round_leaves_out_the_first_and_keeps_its_size(pack_dir: Path) -> None:
    pack = load_pack(pack_dir)
    first = sample(pack.cases, 0.2, 11)
    assert len(first) == 8
    second = sample(pack.cases, 0.2, 12, {c.id for c in first})
    assert len(second) == 8  # a fifth of the whole pack, not of the 32 left
    assert not {c.id for c in first} & {c.id for c in second}
    rest = [c for c in pack.cases if c not in first]
    chosen = sorted(random.Random(12).sample(range(len(rest)), 8))
    assert [c.id for c in second] == [rest[i].id for i in chosen]  # the same draw, over what is left, in file order
    assert sample(pack.cases, 0.2, 11, set()) == first  # no exclusion: today's sample


def test_a_round_larger_than_what_is_left_takes_all_of_it(pack_dir: Path) -> None:
    pack = load_pack(pack_dir)
    keep = pack.cases[-3:]
    excluded = {c.id for c in pack.cases} - {c.id for c in keep}
    assert sample(pack.cases, 0.2, 5, excluded) == list(keep)
    with pytest.raises(JevError, match="every one of the 40 cases is excluded"):
        sample(pack.cases, 0.2, 5, {c.id for c in pack.cases})


def test_cli_exclude_reads_labels_and_blind_files(pack_dir: Path, tmp_path: Path) -> None:
    first = cli(tmp_path, "audit", "sample", str(pack_dir), "--fraction", "0.2", "--seed", "11", "--out", "a")
    assert first.returncode == 0, first.stderr
    assert "8 of 40 cases of forty (seed 11)" in first.stdout
    labels = tmp_path / "a" / "labels.jsonl"  # what an annotator writes back: ids and labels
    labels.write_text("".join(json.dumps({"id": i, "labels": {"refund": True}}) + "\n"
                              for i in ids_of(tmp_path / "a" / "blind.jsonl")), encoding="utf-8")
    both = []
    for excluded in (labels, tmp_path / "a" / "blind.jsonl"):
        run = cli(tmp_path, "audit", "sample", str(pack_dir), "--fraction", "0.2", "--seed", "12",
                  "--exclude", str(excluded), "--out", "b")
        assert run.returncode == 0, run.stderr
        assert "8 of the 32 not excluded cases of forty (seed 12)" in run.stdout
        both.append((tmp_path / "b" / "blind.jsonl").read_bytes())
    assert both[0] == both[1]
    assert not set(ids_of(tmp_path / "a" / "blind.jsonl")) & set(ids_of(tmp_path / "b" / "blind.jsonl"))
    third = cli(tmp_path, "audit", "sample", str(pack_dir), "--fraction", "0.2", "--seed", "13",
                "--exclude", "a/blind.jsonl", "--exclude", "b/blind.jsonl", "--out", "c")  # repeatable
    assert third.returncode == 0, third.stderr
    assert "8 of the 24 not excluded" in third.stdout
    assert not set(ids_of(tmp_path / "c" / "blind.jsonl")) & (set(ids_of(tmp_path / "a" / "blind.jsonl"))
                                                              | set(ids_of(tmp_path / "b" / "blind.jsonl")))


@pytest.mark.parametrize(("line", "message"), [
    ('{"id": "x-9999", "labels": {}}', "a.jsonl:2: case id 'x-9999' is not a case of this pack; "
                                       "exclude a file made for this pack"),
    ("{not json", "a.jsonl:2: not valid JSON"),
    ('{"labels": {}}', 'a.jsonl:2: each line is {"id": ..., ...}; pass a labels.jsonl or blind.jsonl'),
])
def test_cli_exclude_names_the_bad_line(pack_dir: Path, tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / "a.jsonl").write_text('{"id": "c-001", "labels": {}}\n' + line + "\n", encoding="utf-8")
    run = cli(tmp_path, "audit", "sample", str(pack_dir), "--seed", "1", "--exclude", "a.jsonl", "--out", "b")
    assert run.returncode == 2
    assert run.stderr.startswith("jev-packs: " + message)
    assert "Traceback" not in run.stderr and not (tmp_path / "b").exists()
