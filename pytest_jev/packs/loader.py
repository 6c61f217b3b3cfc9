"""Load a pack folder into an immutable Pack, enforcing every rule of SPEC.md.

Errors are PackError: one line with file:line, what is wrong and how to fix it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..bulk import gc_paused
from ..errors import PackError
from ..files import exists, is_regular, loads, read_text
from . import schema
from .model import Case, Gates, Pack, Question, frozen_map
from .yamlfile import line_of, read_yaml

KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
GATE_NAMES = ("min_accuracy", "max_ece", "max_cost_per_case_usd", "max_p95_latency_ms",
              "min_accuracy_ci_lower", "min_coverage_at_precision", "per_question")

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
    raw, lines = read_yaml(pack_file)
    if not isinstance(raw, dict):
        raise PackError("top level must be a mapping of pack keys", file=pack_file, line=1,
                        fix="start from the example in SPEC.md")
    _normalise_threshold_keys(raw)
    _validate(raw, "pack", pack_file, lines)
    if type(raw["spec"]) is not int:  # JSON Schema counts 0.0 as the integer 0
        raise PackError(f"spec must be the integer 0, got {raw['spec']!r}", file=pack_file,
                        line=line_of(lines, ("spec",)), fix="write `spec: 0`")
    if raw["id"] != folder.resolve().name:
        raise PackError(f"id '{raw['id']}' differs from the folder name '{folder.resolve().name}'",
                        file=pack_file, line=lines.get(("id",), 1),
                        fix="rename the folder or the id so they are equal")
    questions = _questions(raw["questions"], pack_file, lines)
    thresholds = _thresholds(raw.get("thresholds") or {}, questions, pack_file, lines)
    gates = load_gates(folder / "gates.yaml", questions)
    with gc_paused():
        cases = load_cases(folder / "cases.jsonl", tuple(raw["state"]["fields"]), questions)
    _check_evidence(folder, raw.get("tested"), pack_file, lines)
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
        cases=cases, warnings=warnings,
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


def _validate(raw: Any, name: str, file: Path, lines: dict[tuple[Any, ...], int]) -> None:
    error = schema.first_error(schema.named_validator(name), raw)
    if error is None:
        return
    path = tuple(error.absolute_path)
    last = next((p for p in reversed(path) if isinstance(p, str)), None)
    fix = (_FIXES.get((error.validator, last)) or _FIXES.get((error.validator, None))
           or f"see the {name}.yaml rules in SPEC.md")
    if error.validator == "required" and "'unknown'" in error.message:
        fix = "add an `unknown` option (Jev cannot abstain)"
    raise PackError(schema.describe(error), file=file, line=line_of(lines, path), fix=fix)


# -- questions, thresholds, gates ----------------------------------------------------------

def _questions(raw: dict[str, Any], file: Path, lines: dict[tuple[Any, ...], int]) -> dict[str, Question]:
    out: dict[str, Question] = {}
    for qid, q in raw.items():
        descriptions = q.get("level_descriptions") or {}
        for level in descriptions:
            if level not in q.get("levels", ()):
                raise PackError(f"questions.{qid}.level_descriptions: '{level}' is not one of the levels",
                                file=file, line=line_of(lines, ("questions", qid, "level_descriptions", level)),
                                fix=f"use one of {list(q['levels'])}")
        out[qid] = Question(
            id=qid, type=q["type"], instructions=q["instructions"],
            options=frozen_map(q.get("options")), levels=tuple(q.get("levels", ())),
            level_descriptions=frozen_map(descriptions),
        )
    return out


def _thresholds(raw: dict[str, Any], questions: dict[str, Question], file: Path,
                lines: dict[tuple[Any, ...], int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for qid, floors in raw.items():
        if qid not in questions:
            raise PackError(f"thresholds.{qid}: no such question", file=file,
                            line=line_of(lines, ("thresholds", qid)), fix=f"use one of {list(questions)}")
        for label in floors:
            if label not in questions[qid].labels:
                raise PackError(f"thresholds.{qid}: '{label}' is not a label of {qid}", file=file,
                                line=line_of(lines, ("thresholds", qid, label)),
                                fix=f"use one of {list(questions[qid].labels)}")
        out[qid] = frozen_map({label: float(v) for label, v in floors.items()})
    return out


def load_gates(file: Path, questions: dict[str, Question] | Any) -> Gates:
    """gates.yaml; a missing or empty file declares no gates (a folder, a FIFO or a dangling
    link named gates.yaml is an error, not "no gates")."""
    if not exists(file):
        return Gates()
    raw, lines = read_yaml(file)
    if raw is None:
        return Gates()
    if isinstance(raw, dict):
        for key in raw:
            if key not in GATE_NAMES:
                raise PackError(f"unknown gate '{key}'", file=file, line=line_of(lines, (key,)),
                                fix=f"use one of {', '.join(GATE_NAMES)}")
    _validate(raw, "gates", file, lines)
    for qid in (raw.get("per_question") or {}):
        if qid not in questions:
            raise PackError(f"per_question.{qid}: no such question", file=file,
                            line=line_of(lines, ("per_question", qid)), fix=f"use one of {list(questions)}")
    names: dict[str, int] = {}
    for key, value in raw.items():
        if key == "per_question":
            for qid, spec in value.items():
                for gate in spec:
                    names[f"per_question.{qid}.{gate}"] = line_of(lines, (key, qid, gate)) or 1
        else:
            names[key] = line_of(lines, (key,)) or 1
    return Gates(values=frozen_map(raw), lines=frozen_map(names))


def _check_evidence(folder: Path, tested: str | None, file: Path, lines: dict[tuple[Any, ...], int]) -> None:
    has = is_regular(folder / "evidence.md")
    if tested and not has:
        raise PackError(f"tested is '{tested}' but evidence.md is missing", file=file,
                        line=line_of(lines, ("tested",)),
                        fix="add the evidence report, or set `tested: null` until evidence exists")
    if has and not tested:
        raise PackError("evidence.md exists but tested is null", file=file, line=line_of(lines, ("tested",)),
                        fix="set `tested` to the model version the evidence was recorded on")


# -- cases.jsonl ----------------------------------------------------------------------------

def _case_document(fields: tuple[str, ...], questions: dict[str, Question]) -> dict[str, Any]:
    """case.schema.json narrowed to this pack: exact state keys, declared labels only."""
    document: dict[str, Any] = json.loads(json.dumps(schema.schema("case")))
    document["properties"]["state"] = {
        "type": "object", "required": list(fields), "additionalProperties": False,
        "properties": dict.fromkeys(fields, True)}
    document["properties"]["expect"] = {
        "type": "object", "required": list(questions), "additionalProperties": False,
        "properties": {qid: ({"type": "boolean"} if q.type == "noul" else {"enum": list(q.labels)})
                       for qid, q in questions.items()}}
    return document


def _case_skeleton(doc: Any) -> Hashable:
    # validity depends on: the key set, id being a non-empty string, state keys, expect items
    expect = doc.get("expect")
    return (tuple(doc), type(doc.get("id")), bool(doc.get("id")),
            type(doc.get("state")), tuple(doc["state"]) if isinstance(doc.get("state"), dict) else None,
            tuple((k, type(v), v) for k, v in expect.items()) if isinstance(expect, dict) else type(expect))


def load_cases(file: Path, fields: tuple[str, ...], questions: dict[str, Question]) -> tuple[Case, ...]:
    if not exists(file):
        raise PackError("cases.jsonl is missing", file=file, fix="add the golden cases, one JSON object per line")
    memo = schema.MemoValidator(_case_document(fields, questions), _case_skeleton)
    seen: dict[str, int] = {}
    cases: list[Case] = []
    parse = loads
    for number, line in enumerate(_read_lines(file), 1):
        text = line.strip()
        if not text:
            raise PackError("blank line", file=file, line=number, fix="delete the empty line")
        try:
            doc = parse(text)
        except ValueError as exc:
            column = getattr(exc, "colno", None)
            where = "?" if column is None else column + len(line) - len(line.lstrip())
            raise PackError(f"not valid JSON ({getattr(exc, 'msg', exc)} at column {where})",
                            file=file, line=number, fix="each line must be one complete JSON object") from None
        if not isinstance(doc, dict):
            raise PackError("a case must be a JSON object", file=file, line=number,
                            fix='write {"id": ..., "state": {...}, "expect": {...}}')
        error = memo.error(doc)
        if error is not None:
            raise PackError(_case_problem(error, doc, fields, questions), file=file, line=number,
                            fix=_case_fix(error, fields, questions))
        case_id = doc["id"]
        if not (case_id.isascii() or _encodable(case_id)):
            raise PackError(f"case id {json.dumps(case_id)} holds a lone surrogate escape", file=file, line=number,
                            fix="write the id in valid Unicode (pytest node ids must be)")
        if case_id in seen:
            raise PackError(f"duplicate case id '{case_id}' (first on line {seen[case_id]})", file=file,
                            line=number, fix="give every case a unique id")
        seen[case_id] = number
        # doc is ours alone: wrap its dicts read-only instead of copying them
        cases.append(Case(case_id, MappingProxyType(doc["state"]), MappingProxyType(doc["expect"]), number))
    if not cases:
        raise PackError("no cases", file=file, fix="add at least one golden case")
    return tuple(cases)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_lines(file: Path) -> list[str]:
    return split_jsonl(read_text(file, PackError))


def split_jsonl(text: str) -> list[str]:
    """The lines of JSON Lines text, broken at CR LF, a lone CR or a lone LF only.

    A JSON string may hold a raw U+2028, U+2029 or U+0085, where str.splitlines()
    would break it; a raw CR or LF cannot occur inside one. A final line break ends
    the last line instead of opening an empty one.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()
    return lines


