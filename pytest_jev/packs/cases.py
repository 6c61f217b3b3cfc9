"""Case files: cases.jsonl, or the frozen split files a spec-1 pack declares.

Each line is one golden case (`id`, `state`, `expect`; spec 1 adds `locale` and `tags`),
validated against case.schema.json narrowed to the pack (its state fields and labels).
A split file is frozen: its sha256 and line count are declared in pack.yaml, and a file
whose bytes changed is refused before anything is graded (the split's check item says
how); the loader records what it found and never trusts a file it could not read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Hashable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import PackError, Problems
from ..fileio import DuplicateKeyError, decode, exists, read_bytes
from ..fileio import loads_line as parse_json
from . import schema
from .model import Case, Question, Split
from .yamlfile import Lines, line_of

CASES_FILE = "cases.jsonl"
# A case file larger than this is refused unread: 256 MB is about 1.5 million cases of 170
# bytes (the 100,000-case benchmark pack is 16 MB), and loading one takes several times its
# size in memory.
MAX_CASES_BYTES = 256 * 2**20
CASES_LIMIT = (MAX_CASES_BYTES, "a case file")


def load_splits(folder: Path, declared: Mapping[str, Any] | None, fields: tuple[str, ...],
                questions: dict[str, Question], spec: int, pack_file: Path, lines: Lines,
                problems: Problems | None = None) -> dict[str, Split]:
    """The pack's splits: those pack.yaml declares, else the one implicit split of cases.jsonl
    (named "", shown as cases.jsonl). The problems of every case file go into `problems` (the
    loader raises them all at once), else the first file's are raised at its end."""
    seen: dict[str, tuple[Path, int]] = {}
    if not declared:
        file = folder / CASES_FILE
        fix = "add the golden cases, one JSON object per line"
        if not exists(file):
            raise PackError(f"{file.name} is missing", file=file, fix=fix)
        data = read_bytes(file, PackError, fix=fix, limit=CASES_LIMIT)
        cases = load_cases(file, fields, questions, spec=spec, seen=seen, data=data, problems=problems)
        return {"": Split("", file, cases, None, None, hashlib.sha256(data).hexdigest(), len(cases))}
    if exists(folder / CASES_FILE):
        raise PackError("a pack that declares splits keeps its cases in the split files", file=folder / CASES_FILE,
                        fix="move these cases into a split file declared in pack.yaml, or remove the file")
    out: dict[str, Split] = {}
    for name, entry in declared.items():
        file = folder / entry["file"]
        try:
            if not exists(file):
                raise PackError(f"split {name}: {entry['file']} is missing", file=pack_file,
                                line=line_of(lines, ("splits", name)), fix="add the file or remove the split")
            data = read_bytes(file, PackError, limit=CASES_LIMIT)
            cases = load_cases(file, fields, questions, spec=spec, seen=seen, data=data, problems=problems)
        except PackError as exc:  # the other split files are still read, their problems reported too
            if problems is None:
                raise
            problems.add(exc)
            continue
        out[name] = Split(name, file, cases, entry["sha256"], entry["lines"], hashlib.sha256(data).hexdigest(),
                          _line_count(data))
    return out


