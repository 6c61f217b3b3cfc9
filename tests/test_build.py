"""`jev-packs build`: dataset-derived packs built from upstream-format files.

Every source file here is written by the test, with invented texts in the upstream layout
(UCI's tab-separated SMSSpamCollection, BoolQ's jsonl, Banking77's CSV): no upstream data is
read or committed. The compat corpus (../shared/compat) supplies the real jev-packs
pack.yaml files and recordings the built packs must line up with.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import COMPAT, COMPAT_MISSING
from pytest_jev import load_pack, load_recording
from pytest_jev.evaluate import Settings, prepare
from pytest_jev.registry.datasets import DATASETS, BuildError, build
from pytest_jev.registry.datasets.banking77 import RENAMED
from pytest_jev.registry.datasets.sampler import quotas
from pytest_jev.rubric import rubric_fingerprint

SPDX = {"sms-spam": "CC-BY-4.0", "boolq-yes-no": "CC-BY-SA-3.0", "banking-intent": "CC-BY-4.0"}
PREFIX = {"sms-spam": "sms", "boolq-yes-no": "bq", "banking-intent": "bnk"}


# -- upstream-format files, invented texts --------------------------------------------------

def sms_file(folder: Path, rows: Sequence[tuple[str, str]], name: str = "SMSSpamCollection") -> Path:
    path = folder / name
    path.write_text("".join(f"{label}\t{text}\n" for label, text in rows), encoding="utf-8")
    return path


def sms_rows(spam: int, ham: int) -> list[tuple[str, str]]:
    rows = [("spam", f"WIN a prize nr {i}! Txt CLAIM to 8{i:04d} now") for i in range(spam)]
    rows += [("ham", f"Running {i} minutes late, see you soon") for i in range(ham)]
    return rows


def boolq_file(folder: Path, rows: Sequence[dict[str, Any]], name: str = "dev.jsonl") -> Path:
    path = folder / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def boolq_rows(yes: int, no: int) -> list[dict[str, Any]]:
    return [{"question": f"is widget {i} {'blue' if i < yes else 'red'}", "title": f"Widget {i}",
             "answer": i < yes, "passage": f"Widget {i} is painted blue.\nIt was made in year {1900 + i}."}
            for i in range(yes + no)]


def banking_file(folder: Path, rows: Sequence[Sequence[str]], name: str = "test.csv",
                 header: Sequence[str] = ("text", "category")) -> Path:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    path = folder / name
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def banking_rows(per_intent: dict[str, int]) -> list[tuple[str, str]]:
    return [(f"Question {i} about {intent.lower().replace('_', ' ')}, please help", intent)
            for intent, n in per_intent.items() for i in range(n)]


def source_for(name: str, folder: Path) -> Path:
    """A small file of each dataset with a few labels of uneven size."""
    if name == "sms-spam":
        return sms_file(folder, sms_rows(4, 9))
    if name == "boolq-yes-no":
        return boolq_file(folder, boolq_rows(6, 5))
    return banking_file(folder, banking_rows({"card_arrival": 5, "Refund_not_showing_up": 3,
                                              "reverted_card_payment?": 2, "pin_blocked": 2}))


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_jev", "build", *map(str, args)],
                          capture_output=True, text=True, check=False, timeout=60)


def cases(pack_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (pack_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()]


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


# -- every builder writes a pack the loader takes ----------------------------------------------

@pytest.mark.parametrize("name", sorted(DATASETS))
def test_each_builder_writes_a_complete_pack_that_loads(name: str, tmp_path: Path) -> None:
    source = source_for(name, tmp_path)
    out = tmp_path / "packs" / name
    done = cli(name, "--source", source, "--out", out, "--size", "6", "--seed", "7")
    assert done.returncode == 0, done.stderr
    assert f"6 cases of {name}" in done.stdout and str(out) in done.stdout
    pack = load_pack(out)
    assert pack.warnings == ()
    assert pack.id == name and pack.license == SPDX[name] and pack.tested is None and pack.gates.names() == ()
    assert [c.id for c in pack.cases] == [f"{PREFIX[name]}-{i:04d}" for i in range(1, 7)]
    assert {p.name for p in out.iterdir()} == {"pack.yaml", "cases.jsonl", "gates.yaml", "README.md",
                                               "CHANGELOG.md", "LICENSE"}
    readme = (out / "README.md").read_text(encoding="utf-8")
    sha = hashlib.sha256(source.read_bytes()).hexdigest()
    command = f"jev-packs build {name} --source {source.name} --out {name} --seed 7 --size 6"
    assert command in readme and sha in readme and sha in (out / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "never committed" in readme and "gates come from evidence" in readme
    counts = Counter(str(c.expect[next(iter(pack.questions))]).lower() for c in pack.cases)
    for label, n in counts.items():  # the per-label table states what cases.jsonl holds
        assert next(row for row in readme.splitlines() if row.startswith(f"| `{label}` |")).endswith(f"| {n} |")
    license_note = (out / "LICENSE").read_text(encoding="utf-8")
    assert DATASETS[name].upstream.license.url in license_note and DATASETS[name].upstream.title in license_note


def test_banking_intent_offers_all_77_intents_and_unknown_with_snake_case_labels(tmp_path: Path) -> None:
    out = tmp_path / "banking-intent"
    build("banking-intent", source_for("banking-intent", tmp_path), out, size=4)
    options = load_pack(out).questions["intent"].options
    assert len(options) == 78 and "unknown" in options
    assert set(RENAMED.values()) <= set(options) and not set(RENAMED) & set(options)
    assert len(set(options.values())) == 78 and all(meaning.strip() for meaning in options.values())
    assert {c["expect"]["intent"] for c in cases(out)} == {"card_arrival", "refund_not_showing_up",
                                                          "reverted_card_payment", "pin_blocked"}
    assert "3%" in (out / "README.md").read_text(encoding="utf-8")


def test_whitespace_is_normalised_and_title_left_out(tmp_path: Path) -> None:
    out = tmp_path / "boolq-yes-no"
    build("boolq-yes-no", boolq_file(tmp_path, boolq_rows(2, 2)), out, size=4)
    for case in cases(out):
        assert set(case["state"]) == {"question", "passage"}
        assert "\n" not in case["state"]["passage"] and "  " not in case["state"]["passage"]


# -- stratification, determinism, dedup --------------------------------------------------------

def test_label_counts_follow_the_source_proportions(tmp_path: Path) -> None:
    spam, ham, size = 30, 70, 20
    out = tmp_path / "sms-spam"
    build("sms-spam", sms_file(tmp_path, sms_rows(spam, ham)), out, size=size)
    got = Counter(c["expect"]["spam"] for c in cases(out))
    assert got == {True: size * spam // (spam + ham), False: size * ham // (spam + ham)}
    assert len({c["state"]["message"] for c in cases(out)}) == size


def test_every_label_gets_a_case_when_the_size_allows(tmp_path: Path) -> None:
    per_intent = {"card_arrival": 40, "pin_blocked": 1, "exchange_rate": 1}
    out = tmp_path / "banking-intent"
    build("banking-intent", banking_file(tmp_path, banking_rows(per_intent)), out, size=3)
    assert Counter(c["expect"]["intent"] for c in cases(out)) == dict.fromkeys(per_intent, 1)


def test_quotas_round_by_largest_remainder() -> None:
    # 4 x (5, 3, 2) / 10 = 2, 1.2, 0.8: floors 2, 1, 0; the one left goes to the 0.8
    assert quotas({"a": 5, "b": 3, "c": 2}, 4) == {"a": 2, "b": 1, "c": 1}
    # 2 x (1, 1, 1) / 3: equal remainders, taxonomy order decides; a label absent from the source gets none
    assert quotas({"a": 1, "b": 1, "c": 1, "d": 0}, 2) == {"a": 1, "b": 1, "c": 0, "d": 0}


@given(st.lists(st.integers(0, 60), min_size=1, max_size=8).filter(any), st.data())
def test_quotas_sum_to_the_size_and_stay_proportional(sizes: list[int], data: st.DataObject) -> None:
    counts = {f"l{i}": n for i, n in enumerate(sizes)}
    total = sum(sizes)
    size = data.draw(st.integers(1, total))
    got = quotas(counts, size)
    assert sum(got.values()) == size
    present = [label for label, n in counts.items() if n]
    for label, n in counts.items():
        assert 0 <= got[label] <= n
        assert got[label] >= 1 or not n or size < len(present)
    if all(Fraction(size * n, total) >= 1 for n in counts.values() if n):  # no label needed a bump
        assert all(abs(got[label] - Fraction(size * n, total)) < 1 for label, n in counts.items())


def test_same_seed_same_bytes_other_seed_other_sample(tmp_path: Path) -> None:
    source = sms_file(tmp_path, sms_rows(25, 75))
    first, again, other = (tmp_path / d / "sms-spam" for d in ("a", "b", "c"))
    build("sms-spam", source, first, seed=3, size=20)
    build("sms-spam", source, again, seed=3, size=20)
    build("sms-spam", source, other, seed=4, size=20)
    assert files_of(first) == files_of(again)
    picked = {c["state"]["message"] for c in cases(first)}
    assert picked != {c["state"]["message"] for c in cases(other)}
    assert Counter(c["expect"]["spam"] for c in cases(other)) == Counter(c["expect"]["spam"] for c in cases(first))


def test_duplicate_states_are_skipped_and_counted(tmp_path: Path) -> None:
    rows = [*sms_rows(2, 3), ("ham", "Running 0  minutes late,\tsee you soon"), ("spam", "Running 1 minutes late, "
            "see you soon"), ("spam", "WIN a prize nr 0! Txt CLAIM to 80000 now")]
    source = sms_file(tmp_path, rows)
    out = tmp_path / "sms-spam"
    build("sms-spam", source, out, size=5)
    got = cases(out)
    assert len({c["state"]["message"] for c in got}) == 5
    assert next(c for c in got if c["state"]["message"].startswith("Running 1"))["expect"]["spam"] is False
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "Rows read: 8; distinct states: 5; duplicates skipped: 3" in readme
    assert "1 of them had another label" in readme
    with pytest.raises(BuildError, match=r"5 distinct records \(3 duplicates skipped\), fewer than --size 6"):
        build("sms-spam", source, tmp_path / "x" / "sms-spam", size=6)


# -- bad input: one line naming file and line, through the CLI ----------------------------------

def _bad_sources(folder: Path) -> list[tuple[str, Path, list[str], int, str]]:
    """(pack, source, extra args, line, what the message says) for each kind of bad input."""
    sms = sms_rows(2, 2)
    no_tab = folder / "no-tab"
    no_tab.write_text("ham\tfine\nham\tok\nham,a CSV export\n", encoding="utf-8")
    latin = folder / "latin1"
    latin.write_bytes(b"ham\tfine\nham\tok\nspam\tWIN \xa3100\n")
    rows = boolq_rows(1, 1)
    broken = folder / "broken.jsonl"
    broken.write_text("".join(json.dumps(row) + "\n" for row in rows) + '{"question": "q", "answer": tru\n')
    return [
        ("sms-spam", no_tab, [], 3, "no tab"),
        ("sms-spam", sms_file(folder, [*sms[:3], ("eggs", "breakfast")], "label"), [], 4, "neither ham nor spam"),
        ("sms-spam", sms_file(folder, [], "empty"), [], 1, "no records"),
        ("sms-spam", sms_file(folder, sms, "few"), ["--size", "9"], 4, "fewer than --size 9"),
        ("sms-spam", latin, [], 3, "not UTF-8"),
        ("boolq-yes-no", broken, [], 3, "not a JSON line"),
        ("boolq-yes-no", boolq_file(folder, [*rows, {"question": "q", "title": "t", "passage": "p"}], "test.jsonl"),
         [], 3, "no answer"),
        ("boolq-yes-no", boolq_file(folder, [{**rows[0], "answer": "yes"}], "str.jsonl"), [], 1, "not true or false"),
        ("banking-intent", banking_file(folder, banking_rows({"card_arrival": 2}), "label.csv", ("text", "label")),
         [], 1, "no category column"),
        ("banking-intent", banking_file(folder, [*banking_rows({"card_arrival": 2}), ("hi", "say_hello")], "cat.csv"),
         [], 4, "'say_hello' is not one of Banking77's 77 intents"),
        ("banking-intent", banking_file(folder, [("a", "card_arrival"), ("b", "card_arrival", "x")], "wide.csv"),
         [], 3, "3 fields, the header has 2"),
    ]


def test_bad_input_is_one_line_naming_file_and_line(tmp_path: Path) -> None:
    for name, source, extra, line, what in _bad_sources(tmp_path):
        out = tmp_path / "out" / name
        done = cli(name, "--source", source, "--out", out, *extra)
        assert done.returncode == 2, (source.name, done.stdout)
        assert done.stderr.startswith(f"jev-packs: {source}:{line}: "), done.stderr
        assert what in done.stderr and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert not out.exists()


@pytest.mark.parametrize("args, what", [(["--size", "0"], "--size 0 is not a positive"),
                                        (["--seed", "-1"], "--seed -1 is negative")])
def test_bad_arguments_are_one_line(args: list[str], what: str, tmp_path: Path) -> None:
    done = cli("sms-spam", "--source", sms_file(tmp_path, sms_rows(2, 2)), "--out", tmp_path / "sms-spam", *args)
    assert done.returncode == 2 and what in done.stderr and done.stderr.count("\n") == 1


# -- nothing a user has is overwritten ---------------------------------------------------------

def test_refuses_to_overwrite_a_folder_unless_force_and_a_pack(tmp_path: Path) -> None:
    source = sms_file(tmp_path, sms_rows(10, 10))
    out = tmp_path / "sms-spam"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    refused = cli("sms-spam", "--source", source, "--out", out)
    assert refused.returncode == 2 and f"{out}: folder exists and is not empty" in refused.stderr
    assert "--force" in refused.stderr
    forced = cli("sms-spam", "--source", source, "--out", out, "--force")
    assert forced.returncode == 2 and "no pack.yaml" in forced.stderr
    assert files_of(out) == {"notes.txt": b"mine"}
    (out / "notes.txt").unlink()
    assert cli("sms-spam", "--source", source, "--out", out, "--size", "4").returncode == 0  # empty: no --force
    before = files_of(out)
    assert cli("sms-spam", "--source", source, "--out", out, "--size", "6").returncode == 2
    assert files_of(out) == before
    assert cli("sms-spam", "--source", source, "--out", out, "--size", "6", "--force").returncode == 0
    assert len(cases(out)) == 6 and sorted(p.name for p in tmp_path.iterdir()) == ["SMSSpamCollection", "sms-spam"]


def test_out_must_be_named_like_the_pack(tmp_path: Path) -> None:
    done = cli("sms-spam", "--source", sms_file(tmp_path, sms_rows(2, 2)), "--out", tmp_path / "spam")
    assert done.returncode == 2 and f"--out {tmp_path / 'sms-spam'}" in done.stderr
    assert not (tmp_path / "spam").exists()


# -- compatibility with the jev-packs packs and their recordings --------------------------------

needs_compat = pytest.mark.skipif(not COMPAT.is_dir(), reason=COMPAT_MISSING)


@needs_compat
@pytest.mark.parametrize("name", ["sms-spam", "boolq-yes-no"])
def test_built_pack_yaml_lines_up_with_the_compat_pack(name: str, tmp_path: Path) -> None:
    out = tmp_path / name
    build(name, source_for(name, tmp_path), out, size=4)
    ours, theirs = load_pack(out), load_pack(COMPAT / "packs" / name)
    assert (ours.id, ours.license, ours.state_fields) == (theirs.id, theirs.license, theirs.state_fields)
    assert ours.questions_as_sent() == theirs.questions_as_sent()
    assert rubric_fingerprint(ours.questions_as_sent()) == rubric_fingerprint(theirs.questions_as_sent())
    assert {q: dict(f) for q, f in ours.thresholds.items()} == {q: dict(f) for q, f in theirs.thresholds.items()}
    assert (ours.description, ours.state_description) == (theirs.description, theirs.state_description)
    assert [c.id for c in theirs.cases[:4]] == [c.id for c in ours.cases]  # the same <prefix>-NNNN scheme


def _compat_recordings(name: str) -> list[Path]:
    return [COMPAT / "packs" / name / "predictions.jsonl",
            *sorted((COMPAT / "results").glob(f"*/{name}.predictions.jsonl"))]


@needs_compat
@pytest.mark.parametrize("name", ["sms-spam", "boolq-yes-no"])
def test_compat_recordings_replay_against_a_built_pack(name: str, tmp_path: Path) -> None:
    out = tmp_path / name
    build(name, source_for(name, tmp_path), out, size=5)
    pack = load_pack(out)
    for recording in _compat_recordings(name):
        lines = recording.read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if json.loads(line)["case_id"] in pack.case_ids]
        assert len(kept) == len(pack.cases), recording
        filtered = tmp_path / f"{recording.parent.name}.predictions.jsonl"
        filtered.write_text("\n".join(kept) + "\n", encoding="utf-8")
        prep = prepare(pack, load_recording(filtered), Settings(bootstrap=0))
        assert prep.problems == (), recording
        assert {o.status for o in prep.graded.outcomes.values()} <= {"ok", "mismatch"}
        assert prep.graded.items.n == len(pack.cases) and prep.graded.items.missing == 0
        whole = prepare(pack, load_recording(recording), Settings(bootstrap=0))
        assert any("is not in pack" in p for p in whole.problems)  # the check does refuse what is not ours
