"""Recordings: jevassert predictions.jsonl files and our superset, read and located.

A recording holds one JSON line per case (`case_id`, `model`, `latency_ms`,
`usage`, `answers`, `error`, plus optional provenance keys). It is read once into
a Recording keyed by case id; nothing here touches the network.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any, Hashable, Mapping

from .bulk import gc_paused
from .errors import RecordingError, RecordingNotFound
from .packs import schema
from .packs.loader import split_jsonl


@dataclass(frozen=True)
class Recording:
    path: Path
    lines: Mapping[str, Mapping[str, Any]]  # case_id -> the decoded line, in file order
    line_numbers: Mapping[str, int]
    sha256: str

    def models(self) -> list[str]:
        return list(self._models)

    def modes(self) -> set[str]:
        return set(self._modes)

    @cached_property
    def _models(self) -> tuple[str, ...]:
        return tuple(sorted({rec["model"] for rec in self.lines.values() if isinstance(rec.get("model"), str)}))

    @cached_property
    def _modes(self) -> frozenset[str]:
        return frozenset(str(rec["mode"]) for rec in self.lines.values() if rec.get("mode"))


_ABSENT = object()  # a key left out is not the same as a key set to null


def _skeleton_of(properties: Mapping[str, Any]) -> Any:
    """What a line's validity depends on under the recording schema: the type of each
    property the schema constrains (absent, null and each JSON type told apart), whether
    case_id is empty, and whether a float given for an integer property is integral (the
    schema takes 1.0 as an integer). Keys it does not describe, and what answers holds,
    are free, so a line's dozen provenance keys cost nothing here."""
    checked = tuple(k for k, rule in properties.items() if rule is not True)
    integral = tuple(k for k in checked if "integer" in _json_types(properties[k]))

    def skeleton(doc: Any) -> Hashable:
        return (tuple(type(doc.get(k, _ABSENT)) for k in checked), bool(doc.get("case_id")),
                tuple(v.is_integer() for v in map(doc.get, integral) if type(v) is float))
    return skeleton


def _json_types(rule: Mapping[str, Any]) -> tuple[str, ...]:
    kind = rule.get("type", ())
    return (kind,) if isinstance(kind, str) else tuple(kind)


def split_recording(path: Path, data: bytes) -> tuple[list[str], str | None]:
    """A recording's complete lines (as cases.jsonl splits them) and its torn tail: the text
    after the last line break, None when the file ends with one. A torn tail may end inside
    a multi-byte character, so it is decoded apart."""
    if not data or data.endswith((b"\n", b"\r")):
        whole = len(data)
    else:
        whole = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
    try:
        lines = split_jsonl(data[:whole].decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RecordingError(f"not UTF-8 text (byte {exc.start})", file=path, fix="re-record the file") from None
    return lines, data[whole:].decode("utf-8", errors="replace") if whole < len(data) else None


def load_recording(path: str | Path) -> Recording:
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RecordingNotFound("recording not found", file=path) from None
    except OSError as exc:
        raise RecordingError(f"cannot read the recording ({exc.strerror})", file=path) from None
    raw_lines, tail = split_recording(path, data)
    torn = tail is not None
    if torn:
        raw_lines.append(tail)
    with gc_paused():
        lines, numbers = _parse_lines(path, raw_lines, torn)
    return Recording(path, MappingProxyType(lines), MappingProxyType(numbers),
                     hashlib.sha256(data).hexdigest())


def _parse_lines(path: Path, raw_lines: list[str], torn: bool
                 ) -> tuple[dict[str, Mapping[str, Any]], dict[str, int]]:
    document = schema.schema("recording")
    memo = schema.MemoValidator(document, _skeleton_of(document["properties"]))
    lines: dict[str, Mapping[str, Any]] = {}
    numbers: dict[str, int] = {}
    loads = json.loads
    last = len(raw_lines)
    for number, raw in enumerate(raw_lines, 1):
        raw = raw.strip()  # as jevassert does: a trailing NBSP or form feed is not an error
        if not raw:
            continue
        try:
            doc = loads(raw)
        except ValueError as exc:
            if torn and number == last:
                raise RecordingError(
                    "torn last line: the run that wrote it was interrupted", file=path, line=number,
                    fix="re-run with --jev-record to redo that case, or delete the partial line") from None
            msg = getattr(exc, "msg", str(exc))
            raise RecordingError(f"not valid JSON ({msg})", file=path, line=number,
                                 fix="each line must be one JSON object; re-record the case") from None
        if not isinstance(doc, dict):
            raise RecordingError("a recording line must be a JSON object", file=path, line=number,
                                 fix="re-record the case")
        error = memo.error(doc)
        if error is not None:
            raise RecordingError(f"bad line: {schema.describe(error)}", file=path, line=number,
                                 fix="each line needs a non-empty case_id; re-record the case")
        case_id = doc["case_id"]
        if case_id in lines:
            raise RecordingError(f"duplicate case_id '{case_id}' (first on line {numbers[case_id]})",
                                 file=path, line=number, fix="keep one line per case")
        lines[case_id] = doc
        numbers[case_id] = number
    return lines, numbers


def candidate_paths(pack_dir: Path, pack_id: str, *, explicit: str | None, backend: str | None,
                    results_dir: Path) -> list[Path]:
    """Where a pack's recording is looked for, in order (the first that exists wins)."""
    if explicit:
        p = Path(explicit)
        return [p / f"{pack_id}.predictions.jsonl" if p.is_dir() else p]
    if backend:
        exact = results_dir / backend / f"{pack_id}.predictions.jsonl"
        if exact.is_file():
            return [exact]
        return [exact] + _backend_family(results_dir, backend, pack_id)
    return [pack_dir / "predictions.jsonl"]


def _backend_family(results_dir: Path, backend: str, pack_id: str) -> list[Path]:
    """Recordings of a backend named by kind (`sparrow`, `jev`, `sonnet`, `openai:qwen2.5:7b`).

    Folders are named by the model actually served (`jev-1.13.0`); the newest recording
    among `<name>*` folders comes first.
    """
    name = backend.split(":", 1)[1] if ":" in backend else backend
    name = {"sonnet": "claude-sonnet"}.get(name, name)
    name = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in name)
    found = [p for p in results_dir.glob(f"{name}*/{pack_id}.predictions.jsonl") if p.is_file()]
    return sorted(found, key=lambda p: (-p.stat().st_mtime, str(p)))


def find_recording(pack_dir: Path, pack_id: str, *, explicit: str | None, backend: str | None,
                   results_dir: Path) -> Path:
    tried = candidate_paths(pack_dir, pack_id, explicit=explicit, backend=backend, results_dir=results_dir)
    for p in tried:
        if p.is_file():
            return p
    how = (f"pytest {pack_dir} --jev-record --jev-backend={backend}" if backend
           else f"pytest {pack_dir} --jev-record --jev-backend=<name>")
    raise RecordingNotFound(
        f"no recording for pack '{pack_id}' (tried {', '.join(str(p) for p in tried)})",
        fix=f"record one with `{how}`, or point at one with --jev-recording PATH / --jev-backend NAME")
