"""A recording file: jevassert's predictions.jsonl or our superset, read and checked.

A recording holds one JSON line per case (`case_id`, `model`, `latency_ms`, `usage`,
`answers`, `error`, plus optional provenance keys: formats/recording_line.py). It is read
once into a Recording of typed lines (RecordingLine) keyed by case id; nothing here touches
the network, and where recordings live is paths.py's business.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .errors import Problems, RecordingError, RecordingNotFound
from .fileio import DuplicateKeyError, exists, read_bytes
from .fileio import loads_line as loads
from .formats.recording_line import RecordingLine
from .gcpause import gc_paused
from .numbers import at_least_zero
from .packs import schema
from .packs.cases import split_jsonl

MAX_TOKENS = 2**53  # a token count above this is not a count (and would not price exactly)
# A recording larger than this is refused unread: 512 MB is about a million lines (the
# 100,000-case benchmark's recording is 50 MB), and reading one takes twice its size in memory.
MAX_RECORDING_BYTES = 512 * 2**20
RERECORD = "re-record the case (--jev-record)"
CASE_ID = re.compile(r'"case_id"\s*:\s*"([^"\\]{1,200})"')  # the case a broken line was for, if legible


@dataclass(frozen=True)
class Recording:
    path: Path
    lines: Mapping[str, RecordingLine]  # case_id -> the line, in file order
    line_numbers: Mapping[str, int]
    sha256: str

    def models(self) -> list[str]:
        return list(self._models)

    def modes(self) -> set[str]:
        return set(self._modes)

    @cached_property
    def _models(self) -> tuple[str, ...]:
        return tuple(sorted({model for line in self.lines.values() if (model := line.model) is not None}))

    @cached_property
    def _modes(self) -> frozenset[str]:
        return frozenset(mode for line in self.lines.values() if (mode := line.mode) is not None)


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
    if not exists(path):
        raise RecordingNotFound("recording not found", file=path)
    data = read_bytes(path, RecordingError, fix="point --jev-recording at a predictions.jsonl file",
                      limit=(MAX_RECORDING_BYTES, "a recording"))
    raw_lines, tail = split_recording(path, data)
    torn = tail is not None
    if torn:
        raw_lines.append(tail)  # type: ignore[arg-type]
    with gc_paused():
        lines, numbers = _parse_lines(path, raw_lines, torn)
    return Recording(path, MappingProxyType(lines), MappingProxyType(numbers),
                     hashlib.sha256(data).hexdigest())


def _parse_lines(path: Path, raw_lines: list[str], torn: bool) -> tuple[dict[str, RecordingLine], dict[str, int]]:
    """Every line of the recording, typed; every problem of the file is reported at once (up to
    MAX_PROBLEMS), not only the first."""
    document = schema.schema("recording")
    memo = schema.MemoValidator(document, _skeleton_of(document["properties"]))
    lines: dict[str, RecordingLine] = {}
    numbers: dict[str, int] = {}
    found = Problems()
    last = len(raw_lines)
    for number, line in enumerate(raw_lines, 1):
        raw = line.strip()  # as jevassert does: a trailing NBSP or form feed is not an error
        if not raw:
            continue
        try:
            doc = loads(raw)
        except DuplicateKeyError as exc:
            found.add(RecordingError(str(exc), file=path, line=number, fix="keep one of them, or re-record the case"))
            continue
        except ValueError as exc:
            if torn and number == last:
                found.add(RecordingError(
                    "torn last line: the run that wrote it was interrupted", file=path, line=number,
                    fix="re-run with --jev-record to redo that case, or delete the partial line"))
                continue
            msg = getattr(exc, "msg", str(exc))
            column = getattr(exc, "colno", None)
            at = "" if column is None else f"{'' if msg.endswith(' at') else ' at'} column {column}"
            case = CASE_ID.search(raw)
            which = f" {case.group(1)!r}" if case else ""
            fix = f"each line must be one JSON object; re-record the case{which} (--jev-record)"
            found.add(RecordingError(f"not valid JSON ({msg}{at})", file=path, line=number, fix=fix))
            continue
        if not isinstance(doc, dict):
            found.add(RecordingError("a recording line must be a JSON object", file=path, line=number,
                                     fix="re-record the case"))
            continue
        error = memo.error(doc)
        if error is not None:
            found.add(RecordingError(f"bad line: {schema.describe(error)}", file=path, line=number,
                                     fix="each line needs a non-empty case_id; re-record the case"))
            continue
        problem = provenance_problem(doc)
        if problem is not None:
            found.add(RecordingError(f"bad line: {problem}", file=path, line=number, fix=RERECORD))
            continue
        case_id = doc["case_id"]
        if case_id in lines:
            found.add(RecordingError(f"duplicate case_id '{case_id}' (first on line {numbers[case_id]})",
                                     file=path, line=number, fix="keep one line per case"))
            continue
        lines[case_id] = RecordingLine(doc)
        numbers[case_id] = number
    found.check()
    return lines, numbers


def provenance_problem(doc: Mapping[str, Any]) -> str | None:
    """What is wrong with a line's latency or token counts (the schema has checked their
    JSON types): latency a finite number >= 0; token counts whole numbers from 0 to 2**53.
    A negative count would make a cost gate pass, a huge one overflow the cost."""
    latency = doc.get("latency_ms")
    if latency is not None and not at_least_zero(latency):
        return f"latency_ms {_short(latency)} is not a finite number >= 0"
    usage = doc.get("usage")
    if isinstance(usage, dict):
        for key in ("input_tokens", "output_tokens", "input_tokens_total", "output_tokens_total"):
            value = usage.get(key)
            if value is not None and not _token_count(value):
                return f"usage.{key} {_short(value)} is not a whole number of tokens >= 0"
    return None


def _token_count(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return False
    return 0 <= value <= MAX_TOKENS


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
