"""Typed models of the files jev-packs writes or reads back, and their JSON Schemas.

One model per format reads (`from_json`, and `read` for a whole file) and writes (`to_json`,
and `dumps`/`write` where the bytes are the model's business) it; writing a model read from
a file gives back that file's bytes. Each format has a JSON Schema in `schema/` (draft
2020-12), which the tests hold every committed file and every file a fresh run writes to.
docs/formats.md is the reader's table of them. The pack inputs (pack.yaml, cases, gates.yaml)
are the loader's business: their schemas live in packs/schema/.

This package sits in the files layer: it imports the base modules (errors, numbers, fileio for
reads and writes) and packs.schema, and nothing of pytest, the registry, the protocol or the
recorder (pyproject.toml's import-linter contracts hold it to that).
Its modules are imported by name (`from pytest_jev.formats.run_json import ResultsFile`):
this file imports none of them, so reading a recording does not load the registry's models.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath


@dataclass(frozen=True)
class Format:
    """A file format: its schema's name (schema/<name>.schema.json), the model that reads and
    writes it (module:Class in this package), where its files live, and what to do about an
    invalid one."""

    schema: str
    model: str
    where: str
    lines: bool  # JSON Lines: one object per line, each valid on its own
    fix: str


FORMATS = (
    Format("recording-line", "recording_line:RecordingLine",
           "results/<backend>/<pack>.predictions.jsonl (round k: .predictions-r<k>.jsonl; its journal "
           ".predictions.jsonl.journal.jsonl); packs/<pack>/predictions.jsonl", True,
           "re-record the case (--jev-record)"),
    Format("backend", "backend_json:BackendInfo", "results/<backend>/backend.json", False,
           "repair it, or delete it and re-record"),
    Format("results", "run_json:ResultsFile", "results/<backend>/<pack>.json, <pack>.<split>.json", False,
           "refresh it (jev-packs refresh)"),
    Format("jev-json", "run_json:JevJson", "the file --jev-json names", False, "write it again with --jev-json"),
    Format("protocol-report", "protocol_json:ProtocolReport", "results/<backend>/<pack>.report.<split>.json", False,
           "re-run the protocol run that wrote it (--jev-tune / --jev-heldout)"),
    Format("thresholds", "protocol_json:Thresholds", "results/<backend>/<pack>.thresholds.json", False,
           "re-run --jev-tune to write it again"),
    Format("sample-line", "protocol_json:SampleLine", "results/<backend>/<pack>.results.<split>.jsonl", True,
           "re-run the protocol run that wrote it (--jev-tune / --jev-heldout)"),
    Format("comparison", "protocol_json:Comparison", "results/comparisons/<pack>.<split>.json", False,
           "merge the reports again (jev-packs merge)"),
    Format("flips", "flips_json:FlipReport", "results/flips/<current>/<pack>[.<split>].json", False,
           "regenerate it (jev-packs refresh)"),
    Format("index", "index_json:RegistryIndex", "index.json", False,
           "regenerate it with `jev-packs refresh` (or `jev-packs index`)"),
    Format("answers-line", "answers_line:AnswerLine",
           "tests/jev_answers/<module>.jsonl and its journals .<module>.journal-<writer>.jsonl; an overridden "
           "jev_client's cache .pytest_cache/d/jev_client/<module path>.jsonl", True,
           "repair or delete the line, or re-record the module's answers with --jev-record=all"),
    Format("harvest-row", "harvest_row:HarvestRow", "<out>/<pack>.harvest.jsonl (jev-packs harvest)", True,
           "run jev-packs harvest again"),
    Format("audit-blind-line", "audit_line:BlindLine", "<out>/blind.jsonl (jev-packs audit-sample)", True,
           "run jev-packs audit-sample again"),
    Format("audit-labels-line", "audit_line:LabelsLine", "the annotator's labels file (jev-packs audit-kappa)", True,
           'give each line as {"id": ..., "labels": {question: label}}'),
)


def format_named(schema: str) -> Format:
    return next(f for f in FORMATS if f.schema == schema)


def format_of(path: PurePath) -> Format | None:
    """The format of a file by its name and folder, as jev-packs lays them out; None for a file
    that is none of them (pack inputs, Markdown, HTML)."""
    name, folder = path.name, path.parent.name
    if name == "predictions.jsonl" or name.endswith(".predictions.jsonl") or _RECORDING.search(name):
        return format_named("recording-line")
    if name.endswith(".jsonl") and (folder == "jev_answers" or _in_client_cache(path)):
        return format_named("answers-line")
    if name.endswith(".harvest.jsonl"):
        return format_named("harvest-row")
    if name == "blind.jsonl":
        return format_named("audit-blind-line")
    if _SAMPLES.search(name):
        return format_named("sample-line")
    if name == "index.json" and folder != "comparisons":
        return format_named("index")
    if name.endswith(".json") and path.parent.parent.name == "flips" and path.parent.parent.parent.name == "results":
        return format_named("flips")
    if not name.endswith(".json") or path.parent.parent.name != "results":
        return None
    if folder == "comparisons":
        return format_named("comparison")
    if name == "backend.json":
        return format_named("backend")
    if name.endswith(".thresholds.json"):
        return format_named("thresholds")
    if _REPORT.search(name):
        return format_named("protocol-report")
    return format_named("results")


def _in_client_cache(path: PurePath) -> bool:
    """Under pytest's cache folder's d/jev_client/ (fixture/client_cache.py), at any depth."""
    parts = path.parts
    return any(parts[i:i + 2] == ("d", "jev_client") for i in range(len(parts) - 1))


_RECORDING = re.compile(r"\.predictions(-r[0-9]+)?\.jsonl(\.journal\.jsonl)?$")  # rounds, journals
_SAMPLES = re.compile(r"\.results\.[^.]+\.jsonl$")
_REPORT = re.compile(r"\.report\.[^.]+\.json$")
