"""Input jevassert 0.2.1 reads is read here too: other line breaks, stray whitespace,
U+2028 inside strings, answers that are not objects, empty pack.yaml maps, integer labels.
Input that is truly broken still fails as one line naming file, line and fix."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jevassert_env import differences, run_check

from conftest import write_pack

RECORDING = "results/jev-1.13.0/toy.predictions.jsonl"


def _crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def _cr(text: str) -> str:
    return text.replace("\n", "\r")


def _trailing_space(text: str) -> str:
    """Whitespace Python's str.strip() removes but JSON does not: NBSP, U+3000, form feed."""
    return "".join(line + " \u00a0\u3000\x0c\n" for line in text.splitlines())


def _leading_space(text: str) -> str:
    return "".join("\u00a0\u2003" + line + "\n" for line in text.splitlines())


REWRITES: list[Callable[[str], str]] = [_crlf, _cr, _trailing_space, _leading_space,
                                        lambda text: _crlf(_trailing_space(text))]
REWRITE_IDS = ["crlf", "cr", "trailing-space", "leading-space", "crlf-trailing-space"]


def _rewrite(path: Path, change: Callable[[str], str]) -> None:
    path.write_bytes(change(path.read_text(encoding="utf-8")).encode("utf-8"))


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any] | None]:
    """Run the packs folder with --jev-json; the result and its one run (None when it did not run)."""
    result = pytester.runpytest("packs", "-p", "no:cacheprovider", "--jev-json", "out.json", *args)
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    report = pytester.path / "out.json"
    runs = json.loads(report.read_text())["runs"] if report.is_file() else []
    report.unlink(missing_ok=True)
    return result, runs[0] if runs else None


def _numbers(run: dict[str, Any]) -> dict[str, Any]:
    """A run's numbers, without what names the recording file itself, or the bytes of the pack's files
    (the identity and the dataset's manifest hash the case file as it is)."""
    return {k: v for k, v in run.items() if k not in ("recording", "recording_sha256", "identity", "dataset")}


@pytest.fixture
def toy(pytester: pytest.Pytester) -> Path:
    """The conftest toy pack with every answer right (no mismatches to count)."""
    folder = write_pack(pytester.path)
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    return folder


@pytest.fixture
def baseline(toy: Path, pytester: pytest.Pytester) -> dict[str, Any]:
    """The toy pack's numbers with plain "\\n" files, before a test rewrites them."""
    result, run = _run(pytester)
    result.assert_outcomes(passed=16, skipped=1)
    assert run is not None
    return _numbers(run)


def _same_as_jevassert(request: pytest.FixtureRequest, pytester: pytest.Pytester, run: dict[str, Any]) -> None:
    """Every value `jevassert check --json` (0.2.1, the `jevassert` fixture) writes equals ours, bit for bit.

    Asked for last, so the test's own assertions have run when jevassert cannot be had."""
    jevassert: Path = request.getfixturevalue("jevassert")
    theirs = run_check(jevassert, Path("packs/toy"), Path(RECORDING), cwd=pytester.path)
    assert differences(theirs, run) == []


# -- line breaks and whitespace ------------------------------------------------------------

@pytest.mark.parametrize("change", REWRITES, ids=REWRITE_IDS)
def test_recording_line_breaks_and_stray_whitespace_read_the_same(
        pytester: pytest.Pytester, baseline: dict[str, Any], change: Callable[[str], str]) -> None:
    _rewrite(pytester.path / RECORDING, change)
    result, run = _run(pytester)
    result.assert_outcomes(passed=16, skipped=1)
    assert run is not None and _numbers(run) == baseline


@pytest.mark.parametrize("change", REWRITES, ids=REWRITE_IDS)
def test_cases_line_breaks_and_stray_whitespace_read_the_same(
        pytester: pytest.Pytester, baseline: dict[str, Any], change: Callable[[str], str]) -> None:
    _rewrite(pytester.path / "packs/toy/cases.jsonl", change)
    result, run = _run(pytester)
    result.assert_outcomes(passed=16, skipped=1)
    assert run is not None and _numbers(run) == baseline


