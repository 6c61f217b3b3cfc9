"""`jev-packs harvest PACK`, black-box: tiny packs and recordings written here, the CLI run in a
subprocess, its Markdown and JSONL read back.

The tiny pack (packfiles.write_pack) has five cases c-001..c-005 with the gold labels
queue / refund / urgency: billing true high, technical false high, billing false low,
technical false low, unknown false unknown. urgency levels are [low, high, unknown].
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from packfiles import MESSAGES, case_id, write_pack, write_split_pack

REPO = Path(__file__).resolve().parents[1]
LEVELS = ["low", "high", "unknown"]
OPTIONS = ["billing", "technical", "unknown"]


def harvest(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_jev", "harvest", *map(str, args)],
                          capture_output=True, text=True, check=False, timeout=60, cwd=cwd)


def choice(label: str, p: float) -> dict[str, Any]:
    """A choice answer: `label` at p, the rest shared by the other options (second: the next one)."""
    rest = [o for o in OPTIONS if o != label]
    probs = {label: p, rest[0]: round((1 - p) * 0.75, 6), rest[1]: round((1 - p) * 0.25, 6)}
    return {"type": "choice", "choice": label, "probabilities": probs}


def score(level: str, p: float) -> dict[str, Any]:
    rest = [lv for lv in LEVELS if lv != level]
    probs = {level: p, rest[0]: round((1 - p) * 0.75, 6), rest[1]: round((1 - p) * 0.25, 6)}
    return {"type": "score", "probabilities": {str(LEVELS.index(lv)): q for lv, q in probs.items()}}


def noul(p_true: float) -> dict[str, Any]:
    return {"type": "noul", "noul": p_true}


def gold_answers(n: int = 5) -> dict[str, dict[str, Any]]:
    """Every case answered with its gold label at 0.9."""
    out = {}
    for i in range(1, n + 1):
        _msg, queue, refund, urgency = MESSAGES[(i - 1) % len(MESSAGES)]
        out[case_id(i)] = {"queue": choice(queue, 0.9), "refund": noul(0.9 if refund else 0.1),
                           "urgency": score(urgency, 0.9)}
    return out


def write_backend(results: Path, folder: str, kind: str, answers: dict[str, Any], *,
                  pack_id: str = "tiny-pack", errors: tuple[str, ...] = ()) -> Path:
    """results/<folder>/ with backend.json and the pack's recording: answers[case] per case, an
    error line for each case in `errors`."""
    where = results / folder
    where.mkdir(parents=True, exist_ok=True)
    (where / "backend.json").write_text(json.dumps({"id": folder, "backend": kind, "model": f"{kind}-model"}),
                                        encoding="utf-8")
    lines = []
    for cid, answer in answers.items():
        failed = cid in errors
        lines.append(json.dumps({"case_id": cid, "model": f"{kind}-model", "latency_ms": 1.0, "usage": None,
                                 "answers": None if failed else answer, "error": "timeout" if failed else None}))
    (where / f"{pack_id}.predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return where


def rows_of(out: Path, pack_id: str = "tiny-pack") -> list[dict[str, Any]]:
    text = (out / f"{pack_id}.harvest.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def header_counts(markdown: str, kinds: tuple[str, ...] = ("all-wrong", "split")) -> dict[str, dict[str, int]]:
    """question -> kind -> count, from the counts table of the Markdown header."""
    head = markdown.split("\n## ", 1)[0]
    out = {}
    for line in head.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 2 + len(kinds) and cells[-1].isdigit() and cells[0] != "**total**":
            out[cells[0]] = dict(zip(kinds, map(int, cells[2:])))
    return out


def two_backends(tmp_path: Path) -> tuple[Path, Path]:
    """The main scenario: two backends that agree with the gold except where stated."""
    pack = write_pack(tmp_path)
    results = tmp_path / "results"
    a, b = gold_answers(), gold_answers()
    a["c-001"]["refund"], b["c-001"]["refund"] = noul(0.2), noul(0.4)  # all wrong: false, mean 0.7
    a["c-003"]["queue"], b["c-003"]["queue"] = choice("technical", 0.95), choice("technical", 0.95)  # mean 0.95
    a["c-002"]["queue"], b["c-002"]["queue"] = choice("billing", 0.9), choice("billing", 0.8)  # mean 0.85
    a["c-004"]["queue"], b["c-004"]["queue"] = choice("billing", 0.6), choice("billing", 0.6)  # mean 0.6
    a["c-005"]["urgency"], b["c-005"]["urgency"] = score("low", 0.7), score("low", 0.5)  # all wrong, mean 0.6
    a["c-003"]["urgency"] = score("high", 0.8)  # split: high / low (gold)
    a["c-004"]["refund"] = noul(0.7)  # split: true / false (gold)
    b["c-002"]["urgency"] = score("unknown", 0.6)  # split: high (gold) / unknown
    write_backend(results, "alpha-1", "sparrow", a)
    write_backend(results, "beta-2", "minilm", b)
    return pack, results


def test_all_wrong_rows_ranked_first_splits_next_and_gold_agreement_left_out(tmp_path: Path) -> None:
    pack, results = two_backends(tmp_path)
    done = harvest(pack, "--results-dir", results)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and "8 rows (all-wrong 5, split 3)" in done.stdout
    rows = rows_of(results / "harvest")
    # all-wrong across questions by mean probability of the agreed label; ties keep case order
    assert [(r["kind"], r["case_id"], r["question"]) for r in rows] == [
        ("all-wrong", "c-003", "queue"), ("all-wrong", "c-002", "queue"), ("all-wrong", "c-001", "refund"),
        ("all-wrong", "c-004", "queue"), ("all-wrong", "c-005", "urgency"),
        ("split", "c-002", "urgency"), ("split", "c-003", "urgency"), ("split", "c-004", "refund")]
    assert [r["agreed_probability"] for r in rows[:5]] == [0.95, 0.85, 0.7, 0.6, 0.6]
    assert all(r["agreed_probability"] is None for r in rows[5:])
    by = {(r["case_id"], r["question"]): r for r in rows}
    noul_row = by["c-001", "refund"]
    assert noul_row["gold"] is True and noul_row["type"] == "noul"
    assert noul_row["answers"] == {"alpha-1": {"status": "decided", "decision": False, "probability": 0.8},
                                   "beta-2": {"status": "decided", "decision": False, "probability": 0.6}}
    assert by["c-002", "queue"]["answers"]["alpha-1"]["top2"] == [["billing", 0.9], ["technical", 0.075]]
    score_row = by["c-005", "urgency"]
    assert score_row["gold"] == "unknown"
    assert score_row["answers"]["beta-2"] == {"status": "decided", "decision": "low", "probability": 0.5,
                                              "top2": [["low", 0.5], ["high", 0.375]]}
    assert by["c-003", "urgency"]["gold"] == "low"
    assert [a["decision"] for a in by["c-003", "urgency"]["answers"].values()] == ["high", "low"]
    assert by["c-001", "refund"]["state"] == {"ref": "c-001", "message": MESSAGES[0][0]}
    assert list(rows[0]) == ["kind", "pack", "pack_version", "case_id", "split", "locale", "tags", "question",
                             "type", "gold", "agreed_probability", "answers", "state"]
    markdown = (results / "harvest" / "tiny-pack.harvest.md").read_text(encoding="utf-8")
    assert markdown.startswith("# Disagreement harvest: tiny-pack 0.1.0\n")
    assert "- `alpha-1`: sparrow, sparrow-model" in markdown and "- `beta-2`: minilm, minilm-model" in markdown
    assert header_counts(markdown) == {"queue": {"all-wrong": 3, "split": 0}, "refund": {"all-wrong": 1, "split": 1},
                                       "urgency": {"all-wrong": 1, "split": 2}}
    queue = markdown.split("## queue (choice)")[1].split("## refund")[0]
    assert queue.index("| 1 | c-003 |") < queue.index("| 2 | c-002 |") < queue.index("| 3 | c-004 |")
    assert "**billing** 0.900 (next: technical 0.075)" in queue
    assert "Which team" not in markdown  # the instructions are in pack.yaml, not repeated per row


def test_error_lines_and_unusable_answers_are_not_decisions(tmp_path: Path) -> None:
    pack = write_pack(tmp_path)
    results = tmp_path / "results"
    a, b, c = gold_answers(), gold_answers(), gold_answers()
    a["c-001"]["refund"] = b["c-001"]["refund"] = noul(0.3)  # c errs on c-001: still two agreeing decisions
    a["c-002"]["queue"] = choice("billing", 0.7)  # b errs on c-002, c is unusable: one decision, no row
    c["c-002"]["queue"] = {"type": "choice", "probabilities": {}}
    b["c-003"]["refund"] = noul(0.9)  # c's answer is missing: a (gold) and b disagree
    del c["c-003"]["refund"]
    write_backend(results, "a", "sparrow", a)
    write_backend(results, "b", "minilm", b, errors=("c-002",))
    write_backend(results, "c", "openai", c, errors=("c-001",))
    done = harvest(pack, "--results-dir", results)
    assert done.returncode == 0, done.stderr
    rows = {(r["case_id"], r["question"]): r for r in rows_of(results / "harvest")}
    assert set(rows) == {("c-001", "refund"), ("c-003", "refund")}
    assert rows["c-001", "refund"]["kind"] == "all-wrong"
    assert rows["c-001", "refund"]["answers"]["c"] == {"status": "error"}
    assert rows["c-003", "refund"]["kind"] == "split"
    assert rows["c-003", "refund"]["answers"]["c"] == {"status": "unusable"}
    markdown = (results / "harvest" / "tiny-pack.harvest.md").read_text(encoding="utf-8")
    assert "| error |" in markdown and "| unusable |" in markdown


def test_mock_backends_are_left_out_unless_asked_for(tmp_path: Path) -> None:
    pack, results = two_backends(tmp_path)
    mock = gold_answers()
    mock["c-001"]["queue"] = choice("unknown", 0.9)  # would make a split row
    write_backend(results, "mock-0", "mock", mock)
    default = harvest(pack, "--results-dir", results, "--out", tmp_path / "default")
    assert default.returncode == 0, default.stderr
    assert all("mock-0" not in r["answers"] for r in rows_of(tmp_path / "default"))
    assert len(rows_of(tmp_path / "default")) == 8
    markdown = (tmp_path / "default" / "tiny-pack.harvest.md").read_text(encoding="utf-8")
    assert "left out (mock" in markdown and "`mock-0`" in markdown
    included = harvest(pack, "--results-dir", results, "--out", tmp_path / "with", "--include-mock")
    assert included.returncode == 0, included.stderr
    rows = rows_of(tmp_path / "with")
    assert all(set(r["answers"]) == {"alpha-1", "beta-2", "mock-0"} for r in rows)
    assert ("c-001", "queue", "split") in {(r["case_id"], r["question"], r["kind"]) for r in rows}
    # a backend named on the command line is compared, by folder or by kind, mock or not
    named = harvest(pack, "--results-dir", results, "--out", tmp_path / "named", "--backend", "mock-0",
                    "--backend", "sparrow")
    assert named.returncode == 0, named.stderr
    assert set(rows_of(tmp_path / "named")[0]["answers"]) == {"mock-0", "alpha-1"}


def test_a_backend_is_named_as_jev_backend_names_it(tmp_path: Path) -> None:
    """--backend takes what --jev-backend takes, parsed by the same catalog of backend kinds: a model
    spec picks the folders of that kind serving that model, whatever the folders are called."""
    pack, results = two_backends(tmp_path)
    for folder, model in (("qwen-local", "qwen2.5:7b"), ("llama-local", "llama3")):
        where = write_backend(results, folder, "openai", gold_answers())
        (where / "backend.json").write_text(json.dumps({"backend": "openai", "model": model}), encoding="utf-8")
    named = harvest(pack, "--results-dir", results, "--out", tmp_path / "named", "--backend", "openai:qwen2.5:7b",
                    "--backend", "sparrow")
    assert named.returncode == 0, named.stderr
    assert set(rows_of(tmp_path / "named")[0]["answers"]) == {"qwen-local", "alpha-1"}
    kind = harvest(pack, "--results-dir", results, "--out", tmp_path / "kind", "--backend", "openai")
    assert kind.returncode == 0, kind.stderr  # the kind alone: both of its folders
    assert "from 2 backends (llama-local, qwen-local)" in kind.stdout


def test_fewer_than_two_backends_is_refused_in_one_line(tmp_path: Path) -> None:
    pack = write_pack(tmp_path)
    results = tmp_path / "results"
    write_backend(results, "alpha-1", "sparrow", gold_answers())
    write_backend(results, "mock-0", "mock", gold_answers())  # left out: one backend remains
    done = harvest(pack, "--results-dir", results)
    assert done.returncode == 1  # a refusal, as `jev-packs merge` refuses
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "two backends at least; found 1 (alpha-1)" in done.stderr
    assert not (results / "harvest").exists()
    unknown = harvest(pack, "--results-dir", results, "--backend", "nope")
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1  # a usage error
    assert "no folder 'nope'" in unknown.stderr


def test_a_recording_of_another_pack_is_refused(tmp_path: Path) -> None:
    pack = write_pack(tmp_path)
    results = tmp_path / "results"
    write_backend(results, "alpha-1", "sparrow", gold_answers())
    foreign = {f"x-{i}": answer for i, answer in enumerate(gold_answers().values())}  # other case ids
    write_backend(results, "beta-2", "minilm", foreign)
    done = harvest(pack, "--results-dir", results)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "beta-2/tiny-pack.predictions.jsonl" in done.stderr
    assert "are not in the recording" in done.stderr and "more problems" in done.stderr
    assert not (results / "harvest").exists()
    # the same case ids, but answers to a question this pack does not ask
    other = gold_answers()
    for answers in other.values():
        answers["intent"] = choice("billing", 0.9)
    write_backend(results, "beta-2", "minilm", other)
    done = harvest(pack, "--results-dir", results)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "answers 'intent', which pack tiny-pack does not declare" in done.stderr


def test_a_rerun_is_byte_identical(tmp_path: Path) -> None:
    pack, results = two_backends(tmp_path)
    out = tmp_path / "out"
    assert harvest(pack, "--results-dir", results, "--out", out).returncode == 0
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # another working directory, relative paths: the files name no absolute path
    again = harvest(Path("..") / pack.name, "--results-dir", "../results", "--out", "../out", cwd=elsewhere)
    assert again.returncode == 0, again.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first
    assert sorted(first) == ["tiny-pack.harvest.jsonl", "tiny-pack.harvest.md"]


def test_markdown_escapes_pipes_and_line_breaks(tmp_path: Path) -> None:
    pack = write_pack(tmp_path)
    lines = (pack / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["state"]["message"] = "a | b\nsecond line <b>x</b> " + "y" * 300
    lines[0] = json.dumps(first)
    (pack / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    results = tmp_path / "results"
    a, b = gold_answers(), gold_answers()
    a["c-001"]["refund"] = b["c-001"]["refund"] = noul(0.1)
    write_backend(results, "alpha-1", "sparrow", a)
    write_backend(results, "beta-2", "minilm", b)
    assert harvest(pack, "--results-dir", results).returncode == 0
    markdown = (results / "harvest" / "tiny-pack.harvest.md").read_text(encoding="utf-8")
    row = next(line for line in markdown.splitlines() if line.startswith("| 1 | c-001 |"))
    assert "a \\| b<br>second line &lt;b&gt;x&lt;/b&gt; y" in row
    assert len(re.findall(r"(?<!\\)\|", row)) == 8  # 7 cells: #, case, gold, 2 backends, mean p, state
    state = rows_of(results / "harvest")[0]["state"]["message"]
    assert state.startswith("a | b\nsecond") and len(state) == 201 and state.endswith("…")


def test_limit_and_kind(tmp_path: Path) -> None:
    pack, results = two_backends(tmp_path)
    out = tmp_path / "out"
    assert harvest(pack, "--results-dir", results, "--out", out, "--limit", "1").returncode == 0
    markdown = (out / "tiny-pack.harvest.md").read_text(encoding="utf-8")
    assert "| 1 | c-003 |" in markdown and "| 2 | c-002 |" not in markdown
    assert "... and 2 more in `tiny-pack.harvest.jsonl` (--limit 1)." in markdown
    assert len(rows_of(out)) == 8  # the JSONL is complete whatever the limit
    assert harvest(pack, "--results-dir", results, "--out", out, "--kind", "split").returncode == 0
    assert {r["kind"] for r in rows_of(out)} == {"split"} and len(rows_of(out)) == 3
    markdown = (out / "tiny-pack.harvest.md").read_text(encoding="utf-8")
    assert "all-wrong" not in markdown.split("Rows:", 1)[1]
    assert header_counts(markdown, ("split",))["urgency"] == {"split": 2}


def test_split_pack_rows_carry_split_locale_and_tags(tmp_path: Path) -> None:
    pack = write_split_pack(tmp_path, per_locale=2)
    cases = [json.loads(line) for split in ("tune", "heldout")
             for line in (pack / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()]
    results = tmp_path / "results"
    answers = {c["id"]: {"queue": choice(c["expect"]["queue"], 0.9), "refund": noul(0.9 if c["expect"]["refund"]
                                                                                    else 0.1)} for c in cases}
    other = json.loads(json.dumps(answers))
    tune_vi, heldout_en = cases[0]["id"], cases[-1]["id"]
    answers[tune_vi]["refund"] = other[tune_vi]["refund"] = noul(0.5 if not cases[0]["expect"]["refund"] else 0.2)
    other[heldout_en]["queue"] = choice("unknown" if cases[-1]["expect"]["queue"] != "unknown" else "billing", 0.8)
    write_backend(results, "alpha-1", "sparrow", answers, pack_id="split-pack")
    write_backend(results, "beta-2", "minilm", other, pack_id="split-pack")
    done = harvest(pack, "--results-dir", results)
    assert done.returncode == 0, done.stderr
    rows = {r["case_id"]: r for r in rows_of(results / "harvest", "split-pack")}
    assert (rows[tune_vi]["kind"], rows[tune_vi]["split"], rows[tune_vi]["locale"]) == ("all-wrong", "tune", "vi")
    assert (rows[heldout_en]["kind"], rows[heldout_en]["split"], rows[heldout_en]["locale"]) == \
        ("split", "heldout", "en")
    assert rows[heldout_en]["tags"] == cases[-1]["tags"]
    markdown = (results / "harvest" / "split-pack.harvest.md").read_text(encoding="utf-8")
    assert "| # | case | split | locale | tags | gold |" in markdown
    assert f"| 1 | {tune_vi} | tune | vi | {', '.join(cases[0]['tags'])} |" in markdown


def test_the_repo_support_triage_pack_header_counts_match_the_jsonl(tmp_path: Path) -> None:
    done = harvest(REPO / "packs" / "support-triage", "--results-dir", REPO / "results", "--out", tmp_path)
    assert done.returncode == 0, done.stderr
    rows = rows_of(tmp_path, "support-triage")
    backends = {name for r in rows for name in r["answers"]}
    assert {b.split("-")[0] for b in backends} == {"sparrow", "minilm"} and len(backends) == 2
    markdown = (tmp_path / "support-triage.harvest.md").read_text(encoding="utf-8")
    counted: dict[str, dict[str, int]] = {}
    for r in rows:
        per = counted.setdefault(r["question"], {"all-wrong": 0, "split": 0})
        per[r["kind"]] += 1
    assert header_counts(markdown) == counted
    assert set(counted) == {"refund_request", "queue", "urgency"}
    wrong_n, split_n = (sum(per[kind] for per in counted.values()) for kind in ("all-wrong", "split"))
    assert f"Rows: {len(rows)} (all-wrong {wrong_n}, split {split_n}) of 520 cases x 3 questions." in markdown
    assert f"| **total** | | {wrong_n} | {split_n} |" in markdown
    wrong = [r["agreed_probability"] for r in rows if r["kind"] == "all-wrong"]
    assert wrong == sorted(wrong, reverse=True) and rows[0]["kind"] == "all-wrong"
