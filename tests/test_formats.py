"""Every file format has a JSON Schema and a typed model (pytest_jev/formats): the committed files
pass their schema and read back into their model and out again byte for byte, as pytest checks
its junitxml output against the XSD; what a fresh run writes passes too; a file that breaks its
schema is refused with one line naming the file, the line and the fix."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import pytest
from packfiles import only_injected_failures, write_split_pack

from conftest import COMPAT, COMPAT_MISSING, write_pack
from pytest_jev.fileio import encode_line
from pytest_jev.fixture.answers import encode as answers_encode
from pytest_jev.formats import FORMATS, Format, format_named, format_of
from pytest_jev.formats.answers_line import AnswerLine
from pytest_jev.formats.audit_line import LabelsLine
from pytest_jev.formats.backend_json import BackendInfo
from pytest_jev.formats.flips_json import FlipReport
from pytest_jev.formats.index_json import RegistryIndex
from pytest_jev.formats.protocol_json import Comparison, ProtocolReport, SampleLine, Thresholds
from pytest_jev.formats.recording_line import RecordingLine
from pytest_jev.formats.run_json import JevJson, ResultsFile, jev_json_bytes
from pytest_jev.formats.schemas import ID_PREFIX, FormatError, check, check_file, schema, schema_names

ROOT = Path(__file__).resolve().parents[1]


def committed() -> list[Path]:
    """Every file of the repository git tracks (the checkout's own files, never a test's)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name for name in listed.decode("utf-8").split("\0") if name]


def formatted(paths: list[Path], root: Path) -> list[tuple[Path, Format]]:
    """The files of `paths` that are one of the formats, by their place in the registry at `root`."""
    out = []
    for path in paths:
        found = format_of(PurePosixPath(path.relative_to(root).as_posix()))
        if found is not None:
            out.append((path, found))
    return out


COMMITTED = formatted(committed(), ROOT)
JEVASSERTS = formatted(sorted(p for p in COMPAT.rglob("*") if p.is_file()), COMPAT) if COMPAT.is_dir() else []


def objects(path: Path, fmt: Format) -> Iterator[tuple[int | None, str, Any]]:
    """(line number, raw text, parsed object) of each object a file holds."""
    text = path.read_text(encoding="utf-8")
    if not fmt.lines:
        yield None, text, json.loads(text)
        return
    for number, raw in enumerate(text.split("\n"), 1):
        if raw.strip():
            yield number, raw, json.loads(raw)


# -- the schemas ------------------------------------------------------------------------------------

def test_every_format_has_a_schema_a_model_and_every_schema_a_format() -> None:
    assert sorted(f.schema for f in FORMATS) == schema_names()
    for fmt in FORMATS:
        module, name = fmt.model.split(":")
        model = getattr(import_module(f"pytest_jev.formats.{module}"), name)
        assert callable(model.from_json) and callable(model.to_json), fmt.model


