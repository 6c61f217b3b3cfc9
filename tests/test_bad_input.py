"""Bad input becomes one line naming file, line and fix: a failed check item, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_pack


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _write_lines(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def spoil_yaml(f: Path) -> None:
    _edit(f / "pack.yaml", "  fields: [message]", "  fields: [message\n")


def spoil_json_line(f: Path) -> None:
    rows = (f / "cases.jsonl").read_text().splitlines()
    rows[2] = rows[2][:-5]
    (f / "cases.jsonl").write_text("\n".join(rows) + "\n")


def spoil_duplicate(f: Path) -> None:
    rows = _lines(f / "cases.jsonl")
    rows[4]["id"] = rows[1]["id"]
    _write_lines(f / "cases.jsonl", rows)


def spoil_label(f: Path) -> None:
    rows = _lines(f / "cases.jsonl")
    rows[3]["expect"]["queue"] = "sales"
    _write_lines(f / "cases.jsonl", rows)


def spoil_unknown(f: Path) -> None:
    _edit(f / "pack.yaml", "      unknown: cannot tell\n", "")


def spoil_state(f: Path) -> None:
    rows = _lines(f / "cases.jsonl")
    rows[5]["state"] = {"msg": "hello"}
    _write_lines(f / "cases.jsonl", rows)


def spoil_noul_gold(f: Path) -> None:
    rows = _lines(f / "cases.jsonl")
    rows[0]["expect"]["refund"] = "yes"
    _write_lines(f / "cases.jsonl", rows)


def spoil_surrogate_id(f: Path) -> None:
    rows = _lines(f / "cases.jsonl")
    rows[6]["id"] = "bad-\ud800"  # json.dumps writes the legal escape \ud800
    _write_lines(f / "cases.jsonl", rows)


def spoil_gate_key(f: Path) -> None:
    (f / "gates.yaml").write_text("min_accuracy: 0.5\nmin_acuracy: 0.5\n")


PACK_CASES = [
    (spoil_yaml, "pack.yaml:9: invalid YAML", "fix the syntax"),  # where the unclosed [ opens
    (spoil_json_line, "cases.jsonl:3: not valid JSON", "each line must be one complete JSON object"),
    (spoil_duplicate, "cases.jsonl:5: duplicate case id 'bad-0002' (first on line 2)", "unique id"),
    (spoil_label, 'cases.jsonl:4: expect.queue is "sales", not one of', "one declared label"),
    (spoil_unknown, "pack.yaml:17: questions.queue.options: 'unknown' is a required property",
     "add an `unknown` option (Jev cannot abstain)"),
    (spoil_state, "cases.jsonl:6: state keys ['msg'] differ from state.fields ['message']", "state.fields"),
    (spoil_noul_gold, 'cases.jsonl:1: expect.refund is "yes", not a JSON boolean', "noul: true/false"),
    (spoil_gate_key, "gates.yaml:2: unknown gate 'min_acuracy'", "use one of min_accuracy"),
    (spoil_surrogate_id, 'cases.jsonl:7: case id "bad-\\ud800" holds a lone surrogate escape', "valid Unicode"),
]


@pytest.mark.parametrize("spoil, where, fix", PACK_CASES, ids=[c[0].__name__ for c in PACK_CASES])
def test_bad_pack_is_one_line_and_other_packs_still_run(pytester: pytest.Pytester, spoil, where, fix) -> None:
    bad = write_pack(pytester.path, pack_id="bad")
    write_pack(pytester.path, pack_id="good")
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    spoil(bad)
    result = pytester.runpytest("packs")
    result.assert_outcomes(passed=16, failed=1, skipped=1)
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    failure = [line for line in out.splitlines() if where in line]
    assert failure, out
    assert fix in failure[0]
    result.stdout.fnmatch_lines(["FAILED packs/bad/pack.yaml::check[[]spec[]]*"])


def spoil_recording_json(rec: Path) -> None:
    rows = rec.read_text().splitlines()
    rows[6] = "{not json"
    rec.write_text("\n".join(rows) + "\n")


def spoil_recording_torn(rec: Path) -> None:
    text = rec.read_text()
    rec.write_text(text[: len(text) - 40])


def spoil_recording_dup(rec: Path) -> None:
    rows = _lines(rec)
    rows[3]["case_id"] = rows[2]["case_id"]
    _write_lines(rec, rows)


RECORDING_CASES = [
    (spoil_recording_json, "toy.predictions.jsonl:7: not valid JSON", "re-record the case"),
    (spoil_recording_torn, "toy.predictions.jsonl:12: torn last line", "re-run with --jev-record"),
    (spoil_recording_dup, "toy.predictions.jsonl:4: duplicate case_id 'toy-0003' (first on line 3)",
     "keep one line per case"),
]


@pytest.mark.parametrize("spoil, where, fix", RECORDING_CASES, ids=[c[0].__name__ for c in RECORDING_CASES])
def test_unreadable_recording_fails_its_check(pytester: pytest.Pytester, spoil, where, fix) -> None:
    write_pack(pytester.path)
    write_pack(pytester.path, pack_id="good")
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    spoil(pytester.path / "results/jev-1.13.0/toy.predictions.jsonl")
    result = pytester.runpytest("packs")
    result.assert_outcomes(passed=17, failed=1, skipped=16)  # its cases and gates wait for a recording
    out = result.stdout.str()
    assert "Traceback" not in out
    line = next(x for x in out.splitlines() if where in x)
    assert fix in line
    result.stdout.fnmatch_lines(["FAILED packs/toy/pack.yaml::check[[]recording[]]*"])


def test_recording_that_does_not_match_the_pack(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path)
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    rec = pytester.path / "results/jev-1.13.0/toy.predictions.jsonl"
    rows = _lines(rec)
    rows[0]["case_id"] = "stranger-1"
    rows[1]["answers"]["queue"] = {"type": "noul", "noul": 0.4}
    _write_lines(rec, rows[:-1])
    result = pytester.runpytest("packs", "-rf")
    out = result.stdout.str()
    assert "Traceback" not in out
    result.stdout.fnmatch_lines([
        "*2 of 12 cases are not in the recording (first: toy-0001, toy-0012)*",
        "*toy.predictions.jsonl:1: case 'stranger-1' is not in pack toy*",
        "*toy.predictions.jsonl:2: case toy-0002 answer 'queue' has type \"noul\", the pack declares choice*",
    ])
    # the case items say what is wrong with each answer, where it can be fixed: the recording's line
    result.stdout.fnmatch_lines(["*toy.predictions.jsonl:2: case toy-0002: queue: answer type \"noul\" but the "
                                 "question is choice; re-record the case (--jev-record)"])
    result.stdout.fnmatch_lines(["*cases.jsonl:1: case toy-0001: not in the recording"])


def test_answer_breaking_its_contract_fails_the_case(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path)
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    rec = pytester.path / "results/jev-1.13.0/toy.predictions.jsonl"
    rows = _lines(rec)
    rows[0]["answers"]["queue"]["probabilities"] = {"billing": 0.7, "technical": 0.7, "unknown": 0.1}
    rows[1]["answers"]["refund"]["noul"] = 1.4
    rows[2]["answers"]["queue"]["probabilities"]["sales"] = 0.0
    rows[3]["error"] = "HTTP 500: upstream timeout"
    rows[3]["answers"] = None
    _write_lines(rec, rows)
    result = pytester.runpytest("packs", "-k", "case")
    result.assert_outcomes(failed=4, passed=8, deselected=5)
    result.stdout.fnmatch_lines([  # at the recording's file and line: that is what must change
        "*toy.predictions.jsonl:1: case toy-0001: queue: probabilities sum to 1.5000, not 1*",
        "*toy.predictions.jsonl:2: case toy-0002: refund: noul 1.4 outside [[]0, 1[]]; re-record the case*",
        "*toy.predictions.jsonl:3: case toy-0003: queue: undeclared label(s) [[]'sales'[]]*",
        "*toy.predictions.jsonl:4: case toy-0004: recorded error: HTTP 500: upstream timeout",
    ])


def test_unreadable_backend_pricing_fails_the_recording_check(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path)
    write_pack(pytester.path, pack_id="good", recording="results/other")
    pytester.makeini("[pytest]\n")
    (pytester.path / "results/jev-1.13.0/backend.json").write_text('{"pricing": {"input_usd_per_mtok": "cheap"}}')
    result = pytester.runpytest("packs", "--jev-recording", "results/jev-1.13.0")
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    result.assert_outcomes(passed=2, failed=2, skipped=30)  # good has no recording in that folder: its own line
    result.stdout.fnmatch_lines(["*backend.json: unreadable pricing (input_usd_per_mtok = 'cheap' is not a number "
                                 ">= 0); give pricing as*"])


def test_recording_lines_are_checked_per_shape_not_trusted_from_a_similar_line(tmp_path: Path) -> None:
    """Lines are validated once per shape; an absent key and a null one are different shapes."""
    from pytest_jev.errors import RecordingError
    from pytest_jev.recording_file import load_recording

    good = {"case_id": "a", "model": "m", "answers": {"q": {"type": "noul", "noul": 0.9}}, "error": None,
            "extra": [1, 2]}
    spoiled = [({"record_version": None}, "record_version"), ({"model": 7}, "model"),
               ({"answers": [0.9]}, "answers"), ({"case_id": ""}, "case_id"),
               ({"latency_ms": True}, "latency_ms")]
    for change, where in spoiled:
        path = tmp_path / "r.jsonl"
        path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "case_id": "b", **change}) + "\n")
        with pytest.raises(RecordingError) as caught:
            load_recording(path)
        assert f"r.jsonl:2: bad line: {where}" in caught.value.one_line() or (
            where == "case_id" and "r.jsonl:2: bad line" in caught.value.one_line()), caught.value.one_line()
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "case_id": "b", "extra": {"x": None},
                                                           "latency_ms": 3}) + "\n")
    assert list(load_recording(path).lines) == ["a", "b"]
