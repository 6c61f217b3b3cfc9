"""`jev-packs merge`: held-out reports of several backends side by side, only when they measured
the same thing the same way.

Each input is validated first, alone: against the report's schema (a hand-edited or incomplete
report is refused with its file and field); then it must be a held-out report written with an
identity (a tune report's numbers are the data its thresholds were fitted on), whose counts add
up (samples = answered + failed = the sum over locales; every question's slices hold each
locale's samples, decided <= answered <= total), whose mode agrees with what answered (a report
of the mock's lines is a mock report, whatever its `mode` says) and, when its recording is
beside it, with that recording (the very bytes it graded, not mixing mock and live lines).
Then across inputs: never the same file or backend twice, mock never with live, identities equal
(identity.compare: pack, version, split, pack.yaml's content, wording, data files, protocol
settings), and mode, dataset, rubric, protocol version, seed, price source, locales and their
sample counts the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import JevError
from ..fileio import is_regular, loads, read_text
from ..formats.protocol_json import AGREE, Comparison, ProtocolReport
from ..formats.schemas import errors
from ..identity import Difference, compare
from ..recording_file import load_recording
from .report import MOCK_NOTE
from .thresholds import HELDOUT

RERUN = "merge reports exactly as a --jev-heldout run wrote them (re-run it rather than edit)"


class MergeError(JevError):
    """An input report is unusable, or the reports measured different things."""

    refusal = True


def read_report(path: Path) -> ProtocolReport:
    """One report, validated against the shipped schema; MergeError naming the file and field."""
    try:
        doc = loads(read_text(path, MergeError))
    except ValueError as exc:
        raise MergeError(f"not valid JSON ({exc})", file=path,
                         fix="merge the report.<split>.json a run wrote") from None
    found = errors("protocol-report", doc)
    if found:
        import jsonschema  # heavy: only when a report is refused

        error = jsonschema.exceptions.best_match(found)
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise MergeError(f"not a protocol report: {where}: {error.message[:160]}", file=path, fix=RERUN)
    return ProtocolReport.from_json(doc)


def report_problem(path: Path, report: ProtocolReport) -> str | None:
    """Why one report cannot be merged on its own (None: it can)."""
    if report.generator is None or report.identity is None:
        return ("written before reports carried an identity: nothing says what its numbers depend on; re-run "
                "--jev-heldout with this version to write one")
    if report.split != HELDOUT or report.thresholds_source == "tuned on this split":
        return (f"a {report.split} report: its numbers come from the data its thresholds were fitted on, so they "
                "are not held out; merge the report.heldout.json of each backend")
    kinds = set(report.backend_kind)
    if report.mode != "mock" and ("mock" in kinds or report.note == MOCK_NOTE):
        return (f"mode is {report.mode}, but its lines were answered by the mock (backend_kind "
                f"{sorted(kinds)}): a mock report only shows the harness works")
    if report.mode == "mock" and kinds - {"mock"}:
        return f"mode is mock, but its lines were answered by {sorted(kinds - {'mock'})}"
    counts = count_problem(report)
    if counts is not None:
        return f"its counts do not add up: {counts}"
    return recording_problem(path, report)


def count_problem(report: ProtocolReport) -> str | None:
    """The first count of a report that contradicts another (None: they agree)."""
    samples = report.samples
    total, answered, failed = samples.total, samples.answered, samples.failed
    if total is None or answered is None or failed is None or total != answered + failed:
        return f"samples.total is {total}, but answered {answered} + failed {failed}"
    if sum(samples.locales.values()) != total:
        held = sum(samples.locales.values())
        return f"samples.total is {total}, but samples.locales {dict(samples.locales)} hold {held}"
    for qid, question in report.questions.items():
        if set(question.locales) != set(samples.locales):
            return (f"question {qid} has the locales {sorted(question.locales)}, the samples "
                    f"{sorted(samples.locales)}")
        for locale, entry in question.locales.items():
            got = entry.samples
            if got.total != samples.locales[locale]:
                return f"questions.{qid}.locales.{locale}.samples.total is {got.total}, not {samples.locales[locale]}"
            if None in (got.decided, got.answered) or not (got.decided or 0) <= (got.answered or 0) <= total:
                return f"questions.{qid}.locales.{locale}.samples: decided {got.decided} > answered {got.answered}"
            if entry.coverage.n != got.total or entry.coverage.k != got.decided:
                return (f"questions.{qid}.locales.{locale}.coverage is {entry.coverage.k}/{entry.coverage.n}, "
                        f"not decided/total {got.decided}/{got.total}")
    return None


def recording_problem(path: Path, report: ProtocolReport) -> str | None:
    """A report beside its recording (results/<backend>/<pack>.predictions.jsonl) must have graded
    those very bytes, and they must not mix the mock with live lines; a report moved elsewhere is
    checked on what it says."""
    recording = path.parent / f"{report.pack}.predictions.jsonl"
    if not is_regular(recording):
        return None
    try:
        loaded = load_recording(recording)
    except JevError as exc:
        return f"its recording cannot be read: {exc.one_line()}"
    if loaded.sha256 != report.recording_sha256:
        return (f"the recording beside it ({recording.name}) is not the one it graded (sha256 {loaded.sha256}, "
                f"the report's {report.recording_sha256}): re-run --jev-heldout on it")
    modes = {line.mode or "live" for line in loaded.lines.values()}
    if {"mock", "live"} <= modes:
        return f"the recording it graded ({recording.name}) mixes mock lines with live ones"
    if modes == {"mock"} and report.mode != "mock":
        return f"mode is {report.mode}, but every line of the recording it graded ({recording.name}) is the mock's"
    return None


def merge(paths: Sequence[Path]) -> Comparison:
    """The comparison of several reports of the same pack, split, data, wording and procedure."""
    if len(paths) < 2:
        raise MergeError("merge needs at least two reports", fix="pass the report.<split>.json of each backend")
    seen: dict[Path, Path] = {}
    for path in paths:
        given = seen.setdefault(Path(path).resolve(), path)
        if given is not path:
            raise MergeError(f"the same report twice (also given as {given})", file=path,
                             fix="pass each backend's report once")
    reports = [(path, read_report(path)) for path in paths]
    for path, report in reports:
        problem = report_problem(path, report)
        if problem is not None:
            raise MergeError(problem, file=path, fix=RERUN)
    first_path, first = reports[0]
    modes = {report.mode for _, report in reports}
    if modes == {"mock", "live"}:
        mock = next(path for path, report in reports if report.mode == "mock")
        raise MergeError("mock and live reports never merge: a mock report only shows the harness works",
                         file=mock, fix="leave the mock report out of the comparison")
    backends: dict[str | None, Path] = {}
    agreed = first.to_json()
    assert first.identity is not None  # report_problem refused any report without one
    for path, report in reports:
        other = backends.setdefault(report.backend, path)
        if other is not path:
            raise MergeError(f"backend {report.backend} twice (also in {other})", file=path,
                             fix="pass one held-out report per backend")
        doc = report.to_json()
        facts = {field: (doc[field], agreed[field]) for field in AGREE}
        facts["samples.locales"] = (dict(report.samples.locales), dict(first.samples.locales))
        facts["questions"] = (sorted(report.questions), sorted(first.questions))
        check = compare(first.identity, report.identity, facts)
        if not check.same:
            raise MergeError(_differs(check.differences[0], first_path), file=path,
                             fix="merge reports of one pack version, split and procedure (same settings, seed and "
                                 "price source)")
    return Comparison.of([(str(path), report) for path, report in reports])


def _differs(difference: Difference, first: Path) -> str:
    return f"{difference.line('here', f'in {first}')}: the reports did not measure the same thing"
