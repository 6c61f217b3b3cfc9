"""The JSON Schemas of the files jev-packs writes, shipped in `pytest_jev/formats/schema/`, and
their errors as one line naming the file, the line and the fix.

Every schema is draft 2020-12, has an `$id` and a title, and sets `additionalProperties`
on purpose: closed (false) where jev-packs alone writes the object and knows every key; open
where a backend or jevassert adds keys of its own (backend.json, a recording line).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from ..errors import JevError
from ..fileio import loads, read_text
from ..packs.schema import describe, first_error

ID_PREFIX = "https://jev-packs.invalid/schema/"


class FormatError(JevError):
    """A file that is not what its format says (its JSON Schema, or JSON at all)."""


_Doc = TypeVar("_Doc", bound="JsonFile")


class JsonFile:
    """A file of ours holding one JSON object: `read` parses and types it, failing with one line
    that names the file and READ_FIX (the way to make it again)."""

    __slots__ = ()
    READ_FIX: ClassVar[str] = "write it again"

    @classmethod
    def from_json(cls: type[_Doc], doc: Mapping[str, Any]) -> _Doc:
        raise NotImplementedError

    @classmethod
    def read(cls: type[_Doc], path: Path, error: type[JevError] = FormatError, fix: str | None = None) -> _Doc:
        doc, _ = read_object(path, error, fix or cls.READ_FIX)
        return cls.from_json(doc)


@cache
def schema(name: str) -> dict[str, Any]:
    """The shipped schema `<name>.schema.json` as a JSON object."""
    text = resources.files("pytest_jev.formats").joinpath(f"schema/{name}.schema.json").read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


@cache
def _validator(name: str) -> Any:
    """A validator of schema `name` that resolves `$ref`s into the other shipped schemas by `$id`."""
    import jsonschema  # heavy: imported when a file is validated, never by a plain replay
    from referencing import Registry, Resource

    registry: Any = Registry().with_resources(
        (schema(other)["$id"], Resource.from_contents(schema(other))) for other in schema_names())
    document = schema(name)
    return jsonschema.validators.validator_for(document)(document, registry=registry, format_checker=None)


def problem(name: str, doc: Any) -> Any | None:
    """The most relevant schema error of `doc` under schema `name`, or None when it is valid."""
    return first_error(_validator(name), doc)


def errors(name: str, doc: Any) -> list[Any]:
    """Every schema error of `doc` under schema `name`, by their place in the document."""
    return sorted(_validator(name).iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])


def check(name: str, doc: Any, *, file: str | Path, fix: str, line: int | None = None,
          text: str | None = None) -> None:
    """FormatError with one line when `doc` breaks schema `name`. `line` is the line of a JSONL
    file; for a JSON document, `text` (the file's text) locates the line of the offending key."""
    error = problem(name, doc)
    if error is None:
        return
    where = line if line is not None else line_of(text, list(error.absolute_path)) if text is not None else None
    raise FormatError(f"not a valid {schema(name)['title'].split(' (')[0]}: {describe(error)}", file=file,
                      line=where, fix=fix)


def line_of(text: str, path: Sequence[Any]) -> int:
    """The line of the deepest key of `path` found in `text`, searched in order (array indices are
    skipped); 1 when none is found. Exact for the indented files jev-packs writes."""
    at = 0
    found = 0
    for part in path:
        if not isinstance(part, str):
            continue
        match = re.compile(re.escape(json.dumps(part, ensure_ascii=False)) + r"\s*:").search(text, at)
        if match is None:
            break
        at = found = match.start()
    return text.count("\n", 0, found) + 1


def read_object(path: Path, error: type[JevError], fix: str) -> tuple[dict[str, Any], str]:
    """A JSON document that must be an object, and its text; `error` with one line otherwise."""
    text = read_text(path, error, fix=fix)
    try:
        doc = loads(text)
    except ValueError as exc:
        raise error(f"not valid JSON ({exc})", file=path, fix=fix) from None
    if not isinstance(doc, dict):
        raise error("is not a JSON object", file=path, fix=fix)
    return doc, text


def read_lines(path: Path, error: type[JevError], fix: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line of a JSONL file; `error` naming the line of
    one that is not a JSON object."""
    out = []
    for number, raw in enumerate(read_text(path, error, fix=fix).split("\n"), 1):
        if not raw.strip():
            continue
        try:
            doc = loads(raw)
        except ValueError as exc:
            raise error(f"not valid JSON ({getattr(exc, 'msg', exc)})", file=path, line=number, fix=fix) from None
        if not isinstance(doc, dict):
            raise error("is not a JSON object", file=path, line=number, fix=fix)
        out.append((number, doc))
    return out


def check_file(name: str, path: Path, fix: str, *, lines: bool) -> int:
    """Validate a whole file (a document, or each line of a JSONL file) against schema `name`;
    returns the number of objects checked."""
    if lines:
        found = read_lines(path, FormatError, fix)
        for number, doc in found:
            check(name, doc, file=path, line=number, fix=fix)
        return len(found)
    doc, text = read_object(path, FormatError, fix)
    check(name, doc, file=path, text=text, fix=fix)
    return 1


def schema_names() -> list[str]:
    """The names of every shipped schema."""
    folder = resources.files("pytest_jev.formats").joinpath("schema")
    return sorted(entry.name[:-len(".schema.json")] for entry in folder.iterdir()
                  if entry.name.endswith(".schema.json"))