def test_recording_with_crlf_and_nbsp_gives_jevassert_numbers(
        pytester: pytest.Pytester, baseline: dict[str, Any], jevassert: Path) -> None:
    _rewrite(pytester.path / RECORDING, lambda text: _crlf(_trailing_space(text)))
    _, run = _run(pytester)
    assert run is not None
    theirs = run_check(jevassert, Path("packs/toy"), Path(RECORDING), cwd=pytester.path)
    assert differences(theirs, run) == []


def test_raw_line_separators_inside_json_strings_are_not_line_breaks(
        pytester: pytest.Pytester, baseline: dict[str, Any]) -> None:
    """A JSON string may hold a raw U+2028, U+2029 or U+0085 (str.splitlines() breaks on them)."""
    cases = pytester.path / "packs/toy/cases.jsonl"
    rows = _rows(cases)
    rows[1]["state"]["message"] = "first\u2028second\u2029third\x85fourth"
    _write_rows(cases, rows)
    rec = pytester.path / RECORDING
    lines = _rows(rec)
    lines[2]["note"] = "a\u2028b"
    lines[4]["trace"] = ["\u2029", "\x85"]
    _write_rows(rec, lines)
    assert "\u2028" in cases.read_text(encoding="utf-8") and "\u2028" in rec.read_text(encoding="utf-8")
    result, run = _run(pytester)
    result.assert_outcomes(passed=16, skipped=1)
    assert run is not None and _numbers(run) == baseline


def test_bare_cr_at_the_end_of_a_recording_is_not_a_torn_line(pytester: pytest.Pytester, toy: Path) -> None:
    rec = pytester.path / RECORDING
    rec.write_bytes(rec.read_bytes().rstrip(b"\n").replace(b"\n", b"\r\n") + b"\r")
    result, _ = _run(pytester)
    result.assert_outcomes(passed=16, skipped=1)


# -- truly broken input under CRLF still names the right line --------------------------------

def _torn_crlf(text: str) -> str:
    return _crlf(text)[:-40]


def _broken_crlf(text: str) -> str:
    rows = text.splitlines()
    rows[6] = "{not json"
    return _crlf("\n".join(rows) + "\n")


def _broken_cr_nbsp(text: str) -> str:
    rows = text.splitlines()
    rows[6] = rows[6][:-3] + "\u00a0"
    return _cr("\n".join(rows) + "\n")


@pytest.mark.parametrize("change, where, fix", [
    (_torn_crlf, "toy.predictions.jsonl:12: torn last line", "re-run with --jev-record"),
    (_broken_crlf, "toy.predictions.jsonl:7: not valid JSON", "re-record the case"),
    (_broken_cr_nbsp, "toy.predictions.jsonl:7: not valid JSON", "re-record the case"),
], ids=["torn-crlf", "broken-crlf", "broken-cr-nbsp"])
def test_broken_recording_line_is_still_one_line_with_its_number(
        pytester: pytest.Pytester, toy: Path, change: Callable[[str], str], where: str, fix: str) -> None:
    _rewrite(pytester.path / RECORDING, change)
    result, run = _run(pytester)
    assert run is None
    result.assert_outcomes(passed=1, failed=1, skipped=15)  # check[spec] passes; no case is graded
    line = next(x for x in result.stdout.str().splitlines() if where in x)
    assert fix in line
    result.stdout.fnmatch_lines(["FAILED packs/toy/pack.yaml::check[[]recording[]]*"])


@pytest.mark.parametrize("change", [_broken_crlf, _broken_cr_nbsp], ids=["crlf", "cr-nbsp"])
def test_broken_case_line_is_still_one_line_with_its_number(
        pytester: pytest.Pytester, toy: Path, change: Callable[[str], str]) -> None:
    _rewrite(pytester.path / "packs/toy/cases.jsonl", change)
    result, _ = _run(pytester)
    result.assert_outcomes(failed=1)
    line = next(x for x in result.stdout.str().splitlines() if "cases.jsonl:7: not valid JSON" in x)
    assert "each line must be one complete JSON object" in line


