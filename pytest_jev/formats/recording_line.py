"""One line of a recording (results/<backend>/<pack>.predictions.jsonl, its crash-safe journal
<pack>.predictions.jsonl.journal.jsonl, and jevassert's predictions.jsonl): a RecordingLine.

jevassert writes six keys (`case_id`, `model`, `latency_ms`, `usage`, `answers`, `error`); the
recorder writes those six with their meaning, then its provenance (record_version, backend,
mode, requested_model, request, state and rubric fingerprints, attempts, timestamps, ...), and a
backend may add keys of its own (an LLM's adapter settings). Both read alike.

A RecordingLine keeps the decoded line whole and reads its fields on access: a recording holds
up to millions of lines, and copying a dozen fields out of each at load would add about a
second per 100,000 lines to every replay (benchmarks/README.md: the per-item floor). Keeping
the line also writes it back byte for byte. Its fields are typed properties; a value of the
wrong type reads as None. `answers` stays the System One answer objects as recorded: whether
an answer honours its question is the answer contract's call (contract.py) when a case is
graded, not the loader's, so a line with a misfit answer loads and its case grades `invalid`.

The package reads lines through the properties only. The line is also a read-only Mapping of
the object as written (`line["adapter"]`): for the keys a backend adds, which no property names.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from . import values as v

JEVASSERT_KEYS = ("case_id", "model", "latency_ms", "usage", "answers", "error")
TOKEN_KEYS = ("input_tokens", "output_tokens", "input_tokens_total", "output_tokens_total")


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens a case's calls billed: the last attempt's counts, or summed over attempts (`*_total`)."""

    input_tokens: int | None
    output_tokens: int | None
    input_tokens_total: int | None = None  # LLM backends, or any case answered after a retry
    output_tokens_total: int | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Usage:
        return cls(*(v.integer(doc.get(key)) for key in TOKEN_KEYS))


@dataclass(frozen=True, slots=True)
class ErrorDetail:
    """Why a case's call failed, as the recorder writes it (`error_detail`)."""

    type: str | None  # timeout | exception | misfit | malformed | error | http ...
    status: int | None  # the HTTP status, when there was one
    retryable: bool | None
    message: str | None
    body_excerpt: str | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ErrorDetail:
        status = doc.get("status")
        return cls(v.string(doc.get("type")), status if isinstance(status, int) and not isinstance(status, bool)
                   else None, v.flag(doc.get("retryable")), v.string(doc.get("message")),
                   v.string(doc.get("body_excerpt")))


def _object(value: Any) -> Mapping[str, Any] | None:
    """A JSON object (a dict, as decoded: checked first, it is what replay reads per line), else None."""
    if type(value) is dict:
        return value
    return value if isinstance(value, Mapping) else None


@dataclass(frozen=True, slots=True, eq=False)  # equality is the Mapping's: the same keys and values
class RecordingLine(Mapping[str, Any]):
    """A decoded recording line (a JSON object with a non-empty `case_id`), read through typed
    properties."""

    doc: Mapping[str, Any]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> RecordingLine:
        return cls(doc)

    def to_json(self) -> Mapping[str, Any]:
        """The line as read (or built): written with fileio.encode_line it gives back the
        recorder's bytes."""
        return self.doc

    # -- jevassert's keys -------------------------------------------------------------------

    @property
    def case_id(self) -> str:
        return str(self.doc["case_id"])

    @property
    def model(self) -> str | None:
        """The model version that answered (None on an error line)."""
        return v.string(self.doc.get("model"))

    @property
    def latency_ms(self) -> float | None:
        return v.number(self.doc.get("latency_ms"))

    @property
    def usage(self) -> Usage | None:
        usage = self.doc.get("usage")
        return Usage.from_json(usage) if isinstance(usage, Mapping) else None

    @property
    def usage_object(self) -> Mapping[str, Any] | None:
        """The usage object as recorded, with any keys a backend adds (what an answers line keeps)."""
        return _object(self.doc.get("usage"))

    @property
    def input_tokens(self) -> int | None:
        usage = _object(self.doc.get("usage"))
        return v.integer(usage.get("input_tokens")) if usage is not None else None

    @property
    def output_tokens(self) -> int | None:
        usage = _object(self.doc.get("usage"))
        return v.integer(usage.get("output_tokens")) if usage is not None else None

    @property
    def answers(self) -> Mapping[str, Any] | None:
        """Question id -> the System One answer object as recorded; None on an error line (or
        when the line holds something other than an object here)."""
        return _object(self.doc.get("answers"))

    @property
    def error(self) -> Any:
        """The recorded error (jevassert: any JSON value; ours: a short string), None when answered."""
        return self.doc.get("error")

    @property
    def failed(self) -> bool:
        """A line graded as a case error: an error is recorded, or answers is null."""
        return bool(self.doc.get("error")) or self.doc.get("answers") is None

    # -- ours ---------------------------------------------------------------------------------

    @property
    def record_version(self) -> int | None:
        return v.integer(self.doc.get("record_version"))

    @property
    def backend(self) -> str | None:
        """The backend kind that recorded it (jev, anthropic, sparrow, mock, ...)."""
        return v.string(self.doc.get("backend"))

    @property
    def mode(self) -> str | None:
        """live or mock (None: not stated, which reads as live; any other value as text, so a
        check that wants a mock recording to be all mock sees it)."""
        mode = self.doc.get("mode")
        return str(mode) if mode else None

    @property
    def requested_model(self) -> str | None:
        return v.string(self.doc.get("requested_model"))

    @property
    def request_fingerprint(self) -> str | None:
        return v.string(self.doc.get("request_fingerprint"))

    @property
    def state_fingerprint(self) -> str | None:
        """sha256 of the case's state as it was when the line was recorded (wire.state_fingerprint)."""
        return v.string(self.doc.get("state_fingerprint"))

    @property
    def rubric_fingerprint(self) -> str | None:
        return v.string(self.doc.get("rubric_fingerprint"))

    @property
    def question_fingerprints(self) -> Mapping[str, Any] | None:
        value = self.doc.get("question_fingerprints")
        return value if isinstance(value, Mapping) else None

    @property
    def option_order(self) -> Mapping[str, Any] | None:
        """--jev-shuffle-options: choice question id -> its labels in the order sent."""
        value = self.doc.get("option_order")
        return value if isinstance(value, Mapping) else None

    @property
    def base_url(self) -> str | None:
        return v.string(self.doc.get("base_url"))

    @property
    def attempts(self) -> int | None:
        return v.integer(self.doc.get("attempts"))

    @property
    def retry_reasons(self) -> tuple[str, ...]:
        return v.strings(self.doc.get("retry_reasons"))

    @property
    def http_status(self) -> int | None:
        return v.integer(self.doc.get("http_status"))

    @property
    def request_id(self) -> str | None:
        return v.string(self.doc.get("request_id"))

    @property
    def started_at(self) -> str | None:
        return v.string(self.doc.get("started_at"))

    @property
    def finished_at(self) -> str | None:
        return v.string(self.doc.get("finished_at"))

    @property
    def error_detail(self) -> ErrorDetail | None:
        value = self.doc.get("error_detail")
        return ErrorDetail.from_json(value) if isinstance(value, Mapping) else None

    @property
    def plugin_version(self) -> str | None:
        return v.string(self.doc.get("plugin_version"))

    # -- the read-only Mapping interface ------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        return self.doc[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.doc)

    def __len__(self) -> int:
        return len(self.doc)

    def __contains__(self, key: object) -> bool:
        return key in self.doc

    def get(self, key: str, default: Any = None) -> Any:
        return self.doc.get(key, default)