def _line_count(data: bytes) -> int:
    """Lines as `wc -l` counts them, plus a last line without its line break."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


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
    # validity depends on: the key set, id being a non-empty string, state keys, expect items,
    # and the locale and tags themselves (a handful of distinct values in a pack)
    expect = doc.get("expect")
    tags = doc.get("tags")
    return (tuple(doc), type(doc.get("id")), bool(doc.get("id")), repr(doc.get("locale")),
            tuple(map(repr, tags)) if isinstance(tags, list) else repr(tags),
            type(doc.get("state")), tuple(doc["state"]) if isinstance(doc.get("state"), dict) else None,
            tuple((k, type(v), v) for k, v in expect.items()) if isinstance(expect, dict) else type(expect))


def load_cases(file: Path, fields: tuple[str, ...], questions: dict[str, Question], *, data: bytes, spec: int = 0,
               seen: dict[str, tuple[Path, int]] | None = None, problems: Problems | None = None) -> tuple[Case, ...]:
    """The cases of one case file (cases.jsonl, or a split's file) from its bytes. `seen`
    carries the ids of the pack's other split files, which must not repeat. Every problem of
    the file is reported, not only the first: into `problems` when given (the caller raises
    them with those of the pack's other files), else raised at the end."""
    memo = schema.MemoValidator(_case_document(fields, questions), _case_skeleton)
    seen = {} if seen is None else seen
    found = Problems() if problems is None else problems
    before = found.total
    cases: list[Case] = []
    parse = parse_json
    for number, line in enumerate(split_jsonl(decode(data, file, PackError)), 1):
        text = line.strip()
        if not text:
            found.add(PackError("blank line", file=file, line=number, fix="delete the empty line"))
            continue
        try:
            doc = parse(text)
        except DuplicateKeyError as exc:
            found.add(PackError(str(exc), file=file, line=number, fix="keep one of them"))
            continue
        except ValueError as exc:
            column = getattr(exc, "colno", None)
            where = "?" if column is None else column + len(line) - len(line.lstrip())
            found.add(PackError(f"not valid JSON ({getattr(exc, 'msg', exc)} at column {where})",
                                file=file, line=number, fix="each line must be one complete JSON object"))
            continue
        if not isinstance(doc, dict):
            found.add(PackError("a case must be a JSON object", file=file, line=number,
                                fix='write {"id": ..., "state": {...}, "expect": {...}}'))
            continue
        error = memo.error(doc)
        if error is not None:
            found.add(PackError(_case_problem(error, doc, fields, questions), file=file, line=number,
                                fix=_case_fix(error, fields, questions)))
            continue
        if spec == 0 and ("locale" in doc or "tags" in doc):
            found.add(PackError("a case with locale or tags needs `spec: 1` in pack.yaml", file=file, line=number,
                                fix="set spec: 1 (jevassert reads spec 0 only), or drop locale and tags"))
            continue
        case_id = doc["id"]
        if not (case_id.isascii() or _encodable(case_id)):
            found.add(PackError(f"case id {json.dumps(case_id)} holds a lone surrogate escape", file=file,
                                line=number, fix="write the id in valid Unicode (pytest node ids must be)"))
            continue
        if case_id in seen:
            first_file, first_line = seen[case_id]
            where = f"line {first_line}" if first_file == file else f"{first_file.name}:{first_line}"
            found.add(PackError(f"duplicate case id '{case_id}' (first on {where})", file=file,
                                line=number, fix="give every case a unique id"))
            continue
        seen[case_id] = (file, number)
        # doc is ours alone: wrap its dicts read-only instead of copying them
        cases.append(Case(case_id, MappingProxyType(doc["state"]), MappingProxyType(doc["expect"]), number,
                          doc.get("locale"), tuple(doc.get("tags", ()))))
    if not cases and found.total == before:
        found.add(PackError("no cases", file=file, fix="add at least one golden case"))
    if problems is None:
        found.check()
    return tuple(cases)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
    if path[:1] == ("locale",):
        return f"locale {json.dumps(doc.get('locale'))} is not a BCP 47 language tag such as vi, en or pt-BR"
    if path[:1] == ("tags",):
        return f"tags {json.dumps(doc.get('tags'))} is not a list of distinct kebab-case words"
    return schema.describe(error)


def _case_fix(error: Any, fields: tuple[str, ...], questions: dict[str, Question]) -> str:
    path = tuple(error.absolute_path)
    if path[:1] == ("state",):
        return "give the state exactly the keys listed in pack.yaml state.fields"
    if path[:1] == ("expect",):
        return "give one declared label per question (noul: true/false)"
    return 'each line is {"id": ..., "state": {...}, "expect": {...}}'
