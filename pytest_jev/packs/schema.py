"""The JSON Schemas shipped in this folder, loaded once, and their errors as one line."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from functools import cache
from importlib import resources
from typing import Any

SCHEMAS = ("pack", "gates", "case", "recording")


@cache
def schema(name: str) -> dict[str, Any]:
    text = resources.files("pytest_jev.packs").joinpath(f"schema/{name}.schema.json").read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


def validator(document: dict[str, Any]) -> Any:
    import jsonschema  # heavy: imported only when a pack is loaded

    cls = jsonschema.validators.validator_for(document)
    return cls(document, format_checker=None)


@cache
def named_validator(name: str) -> Any:
    return validator(schema(name))


def first_error(valid: Any, instance: Any) -> Any | None:
    """The most relevant error, or None when the instance is valid."""
    import jsonschema

    errors = list(valid.iter_errors(instance))
    if not errors:
        return None
    return jsonschema.exceptions.best_match(errors)


def all_errors(valid: Any, instance: Any) -> list[Any]:
    """Every error, each the most relevant of its own branch (an anyOf's, a oneOf's), without
    repeats."""
    import jsonschema

    out: dict[tuple[tuple[str, ...], str], Any] = {}
    for error in valid.iter_errors(instance):
        best = jsonschema.exceptions.best_match([error])
        out.setdefault((tuple(map(str, best.absolute_path)), best.message), best)
    return list(out.values())


class MemoValidator:
    """Validate many small documents whose validity depends only on a skeleton.

    cases.jsonl and recordings hold up to millions of lines that share a handful of
    shapes. Validity under their schemas depends only on what `skeleton(doc)` keeps
    (key sets, labels, value types), so the schema decides once per skeleton and
    the answer is reused; a line with a new skeleton is validated in full.
    """

    def __init__(self, document: dict[str, Any], skeleton: Callable[[Any], Hashable]) -> None:
        self._valid = validator(document)
        self._skeleton = skeleton
        self._seen: dict[Hashable, bool] = {}

    def error(self, instance: Any) -> Any | None:
        try:
            key = self._skeleton(instance)
        except Exception:  # noqa: BLE001  an odd shape: let the schema speak
            return first_error(self._valid, instance)
        ok = self._seen.get(key)
        if ok is None:
            ok = self._valid.is_valid(instance)
            self._seen[key] = ok
        return None if ok else first_error(self._valid, instance)


def describe(error: Any) -> str:
    """A jsonschema error as 'at <path>: <message>'."""
    path = ".".join(str(p) for p in error.absolute_path)
    message = error.message
    if error.validator == "additionalProperties":
        message = message.replace("Additional properties are not allowed", "unexpected key")
    if len(message) > 160:
        message = message[:157] + "..."
    return f"{path}: {message}" if path else message