def _objects_of(node: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            yield where, node
        for key, value in node.items():
            yield from _objects_of(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _objects_of(value, f"{where}/{i}")


@pytest.mark.parametrize("name", schema_names())
def test_each_schema_is_draft_2020_12_with_an_id_a_title_and_deliberate_additional_properties(name: str) -> None:
    document = schema(name)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(document)
    assert document["$id"] == f"{ID_PREFIX}{name}.schema.json" and document["title"].strip()
    undecided = [where for where, node in _objects_of(document, "#") if "properties" in node
                 and "additionalProperties" not in node and not re.search(r"/(if|then|else)(/|$)", where)]
    assert undecided == [], f"{name}: objects that do not say whether other keys are allowed"


# -- the committed files -----------------------------------------------------------------------------

def test_the_committed_registry_holds_files_of_each_registry_format() -> None:
    found = {fmt.schema for _, fmt in COMMITTED}
    assert found >= {"recording-line", "backend", "results", "protocol-report", "thresholds", "sample-line",
                     "comparison", "index", "flips"}


@pytest.mark.parametrize(("path", "fmt"), COMMITTED, ids=[str(p.relative_to(ROOT)) for p, _ in COMMITTED])
def test_each_committed_file_passes_its_schema(path: Path, fmt: Format) -> None:
    assert check_file(fmt.schema, path, fmt.fix, lines=fmt.lines) >= 1


def test_jevasserts_files_pass_the_schemas_and_write_back_the_same_bytes(tmp_path: Path) -> None:
    """jevassert's recordings, backend.json, results files and index read as ours do."""
    if not JEVASSERTS:
        pytest.skip(COMPAT_MISSING)
    assert {fmt.schema for _, fmt in JEVASSERTS} == {"recording-line", "backend", "results", "index"}
    for path, fmt in JEVASSERTS:
        assert check_file(fmt.schema, path, fmt.fix, lines=fmt.lines) >= 1
        for number, raw, doc in objects(path, fmt):
            assert _dumped(fmt, raw, doc, tmp_path) == raw, f"{path}:{number or 1}"


def _dumped(fmt: Format, text: str, doc: dict[str, Any], tmp_path: Path) -> str:
    """`doc` read into its model and written back as its writer writes that format."""
    if fmt.schema == "recording-line":
        return encode_line(RecordingLine.from_json(doc).to_json()).decode("utf-8").rstrip("\n")
    if fmt.schema == "sample-line":
        return SampleLine.from_json(doc).dumps().rstrip("\n")
    if fmt.schema == "backend":
        return BackendInfo.from_json(doc).dumps()
    if fmt.schema == "results":
        return ResultsFile.from_json(doc).dumps()
    if fmt.schema == "index":
        return RegistryIndex.from_json(doc).dumps()
    if fmt.schema == "answers-line":
        line = AnswerLine.from_json(doc)
        assert line is not None
        return answers_encode(line).decode("utf-8").rstrip("\n")
    if fmt.schema == "flips":
        return FlipReport.from_json(doc).dumps()
    model = {"protocol-report": ProtocolReport, "thresholds": Thresholds, "comparison": Comparison}[fmt.schema]
    return model.from_json(doc).write(tmp_path / "out.json").read_text(encoding="utf-8")  # type: ignore[attr-defined]


@pytest.mark.parametrize(("path", "fmt"), COMMITTED, ids=[str(p.relative_to(ROOT)) for p, _ in COMMITTED])
def test_each_file_read_into_its_model_writes_back_the_same_bytes(path: Path, fmt: Format, tmp_path: Path) -> None:
    for number, raw, doc in objects(path, fmt):
        assert _dumped(fmt, raw, doc, tmp_path) == raw, f"{path}:{number or 1}"


@pytest.mark.parametrize(("path", "fmt"), [(p, f) for p, f in COMMITTED if f.schema == "results"],
                         ids=[str(p.relative_to(ROOT)) for p, f in COMMITTED if f.schema == "results"])
def test_a_results_file_reads_into_typed_values_that_agree_with_its_recording(path: Path, fmt: Format) -> None:
    """Typed fields hold what the file says, and the file agrees with the recording it names
    (read apart, line by line, without the models)."""
    results = ResultsFile.read(path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert results.accuracy == raw["accuracy"] and results.accuracy_ci == tuple(raw["accuracy_ci"])
    assert list(results.per_question) == list(raw["per_question"])  # pack order kept
    recording = ROOT / str(results.predictions)
    lines = [json.loads(line) for line in recording.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert sorted(results.recorded_models) == sorted({line["model"] for line in lines if line["model"]})
    assert results.detail is not None and results.detail.questions is not None
    assert results.detail.correct is not None and len(results.detail.correct) == results.n_cases
    assert all(len(marks) == len(results.detail.questions) for marks in results.detail.correct.values())
    assert sum(b.n for b in results.detail.reliability) == results.n_items


def test_backend_json_says_its_kind_and_prices_in_either_variant() -> None:
    ours = BackendInfo.read(ROOT / "results" / "mock-0" / "backend.json")
    assert (ours.kind, ours.prices, ours.pricing_label()) == ("mock", (0.0, 0.0), "free ($0 per M tokens)")
    theirs = BackendInfo.from_json({"id": "claude-sonnet-5", "provider": "anthropic", "model": "claude-sonnet-5",
                                    "pricing_usd_per_mtok": {"input": 2.0, "output": 10.0}, "adapter": "x"})
    assert (theirs.kind, theirs.prices, theirs.extra) == ("anthropic", (2.0, 10.0), {"adapter": "x"})
    assert theirs.pricing_label() == "$2 / $10 per M tokens (input / output)"
    assert BackendInfo.from_json({"provider": "someone"}).kind is None


def test_a_recording_line_reads_its_fields_through_typed_properties() -> None:
    path = ROOT / "results" / "mock-0" / "semantic-drift.predictions.jsonl"
    raw = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    line = RecordingLine.from_json(raw)
    assert (line.case_id, line.model, line.mode, line.backend) == (raw["case_id"], "mock-0", "mock", "mock")
    assert line.input_tokens == raw["usage"]["input_tokens"] and line.latency_ms == raw["latency_ms"]
    assert line.answers == raw["answers"] and not line.failed and line.error_detail is None
    assert line.request_fingerprint == raw["request_fingerprint"] and line.attempts == 1
    # a value of the wrong type reads as absent; the Mapping view still shows it as written
    odd = RecordingLine.from_json({**raw, "latency_ms": "slow", "usage": None, "answers": None, "error": "timeout"})
    assert odd.latency_ms is None and odd.input_tokens is None and odd.failed and odd["latency_ms"] == "slow"


def test_the_json_examples_of_the_docs_pass_their_schemas() -> None:
    """Examples of written formats in SPEC.md and docs/ (a fingerprint may be shortened to
    `sha256:9f2c...` there: read in full). Case lines are pack inputs (packs/schema/)."""
    checked = []
    for doc in (ROOT / "SPEC.md", ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))):
        for block in re.findall(r"```json\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            text = re.sub(r'"sha256:([0-9a-f]*)\.\.\."', lambda m: f'"sha256:{m.group(1).ljust(64, "0")}"', block)
            example = json.loads(text)
            name = "recording-line" if "case_id" in example else "answers-line" if "fingerprint" in example else None
            if name is not None:
                check(name, example, file=doc.relative_to(ROOT), fix="correct the example")
                checked.append(name)
    assert sorted(checked) == ["answers-line", "recording-line"]


# -- refusals: one line naming the file, the line and the fix ---------------------------------------

def _line_holding(text: str, key: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.lstrip().startswith(f'"{key}":'))


def test_a_results_file_of_the_wrong_shape_is_refused_with_its_file_line_and_fix(tmp_path: Path) -> None:
    source = ROOT / "results" / "sparrow-0.2.0-nano-general-v1.1" / "moderation.json"
    text = source.read_text(encoding="utf-8").replace('"mode": "live"', '"mode": "sometimes"')
    path = tmp_path / "moderation.json"
    path.write_text(text, encoding="utf-8")
    fmt = format_named("results")
    with pytest.raises(FormatError) as refused:
        check_file(fmt.schema, path, fmt.fix, lines=False)
    message = refused.value.one_line()
    assert message.startswith(f"{path}:{_line_holding(text, 'mode')}: not a valid results/")
    assert "mode: 'sometimes' is not one of ['live', 'mock']" in message
    assert message.endswith("; refresh it (jev-packs refresh)") and "\n" not in message
    assert ResultsFile.read(path).mode == "sometimes"  # the reader is tolerant: the scoreboard shows it


def test_a_bad_line_of_a_recording_is_refused_with_its_line_number(tmp_path: Path) -> None:
    source = ROOT / "results" / "mock-0" / "semantic-drift.predictions.jsonl"
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)[:4]
    lines[2] = lines[2].replace('"latency_ms": 0.0', '"latency_ms": -3')
    path = tmp_path / "x.predictions.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    fmt = format_of(PurePosixPath("results/mock-0") / path.name)
    assert fmt is not None and fmt.schema == "recording-line"
    with pytest.raises(FormatError, match=re.escape(f"{path}:3: not a valid one line of a recording")) as refused:
        check_file(fmt.schema, path, fmt.fix, lines=True)
    assert refused.value.one_line().endswith("latency_ms: -3 is less than the minimum of 0; re-record the case "
                                             "(--jev-record)")


def test_frozen_thresholds_of_a_heldout_split_are_refused_at_the_line_of_split(tmp_path: Path) -> None:
    source = ROOT / "results" / "mock-0" / "editorial-review.thresholds.json"
    text = source.read_text(encoding="utf-8").replace('"split": "tune"', '"split": "heldout"')
    path = tmp_path / "editorial-review.thresholds.json"
    path.write_text(text, encoding="utf-8")
    fmt = format_named("thresholds")
    with pytest.raises(FormatError) as refused:
        check_file(fmt.schema, path, fmt.fix, lines=False)
    assert refused.value.line == _line_holding(text, "split") and refused.value.file == str(path)
    assert refused.value.fix == "re-run --jev-tune to write it again"


def test_a_file_that_is_not_json_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "index.json"
    path.write_text('{"spec": 0,\n  "packs": [}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"index\.json: not valid JSON \(Expecting value: line 2 column 13"):
        check_file("index", path, format_named("index").fix, lines=False)


def test_an_object_checked_alone_names_the_line_it_was_given() -> None:
    with pytest.raises(FormatError) as refused:
        check("answers-line", {"fingerprint": "sha256:" + "0" * 64, "questions": {}}, file="a.jsonl", line=7,
              fix="re-record")
    assert refused.value.one_line().startswith("a.jsonl:7: not a valid a line of the jev fixture's answers file")


# -- what a fresh run writes ----------------------------------------------------------------------

def _check_tree(root: Path) -> dict[str, int]:
    """Validate every file under `root` that is one of the formats; how many of each were found."""
    found: dict[str, int] = {}
    for path, fmt in formatted(sorted(p for p in root.rglob("*") if p.is_file()), root):
        check_file(fmt.schema, path, fmt.fix, lines=fmt.lines)
        found[fmt.schema] = found.get(fmt.schema, 0) + 1
    return found


def test_a_fresh_recording_and_replay_write_valid_files(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, recording=None)
    pytester.makeini("[pytest]\n")
    recorded = pytester.runpytest("packs", "--jev-record", "--jev-backend=mock", "--jev-repeat", "2",
                                  "--jev-json", "repeat.json", "-p", "no:cacheprovider")
    assert recorded.ret in (0, 1), recorded.stdout.str()
    replayed = pytester.runpytest("packs", "--jev-replay", "--jev-backend=mock-0", "--jev-json", "out.json",
                                  "--jev-write-results", "-p", "no:cacheprovider")
    assert replayed.ret in (0, 1), replayed.stdout.str()
    found = _check_tree(pytester.path)
    assert found == {"recording-line": 2, "backend": 1, "results": 1}, found  # round 1, round 2
    for name in ("repeat.json", "out.json"):
        check_file("jev-json", pytester.path / name, "write it again", lines=False)
    repeat, out = JevJson.read(pytester.path / "repeat.json"), JevJson.read(pytester.path / "out.json")
    assert [s.rounds for s in repeat.stability] == [2] and out.stability == ()
    (run,) = out.runs
    assert run.detail is not None and run.pack == "toy" and run.mode == "mock"
    results = ResultsFile.read(pytester.path / "results" / "mock-0" / "toy.json")
    assert (results.accuracy, results.detail) == (run.accuracy, run.detail)
    assert jev_json_bytes(out.to_json()) == (pytester.path / "out.json").read_bytes()


def test_a_fresh_protocol_run_writes_valid_thresholds_reports_samples_and_comparison(
        pytester: pytest.Pytester) -> None:
    write_split_pack(pytester.path / "packs")
    pytester.makeini("[pytest]\n")
    common = ("--jev-backend=mock", "-p", "no:cacheprovider")
    assert pytester.runpytest("packs", "--jev-record", *common).ret in (0, 1)
    for flag in ("--jev-tune", "--jev-heldout"):
        done = pytester.runpytest("packs", flag, "--jev-min-covered", "5", "--jev-json", f"{flag[6:]}.json", *common)
        only_injected_failures(done)
    folder = pytester.path / "results" / "mock-0"
    other = pytester.path / "other-report.heldout.json"  # a second backend's report, as merge needs two
    report = json.loads((folder / "split-pack.report.heldout.json").read_text())
    other.write_text(json.dumps({**report, "backend": "mock-1"}))
    mine, out = folder / "split-pack.report.heldout.json", pytester.path / "results/comparisons/split-pack.heldout.json"
    merged = subprocess.run([sys.executable, "-m", "pytest_jev", "merge", str(mine), str(other), "--out", str(out)],
                            capture_output=True, text=True, check=False, cwd=pytester.path)
    assert merged.returncode == 0, merged.stderr
    found = _check_tree(pytester.path)
    assert found == {"recording-line": 1, "backend": 1, "thresholds": 1, "protocol-report": 2, "sample-line": 2,
                     "comparison": 1}, found
    for name in ("tune.json", "heldout.json"):
        check_file("jev-json", pytester.path / name, "write it again", lines=False)
        (run,) = JevJson.read(pytester.path / name).runs
        assert run.protocol is not None and run.protocol.role == name[:-5]
        written = ProtocolReport.read(folder / f"split-pack.report.{run.protocol.role}.json")
        assert written.to_json() == run.protocol.report.to_json()  # the file is the run's report
    tuned = JevJson.read(pytester.path / "tune.json").runs[0].protocol
    assert tuned is not None and tuned.thresholds is not None
    frozen = Thresholds.read(folder / "split-pack.thresholds.json")  # the held-out run recorded its freeze
    assert frozen.frozen is not None and frozen.frozen.report == "split-pack.report.heldout.json"
    assert tuned.thresholds.to_json() == {k: v for k, v in frozen.to_json().items() if k != "frozen"}
    held = JevJson.read(pytester.path / "heldout.json").runs[0].protocol
    assert held is not None and held.thresholds is None
    samples = (folder / "split-pack.results.heldout.jsonl").read_text().splitlines()
    assert [SampleLine.from_json(json.loads(s)) for s in samples] == list(held.results) and len(samples) == 24
    comparison = Comparison.read(pytester.path / "results/comparisons/split-pack.heldout.json")
    assert [b.backend for b in comparison.backends] == ["mock-0", "mock-1"]


FIXTURE_TESTS = '''
def test_holds(jev):
    assert jev.holds("Sorry: your payment was refunded.", "apologizes")


def test_choice(jev):
    assert jev.choice("Sorry: your payment was refunded.", "Which team?", ["billing", "technical"]) in (
        "billing", "technical")
'''


def test_the_fixture_writes_valid_answers_files(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bot=FIXTURE_TESTS)
    done = pytester.runpytest("--jev-record", "--jev-backend=mock", "-p", "no:cacheprovider")
    done.assert_outcomes(passed=2)
    path = pytester.path / "jev_answers" / "test_bot.jsonl"
    assert _check_tree(pytester.path) == {"answers-line": 1}  # files; the file holds two lines
    from pytest_jev.fixture.answers import read_lines

    lines = read_lines(path)
    assert sorted(line.tests[0] for line in lines.values()) == ["test_choice", "test_holds"]
    assert all(isinstance(line, AnswerLine) and line.backend == "mock" for line in lines.values())


def test_harvest_and_audit_write_valid_files(tmp_path: Path) -> None:
    results = tmp_path / "results"
    for folder in ("sparrow-0.2.0-nano-general-v1.1", "minilm-l6-int8-zeroshot-1.0.0"):
        (results / folder).mkdir(parents=True)
        for name in ("backend.json", "semantic-drift.predictions.jsonl"):
            (results / folder / name).write_bytes((ROOT / "results" / folder / name).read_bytes())
    command = [sys.executable, "-m", "pytest_jev"]
    harvested = subprocess.run([*command, "harvest", str(ROOT / "packs/semantic-drift"), "--results-dir", str(results),
                                "--out", str(tmp_path / "harvest")], capture_output=True, text=True, check=False)
    assert harvested.returncode == 0, harvested.stderr
    sampled = subprocess.run([*command, "audit", "sample", str(ROOT / "packs/semantic-drift"), "--out",
                              str(tmp_path / "audit")], capture_output=True, text=True, check=False)
    assert sampled.returncode == 0, sampled.stderr
    found = _check_tree(tmp_path)
    assert found.keys() == {"recording-line", "backend", "harvest-row", "audit-blind-line"}, found
    blind = [json.loads(line) for line in (tmp_path / "audit" / "blind.jsonl").read_text().splitlines()]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": b["id"], "labels": {"drift": True}, "note": "mine"}) + "\n"
                              for b in blind))
    for line in labels.read_text().splitlines():
        check("audit-labels-line", json.loads(line), file=labels, fix="fix the line")
        assert LabelsLine.from_json(json.loads(line)) is not None
    kappa = subprocess.run([*command, "audit", "kappa", str(ROOT / "packs/semantic-drift"), str(labels), "--json"],
                           capture_output=True, text=True, check=False)
    assert kappa.returncode == 0, kappa.stderr
    assert json.loads(kappa.stdout)[0]["n"] == len(blind)


def test_a_run_with_a_baseline_writes_valid_flips_in_jev_json_and_jev_packs_flips_writes_a_valid_report(
        pytester: pytest.Pytester) -> None:
    """--jev-baseline's `flips` in --jev-json, and `jev-packs flips --json`, against flips.schema.json;
    and the run's report is the committed one of results/flips/ (the same path computes both)."""
    folders = ("results/minilm-l6-int8-zeroshot-1.0.0", "results/sparrow-0.2.0-nano-general-v1.1")
    for name in ("packs/moderation", *folders):
        shutil.copytree(ROOT / name, pytester.path / name, ignore=shutil.ignore_patterns("*.md", "*.results.*"))
    pytester.runpytest("packs", "--jev-replay", "--jev-backend=minilm-l6-int8-zeroshot-1.0.0",
                       "--jev-baseline=sparrow-0.2.0-nano-general-v1.1", "--jev-json", "out.json", "-p",
                       "no:cacheprovider")
    check_file("jev-json", pytester.path / "out.json", "write it again", lines=False)
    (run,) = JevJson.read(pytester.path / "out.json").runs
    committed = ROOT / "results/flips/minilm-l6-int8-zeroshot-1.0.0/moderation.json"
    assert run.flips is not None and run.flips.dumps() == committed.read_text(encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest_jev", "flips", "minilm", "sparrow", "--pack",
                           "packs/moderation", "--json", "flips.json", "--out", "flips.md"], cwd=pytester.path,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    check_file("flips", pytester.path / "flips.json", "regenerate it", lines=False)
    report = FlipReport.read(pytester.path / "flips.json")
    assert (report.current.name, report.baseline.name) == ("minilm", "sparrow")
    assert (report.regressed, report.fixed, report.accuracy_delta_ci) == (
        run.flips.regressed, run.flips.fixed, run.flips.accuracy_delta_ci)
