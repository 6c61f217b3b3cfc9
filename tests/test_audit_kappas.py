"""The registry packs' blind audits can be checked by anyone (issue 19, item 11): each pack keeps
its annotators' labels in packs/<id>/audit/, and the commands its audit README gives reproduce
the samples those labels are for."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_jev.cli import main
from pytest_jev.packs import load_pack

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