def _case_problem(error: Any, doc: dict[str, Any], fields: tuple[str, ...], questions: dict[str, Question]) -> str:
    path = tuple(error.absolute_path)
    if path[:1] == ("state",) or (error.validator in ("required", "additionalProperties") and path == ("state",)):
        got = sorted(doc["state"]) if isinstance(doc.get("state"), dict) else type(doc.get("state")).__name__
        return f"state keys {got} differ from state.fields {list(fields)}"
    if len(path) == 2 and path[0] == "expect":
        qid = path[1]
        q = questions[qid]
        wanted = "a JSON boolean (true/false)" if q.type == "noul" else f"one of {list(q.labels)}"
        return f"expect.{qid} is {json.dumps(doc['expect'][qid])}, not {wanted}"
    if path == ("expect",):
        got = sorted(doc["expect"]) if isinstance(doc.get("expect"), dict) else type(doc.get("expect")).__name__
        return f"expect keys {got} differ from the questions {list(questions)}"
    if path == ("id",):
        return "id must be a non-empty string"
    return schema.describe(error)


def _case_fix(error: Any, fields: tuple[str, ...], questions: dict[str, Question]) -> str:
    path = tuple(error.absolute_path)
    if path[:1] == ("state",):
        return "give the state exactly the keys listed in pack.yaml state.fields"
    if path[:1] == ("expect",):
        return "give one declared label per question (noul: true/false)"
    return 'each line is {"id": ..., "state": {...}, "expect": {...}}'