def test_blank_case_line_under_crlf_names_its_line(pytester: pytest.Pytester, toy: Path) -> None:
    cases = pytester.path / "packs/toy/cases.jsonl"
    rows = cases.read_text().splitlines()
    rows.insert(3, "\u00a0")
    cases.write_bytes(_crlf("\n".join(rows) + "\n").encode("utf-8"))
    result, _ = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cases.jsonl:4: blank line*delete the empty line*"])


# -- answers that are not objects ---------------------------------------------------------

def test_answer_that_is_not_an_object_fails_only_its_case(request: pytest.FixtureRequest, pytester: pytest.Pytester,
                                                          toy: Path) -> None:
    rec = pytester.path / RECORDING
    rows = _rows(rec)
    rows[1]["answers"]["queue"] = None
    rows[4]["answers"]["urgency"] = "high"
    rows[7]["answers"]["refund"] = 0.9
    _write_rows(rec, rows)
    result, run = _run(pytester)
    result.assert_outcomes(passed=13, failed=3, skipped=1)  # check[recording] passes: each line is readable
    result.stdout.fnmatch_lines([
        "*toy.predictions.jsonl:2: case toy-0002: queue: no answer; re-record the case (--jev-record)",
        "*toy.predictions.jsonl:5: case toy-0005: urgency: answer is not an object; re-record*",
        "*toy.predictions.jsonl:8: case toy-0008: refund: answer is not an object; re-record*",
    ])
    result.stdout.fnmatch_lines(["FAILED packs/toy/pack.yaml::case[[]toy-0002[]]*",
                                 "FAILED packs/toy/pack.yaml::case[[]toy-0005[]]*",
                                 "FAILED packs/toy/pack.yaml::case[[]toy-0008[]]*"])
    assert run is not None
    assert (run["n_items"], run["missing_items"], run["case_errors"]) == (33, 3, 0)
    assert run["per_question"]["queue"]["missing"] == 1
    _same_as_jevassert(request, pytester, run)


def test_provenance_of_the_wrong_type_is_still_refused(tmp_path: Path) -> None:
    from pytest_jev.errors import RecordingError
    from pytest_jev.recording_file import load_recording

    good = {"case_id": "a", "model": "m", "latency_ms": 3.0, "usage": {}, "record_version": 1.0,
            "answers": {"q": None, "r": "x", "s": [1]}, "error": None}
    spoiled = [({"latency_ms": True}, "latency_ms"), ({"latency_ms": "12"}, "latency_ms"),
               ({"model": 13}, "model"), ({"usage": [1, 2]}, "usage"), ({"answers": [1]}, "answers"),
               ({"record_version": 1.5}, "record_version"), ({"record_version": "1"}, "record_version")]
    for change, where in spoiled:
        path = tmp_path / "r.jsonl"
        path.write_bytes(_crlf(json.dumps(good) + "\n" + json.dumps({**good, "case_id": "b", **change})
                               + "\n").encode())
        with pytest.raises(RecordingError) as caught:
            load_recording(path)
        assert f"r.jsonl:2: bad line: {where}" in caught.value.one_line(), caught.value.one_line()
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "case_id": "b", "answers": {"q": 1}}) + "\n")
    assert list(load_recording(path).lines) == ["a", "b"]


def test_recording_schema_constrains_only_types() -> None:
    """The recording memo tells lines apart by their properties' types; a rule on anything
    else (a value, a nested key) would be reused from a line that merely looks alike."""
    from pytest_jev.packs import schema

    for key, rule in schema.schema("recording")["properties"].items():
        allowed = {"type", "minLength"} if key == "case_id" else {"type"}
        assert rule is True or set(rule) <= allowed, (key, rule)


# -- pack.yaml ----------------------------------------------------------------------------

