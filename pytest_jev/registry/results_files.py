"""results/<backend>/<pack>.json and <pack>.md: a run's numbers and its human report, beside the
recording they come from (`--jev-write-results`), and the check that they still agree with it.

The JSON keeps every key of `jevassert check --json` with jevassert's values (so a registry whose
results jevassert wrote renders too) and adds the provenance the registry needs: pack version,
backend folder, the recording's path, sha256 and models, the date it was recorded, mode, split,
rubric fingerprint, and the registry detail (reliability bins, coverage curve, locales, per-case
marks). A pack with splits has one file per split: `<pack>.<split>.json`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from ..errors import JevError
from ..fileio import atomic_write, exists, is_regular, loads, read_text
from ..formats.backend_json import folder_info
from ..formats.run_json import NOT_IN_RESULTS, ResultsFile
from ..identity import compare, of
from ..packs.model import Pack
from ..paths import backend_json, column_folders, predictions_in, safe_name, shown
from ..recording_file import load_recording
from ..run_result import RunResult
from .render import report_markdown

# the numbers a results file must share with a replay of its recording
COMPARED = ("n_cases", "n_items", "case_errors", "missing_items", "accuracy", "accuracy_ci", "ece", "ece_ci",
            "cost_per_case_usd", "p50_latency_ms", "p95_latency_ms", "recorded_models", "rubric", "price_source")


class ResultsError(JevError):
    """A results file that cannot be read or does not match its recording."""


def stem(pack_id: str, split: str) -> str:
    return f"{pack_id}.{split}" if split else pack_id


def results_file(folder: Path, pack_id: str, split: str) -> Path:
    return folder / f"{stem(pack_id, split)}.json"


def report_file(folder: Path, pack_id: str, split: str) -> Path:
    return folder / f"{stem(pack_id, split)}.md"


def results_folder(recording: Path, results_dir: Path, models: tuple[str, ...]) -> Path:
    """Where a recording's results go: its own folder when that is a backend folder (it has
    backend.json), else the results folder of the model it recorded (jevassert keeps the pinned
    model's recording in the pack folder and its results under results/<model>/)."""
    if is_regular(backend_json(recording.parent)):
        return recording.parent
    return results_dir / safe_name(models[0] if len(models) == 1 else "unknown-model")


def recorded_at(recording: Path, folder: Path) -> str | None:
    """The day the recording was made: its newest `started_at`, else backend.json's `updated`."""
    newest = ""
    try:
        text = recording.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        at = line.find('"started_at": "')
        if at >= 0:
            newest = max(newest, line[at + 15:at + 25])
    if newest:
        return newest
    try:
        info = folder_info(folder)
    except JevError:
        info = None
    updated = info.updated if info is not None else None
    return updated[:10] if updated is not None else None


def results_of(run: RunResult, recording: Path, folder: Path, root: Path) -> ResultsFile:
    """The results file of a run: jevassert's keys, then the provenance and detail we add, in the
    run's key order (questions in pack order, so reports list them as the pack does)."""
    doc = {key: value for key, value in run.to_json().items() if key not in NOT_IN_RESULTS}
    doc.update({
        "kind": ResultsFile.KIND, "pack_version": run.version, "backend": folder.name,
        "predictions": shown(recording, root), "predictions_sha256": run.recording_sha256,
        "report": shown(report_file(folder, run.pack, run.split), root),
        "recorded_at": recorded_at(recording, folder),
    })
    return ResultsFile.from_json(loads(json.dumps(doc)))  # as a reader of the file sees it


def write(results: ResultsFile, markdown: str, folder: Path, pack_id: str, split: str) -> list[Path]:
    written = [results.write(results_file(folder, pack_id, split)), report_file(folder, pack_id, split)]
    atomic_write(written[1], markdown.encode("utf-8"))
    return written


def read(path: Path) -> ResultsFile:
    try:
        doc = loads(read_text(path, ResultsError))
    except ValueError as exc:
        raise ResultsError(f"not valid JSON ({exc})", file=path, fix="refresh it (jev-packs refresh)") from None
    if not isinstance(doc, dict):
        raise ResultsError("is not a JSON object", file=path, fix="refresh it (jev-packs refresh)")
    return ResultsFile.from_json(doc)


def identity_problems(stored: ResultsFile, pack: Pack, split: str) -> list[str]:
    """Whether a results file's numbers are still those of the pack as it is: its identity against
    the pack's (identity.compare), one line per component that differs."""
    expected = of(pack, split)
    if stored.identity is None:
        return [("identity: not recorded (written before results files carried one), so nothing says the numbers "
                 "are those of the pack as it is")]
    return compare(expected, stored.identity).lines("in the results file", "in this run")


def differences(stored_file: ResultsFile, fresh_file: ResultsFile) -> list[str]:
    """The compared fields where a stored results file and a fresh replay disagree (the identity:
    identity_problems)."""
    stored, fresh = stored_file.to_json(), fresh_file.to_json()
    out = []
    if stored.get("predictions_sha256") != fresh.get("predictions_sha256"):
        out.append(f"predictions_sha256 is {stored.get('predictions_sha256')} but the recording's is "
                   f"{fresh.get('predictions_sha256')}")
    for key in COMPARED:
        if key in fresh and stored.get(key) != fresh[key]:
            out.append(f"{key} is {json.dumps(stored.get(key))} but a replay gives {json.dumps(fresh[key])}")
    if fresh.get("gates") and stored.get("gates") != fresh["gates"]:  # gates evaluated (not --jev-no-gates)
        out.append("gates differ from this run's (gates.yaml or the numbers changed)")
    if stored.get("detail") != fresh.get("detail") and "detail" in fresh:
        out.append("the detail (reliability, curve, locales, per-case marks) differs from a replay")
    return out


def sibling_problems(pack: Pack, results_dir: Path, root: Path, skip: Path) -> Iterator[str]:
    """Results files of every backend folder for this pack, checked without grading: each
    recording has its results file, and each results file names a recording whose bytes and
    models it still describes."""

    for folder in column_folders(results_dir):
        if folder == skip:
            continue
        recording = predictions_in(folder, pack.id)
        refresh = refresh_command(pack, folder.name, root, results_dir)
        for split in pack.splits:
            path = results_file(folder, pack.id, split)
            if not exists(path):
                if is_regular(recording):
                    yield f"{shown(path, root)}: missing for {shown(recording, root)}; {refresh}"
                continue
            try:
                results = read(path)
            except ResultsError as exc:
                yield exc.one_line()
                continue
            named = root / (results.predictions or "")
            if results.predictions is None or not is_regular(named):
                yield f"{shown(path, root)}: its recording {results.predictions} does not exist; {refresh}"
                continue
            stale = identity_problems(results, pack, split)
            if stale:
                yield f"{shown(path, root)}: {stale[0]}; {refresh}"
                continue
            loaded = load_recording(named)
            if results.predictions_sha256 != loaded.sha256:
                yield (f"{shown(path, root)}: predictions_sha256 is {results.predictions_sha256} but "
                       f"{results.predictions} has {loaded.sha256}; {refresh}")
            elif sorted(results.recorded_models) != sorted(loaded.models()):
                yield (f"{shown(path, root)}: recorded_models is {list(results.recorded_models)} but the recording "
                       f"holds {sorted(loaded.models())}; {refresh}")


def refresh_command(pack: Pack, backend_folder: str, root: Path, results_dir: Path) -> str:
    """The command that rewrites a pack's results files of one backend folder, with the results
    folder the run was given (`jev-packs refresh` knows only the rootdir's results/)."""
    if results_dir.resolve() == (root / "results").resolve():
        return (f"refresh with `pytest {shown(pack.path, root)} --jev-replay --jev-backend={backend_folder} "
                "--jev-write-results` (or `jev-packs refresh`)")
    return (f"refresh with `pytest {shown(pack.path, root)} --jev-replay --jev-backend={backend_folder} "
            f"--jev-results-dir={shown(results_dir, root)} --jev-write-results`")


def evidence_due(pack: Pack, models: tuple[str, ...] | list[str]) -> bool:
    """evidence.md belongs to the pack's pinned model: written from a recording of that model."""
    return pack.tested is not None and pack.tested in models


def sync(pack: Pack, run: RunResult, recording: Path, results_dir: Path, root: Path, *, write_files: bool,
         siblings: bool) -> tuple[list[Path], list[str]]:
    """Write (write_files) or check a run's results file, its report and, for the pinned model,
    the pack's evidence.md; also check the other backends' results files of the pack (siblings).
    Returns (files written, problems), each problem one line naming the file and the fix."""

    folder = results_folder(recording, results_dir, run.recorded_models)
    results = results_of(run, recording, folder, root)
    refresh = refresh_command(pack, folder.name, root, results_dir)
    evidence = pack.path / "evidence.md" if evidence_due(pack, run.recorded_models) and not run.split else None
    if write_files:
        written = write(results, report_markdown(results), folder, pack.id, run.split)
        if evidence is not None:
            atomic_write(evidence, report_markdown(results, "jev-packs evidence").encode("utf-8"))
            written.append(evidence)
        return written, []
    problems: list[str] = []
    path = results_file(folder, pack.id, run.split)
    if not exists(path):
        problems.append(f"{shown(path, root)}: no results file for this recording; {refresh}")
    else:
        try:
            stored = read(path)
        except ResultsError as exc:
            problems.append(exc.one_line())
        else:
            whys = identity_problems(stored, pack, run.split) + differences(stored, results)
            problems.extend(f"{shown(path, root)}: {why}; {refresh}" for why in whys)
            md = report_file(folder, pack.id, run.split)
            if not problems and (not is_regular(md) or md.read_text(encoding="utf-8") != report_markdown(stored)):
                problems.append(f"{shown(md, root)}: the report is not the one its results file renders; "
                                f"{refresh}")
    if evidence is not None and (not is_regular(evidence) or evidence.read_text(encoding="utf-8")
                                 != report_markdown(results, "jev-packs evidence")):
        problems.append(f"{shown(evidence, root)}: not the evidence the pinned model's recording gives; {refresh}")
    if siblings:
        problems.extend(sibling_problems(pack, results_dir, root, folder))
    return [], problems
