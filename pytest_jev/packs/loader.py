"""Load a pack folder into an immutable Pack, enforcing every rule of SPEC.md.

Errors are PackError: one line with file:line, what is wrong and how to fix it.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from ..errors import PackError, Problems
from ..fileio import exists, is_regular, read_text
from ..gcpause import gc_paused
from . import schema
from .cases import load_splits
from .model import Gates, Pack, Question, frozen_map
from .yamlfile import Lines, line_of, parse_yaml, read_yaml

SPEC1_KEYS = ("splits", "rubric")  # pack.yaml keys spec 1 adds to jevassert's spec 0
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
GATE_NAMES = ("min_accuracy", "max_ece", "max_cost_per_case_usd", "max_p95_latency_ms",
              "min_accuracy_ci_lower", "min_coverage_at_precision", "per_question",
              "max_regressions", "max_regression_rate", "min_accuracy_delta")  # the last three: against a baseline

# What to do about the commonest schema errors, keyed by (validator, last path part).
_FIXES = {
    ("required", "options"): "a choice question needs `options: {label: meaning}` including `unknown`",
    ("required", "levels"): "a score question needs `levels: [low, ..., high, unknown]`",
    ("contains", "levels"): "add `unknown` to the levels (Jev cannot abstain)",
    ("minItems", "levels"): "a score question needs 2 to 10 levels",
    ("maxItems", "levels"): "a score question takes at most 10 levels (the API refuses more)",
    ("pattern", "id"): "use kebab-case, e.g. support-triage",
    ("pattern", "version"): "use semver, e.g. 0.1.0",
    ("exclusiveMinimum", None): "threshold floors are probabilities in (0, 1]",
    ("maximum", None): "use a value of at most 1",
    ("enum", "type"): "question type must be noul, choice or score",
}


def load_pack(path: str | Path) -> Pack:
    """Load and validate a pack folder (or its pack.yaml); raise PackError on bad input."""
    path = Path(path)
    folder = path.parent if path.name == "pack.yaml" else path
    pack_file = folder / "pack.yaml"
    if not exists(pack_file):
        raise PackError("no pack.yaml here", file=folder,
                        fix="a pack folder holds pack.yaml, cases.jsonl and gates.yaml (see SPEC.md)")
    text = read_text(pack_file, PackError)
    raw, lines = parse_yaml(text, pack_file)
    if not isinstance(raw, dict):
        raise PackError("top level must be a mapping of pack keys", file=pack_file, line=1,
                        fix="start from the example in SPEC.md")
    _normalise_threshold_keys(raw)
    # every problem of pack.yaml, then every problem of gates.yaml and the case files together
    problems = Problems()
    _validate(raw, "pack", pack_file, lines, problems)
    problems.check()
    spec = raw["spec"]
    if type(spec) is not int:  # JSON Schema counts 0.0 as the integer 0
        problems.add(PackError(f"spec must be the integer 0 or 1, got {spec!r}", file=pack_file,
                               line=line_of(lines, ("spec",)),
                               fix="write `spec: 0` (or `spec: 1` for splits, locale and tags)"))
    for key in SPEC1_KEYS:
        if spec == 0 and key in raw:
            problems.add(PackError(f"`{key}` needs `spec: 1`", file=pack_file, line=line_of(lines, (key,)),
                                   fix="set spec: 1 (jevassert reads spec 0 only), or remove the key"))
    if raw["id"] != folder.resolve().name:
        problems.add(PackError(f"id '{raw['id']}' differs from the folder name '{folder.resolve().name}'",
                               file=pack_file, line=lines.get(("id",), 1),
                               fix="rename the folder or the id so they are equal"))
    questions = _questions(raw["questions"], pack_file, lines, problems)
    thresholds = _thresholds(raw.get("thresholds") or {}, questions, pack_file, lines, problems)
    _check_evidence(folder, raw.get("tested"), pack_file, lines, problems)
    problems.check()
    gates = load_gates(folder / "gates.yaml", questions, problems)
    with gc_paused():
        splits = load_splits(folder, raw.get("splits"), tuple(raw["state"]["fields"]), questions, spec,
                             pack_file, lines, problems)
    problems.check()
    cases = tuple(case for split in splits.values() for case in split.cases)
    warnings = tuple(f"{folder / name}: missing (SPEC.md asks every pack for one)"
                     for name in ("README.md", "CHANGELOG.md") if not is_regular(folder / name))
    warnings += tuple(f"{path}: a pack folder holds data only, but pytest imports and runs Python files "
                      "it finds there (conftest.py, test_*.py); move it out of the pack"
                      for path in sorted(folder.glob("*.py")))
    return Pack(
        path=folder, id=raw["id"], version=raw["version"], license=raw["license"],
        tested=raw.get("tested"), description=raw["description"],
        state_description=raw["state"]["description"], state_fields=tuple(raw["state"]["fields"]),
        questions=frozen_map(questions), thresholds=frozen_map(thresholds), gates=gates,
        cases=cases, warnings=warnings, spec=spec, splits=frozen_map(splits), rubric_pin=raw.get("rubric"),
        file_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


# -- pack.yaml ----------------------------------------------------------------------------

def _normalise_threshold_keys(raw: dict[str, Any]) -> None:
    """YAML reads `true:` as a boolean key and `1:` as an integer one; thresholds name
    labels as strings (jevassert reads such keys the same way)."""
    thresholds = raw.get("thresholds")
    if isinstance(thresholds, dict):
        for qid, floors in list(thresholds.items()):
            if isinstance(floors, dict):
                thresholds[qid] = {_label(k): v for k, v in floors.items()}


def _label(key: Any) -> Any:
    if key is True:
        return "true"
    if key is False:
        return "false"
    if isinstance(key, int):
        return str(key)
    return key


def _validate(raw: Any, name: str, file: Path, lines: dict[tuple[Any, ...], int], problems: Problems) -> None:
    """Every schema error of the document, in the order of its lines."""
    errors = schema.all_errors(schema.named_validator(name), raw)
    for problem in sorted((_schema_problem(error, name, file, lines) for error in errors), key=lambda e: e.line or 0):
        problems.add(problem)


def _schema_problem(error: Any, name: str, file: Path, lines: dict[tuple[Any, ...], int]) -> PackError:
    path = tuple(error.absolute_path)
    last = next((p for p in reversed(path) if isinstance(p, str)), None)
    fix = (_FIXES.get((error.validator, last)) or _FIXES.get((error.validator, None))
           or f"see the {name}.yaml rules in SPEC.md")
    if error.validator == "required" and "'unknown'" in error.message:
        fix = "add an `unknown` option (Jev cannot abstain)"
    unquoted = _unquoted(error, lines)
    if unquoted is not None:
        return unquoted.at(file)
    return PackError(schema.describe(error), file=file, line=line_of(lines, path), fix=fix)


class _Unquoted:
    """A plain word YAML read as something other than text where text was wanted (`yes:` as an
    option label is the boolean true): the message says which word, and to quote it."""

    def __init__(self, where: str, word: str, line: int, kind: str, shown: str, is_key: bool) -> None:
        self.where, self.word, self.line, self.kind, self.shown, self.is_key = where, word, line, kind, shown, is_key

    def at(self, file: Path) -> PackError:
        what = "key" if self.is_key else "value"
        return PackError(f"{self.where}: the {what} {self.word} is read by YAML as {self.kind} {self.shown}, "
                         f"not the text '{self.word}'", file=file, line=self.line,
                         fix=f"quote it: '{self.word}'{':' if self.is_key else ''}")


def _unquoted(error: Any, lines: dict[tuple[Any, ...], int]) -> _Unquoted | None:
    instance = error.instance
    if isinstance(instance, str) or not isinstance(lines, Lines) or not _wants_text(error):
        return None
    path = tuple(yaml_path_part(p) for p in error.absolute_path)
    found = lines.unquoted(path, instance)
    if found is None:
        return None
    word, line, kind, is_key = found
    shown = "" if instance is None else str(instance).lower() if isinstance(instance, bool) else repr(instance)
    return _Unquoted(".".join(str(p) for p in path) or "top level", word, line, kind, shown, is_key)


def _wants_text(error: Any) -> bool:
    """The schema asked for a string where YAML gave something else."""
    if error.validator == "type":
        wanted = error.validator_value
        return wanted == "string" or (isinstance(wanted, list) and "string" in wanted)
    if error.validator in ("oneOf", "anyOf"):
        return any(isinstance(sub, dict) and sub.get("type") == "string" for sub in error.validator_value)
    return False


def yaml_path_part(part: Any) -> Any:
    """A key of the data as the line index names it (YAML's booleans as true/false)."""
    return "true" if part is True else "false" if part is False else part


# -- questions, thresholds, gates ----------------------------------------------------------

def _questions(raw: dict[str, Any], file: Path, lines: dict[tuple[Any, ...], int],
               problems: Problems) -> dict[str, Question]:
    out: dict[str, Question] = {}
    for qid, q in raw.items():
        descriptions = q.get("level_descriptions") or {}
        for level in descriptions:
            if level not in q.get("levels", ()):
                problems.add(PackError(f"questions.{qid}.level_descriptions: '{level}' is not one of the levels",
                                       file=file,
                                       line=line_of(lines, ("questions", qid, "level_descriptions", level)),
                                       fix=f"use one of {list(q['levels'])}"))
        out[qid] = Question(
            id=qid, type=q["type"], instructions=q["instructions"],
            options=frozen_map(q.get("options")), levels=tuple(q.get("levels", ())),
            level_descriptions=frozen_map(descriptions),
        )
    return out


def _thresholds(raw: dict[str, Any], questions: dict[str, Question], file: Path,
                lines: dict[tuple[Any, ...], int], problems: Problems) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for qid, floors in raw.items():
        if qid not in questions:
            problems.add(PackError(f"thresholds.{qid}: no such question", file=file,
                                   line=line_of(lines, ("thresholds", qid)), fix=f"use one of {list(questions)}"))
            continue
        for label in floors:
            if label not in questions[qid].labels:
                problems.add(PackError(f"thresholds.{qid}: '{label}' is not a label of {qid}", file=file,
                                       line=line_of(lines, ("thresholds", qid, label)),
                                       fix=f"use one of {list(questions[qid].labels)}"))
        out[qid] = frozen_map({label: float(v) for label, v in floors.items()})
    return out


def load_gates(file: Path, questions: dict[str, Question] | Any, problems: Problems | None = None) -> Gates:
    """gates.yaml; a missing or empty file declares no gates (a folder, a FIFO or a dangling
    link named gates.yaml is an error, not "no gates"). Every problem of the file is reported:
    into `problems` when given (with those of the case files), else raised."""
    found = Problems() if problems is None else problems
    before = found.total
    try:
        if not exists(file):
            return Gates()
        raw, lines = read_yaml(file)
    except PackError as exc:
        if problems is None:
            raise
        problems.add(exc)
        return Gates()
    if raw is None:
        return Gates()
    checked = raw
    if isinstance(raw, dict):
        unknown = [key for key in raw if key not in GATE_NAMES]
        for key in unknown:
            found.add(PackError(f"unknown gate '{key}'", file=file, line=line_of(lines, (key,)),
                                fix=f"use one of {', '.join(GATE_NAMES)}"))
        checked = {key: value for key, value in raw.items() if key not in unknown}
    _validate(checked, "gates", file, lines, found)
    if found.total > before:
        if problems is None:
            found.check()
        return Gates()
    for qid in (raw.get("per_question") or {}):
        if qid not in questions:
            found.add(PackError(f"per_question.{qid}: no such question", file=file,
                                line=line_of(lines, ("per_question", qid)), fix=f"use one of {list(questions)}"))
    if found.total > before:
        if problems is None:
            found.check()
        return Gates()
    names: dict[str, int] = {}
    for key, value in raw.items():
        if key == "per_question":
            for qid, spec in value.items():
                for gate in spec:
                    names[f"per_question.{qid}.{gate}"] = line_of(lines, (key, qid, gate)) or 1
        else:
            names[key] = line_of(lines, (key,)) or 1
    return Gates(values=frozen_map(raw), lines=frozen_map(names))


def _check_evidence(folder: Path, tested: str | None, file: Path, lines: dict[tuple[Any, ...], int],
                    problems: Problems) -> None:
    has = is_regular(folder / "evidence.md")
    if tested and not has:
        problems.add(PackError(f"tested is '{tested}' but evidence.md is missing", file=file,
                               line=line_of(lines, ("tested",)),
                               fix="add the evidence report, or set `tested: null` until evidence exists"))
    if has and not tested:
        problems.add(PackError("evidence.md exists but tested is null", file=file, line=line_of(lines, ("tested",)),
                               fix="set `tested` to the model version the evidence was recorded on"))