def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def test_empty_thresholds_and_level_descriptions_load_as_absent(request: pytest.FixtureRequest,
                                                                pytester: pytest.Pytester, toy: Path) -> None:
    from pytest_jev import load_pack

    _edit(toy / "pack.yaml", "thresholds:\n  refund: {true: 0.8, false: 0.8}\n", "thresholds:\n")
    _edit(toy / "pack.yaml", "    level_descriptions:\n      high: something is broken right now\n",
          "    level_descriptions:\n")
    pack = load_pack(toy)
    assert dict(pack.thresholds) == {} and dict(pack.questions["urgency"].level_descriptions) == {}
    result, run = _run(pytester)
    result.assert_outcomes(passed=16, skipped=1)
    assert run is not None and run["threshold_coverage"] is None
    _same_as_jevassert(request, pytester, run)


def _rename_technical(pytester: pytest.Pytester, toy: Path) -> None:
    """Label the queue option `technical` as "2" in the pack, its cases and its recording."""
    _edit(toy / "pack.yaml", "      technical: bugs and errors", '      "2": bugs and errors')
    for path in (toy / "cases.jsonl", pytester.path / RECORDING):
        path.write_text(path.read_text().replace('"technical"', '"2"'))


def test_integer_threshold_key_names_its_label(request: pytest.FixtureRequest, pytester: pytest.Pytester,
                                               toy: Path) -> None:
    from pytest_jev import load_pack

    _rename_technical(pytester, toy)
    _edit(toy / "pack.yaml", "  refund: {true: 0.8, false: 0.8}\n",
          "  refund: {true: 0.8, false: 0.8}\n  queue: {2: 0.85}\n")
    assert dict(load_pack(toy).thresholds["queue"]) == {"2": 0.85}
    result, run = _run(pytester)
    result.assert_outcomes(passed=16, skipped=1)
    assert run is not None and run["threshold_coverage"]["n_auto"] == 12 + 4  # refund items + queue "2" items
    _same_as_jevassert(request, pytester, run)


@pytest.mark.parametrize("yaml_text, where", [
    ("  queue: {3: 0.85}\n", "pack.yaml:29: thresholds.queue: '3' is not a label of queue"),
    ("  urgency: {1: 0.85}\n", "pack.yaml:29: thresholds.urgency: '1' is not a label of urgency"),
    ("  refund: {1: 0.85}\n", "pack.yaml:29: duplicate key 'refund' (first on line 28)"),  # YAML keeps the last
    ("  queue: {2: 0}\n", "pack.yaml:29: thresholds.queue.2: 0 is less than or equal to the minimum of 0"),
])
def test_integer_threshold_key_is_still_checked(pytester: pytest.Pytester, toy: Path, yaml_text: str,
                                                where: str) -> None:
    _rename_technical(pytester, toy)
    _edit(toy / "pack.yaml", "  refund: {true: 0.8, false: 0.8}\n", "  refund: {true: 0.8, false: 0.8}\n" + yaml_text)
    result, _ = _run(pytester)
    result.assert_outcomes(failed=1)
    assert where in result.stdout.str(), result.stdout.str()


@pytest.mark.parametrize("file, old, new, where", [
    ("pack.yaml", "spec: 0", "spec: false", "pack.yaml:1: spec: False is not one of [0, 1]"),
    ("pack.yaml", "version: 0.1.0", "version: \"\uff10.1.0\"", "pack.yaml:3: version:"),
    ("pack.yaml", "levels: [low, high, unknown]", "levels: [low, low, unknown]",
     "pack.yaml:24: questions.urgency.levels:"),
    ("pack.yaml", "thresholds:\n  refund: {true: 0.8, false: 0.8}\n", "thresholds: []\n", "pack.yaml:27: thresholds:"),
    ("gates.yaml", "min_accuracy: 0.5", "min_accuracy: 1.5", "gates.yaml:1: min_accuracy:"),
], ids=["spec-false", "unicode-digit-version", "duplicate-levels", "thresholds-list", "gate-range"])
def test_other_pack_rules_are_not_relaxed(pytester: pytest.Pytester, toy: Path, file: str, old: str, new: str,
                                          where: str) -> None:
    _edit(toy / file, old, new)
    result, _ = _run(pytester)
    result.assert_outcomes(failed=1)
    assert where in result.stdout.str(), result.stdout.str()
