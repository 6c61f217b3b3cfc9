"""results/<backend>/backend.json: who answered a backend folder's recordings (BackendInfo).

The recorder writes `id`, then the backend's own description (provider, backend kind, model,
endpoint, license, pricing, calibrated, notes, reproduce, and settings of its own such as an
LLM's `adapter` or MiniLM's `method`), then `created` and `updated`. jevassert's variant names a
`provider` instead of a backend kind, gives prices as `pricing_usd_per_mtok: {input, output}`,
and adds `schema`, `name`, `submitted_by`, `tool`, `adapter` (a name) and `settings`. One model
reads both; the keys only some backends write stay in `extra`, as written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..errors import RecordingError
from ..fileio import atomic_write, is_regular, loads, read_text, scrub
from ..numbers import at_least_zero, finite
from ..paths import backend_json
from . import values as v
from .schemas import JsonFile

# backend.json written by jevassert names a provider, ours the backend kind
PROVIDER_KINDS = {"typesafe": "jev", "anthropic": "anthropic", "openai": "openai", "openrouter": "openrouter"}


@dataclass(frozen=True, slots=True)
class Pricing:
    """USD per million tokens, ours (`pricing`); None: no price known."""

    input_usd_per_mtok: float | None
    output_usd_per_mtok: float | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Pricing:
        return cls(v.number(doc.get("input_usd_per_mtok")), v.number(doc.get("output_usd_per_mtok")))

    def to_json(self) -> dict[str, Any]:
        return {"input_usd_per_mtok": self.input_usd_per_mtok, "output_usd_per_mtok": self.output_usd_per_mtok}


@dataclass(frozen=True, slots=True)
class ListPricing:
    """USD per million tokens, jevassert's (`pricing_usd_per_mtok`)."""

    input: float | None
    output: float | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ListPricing:
        return cls(v.number(doc.get("input")), v.number(doc.get("output")))

    def to_json(self) -> dict[str, Any]:
        return {"input": self.input, "output": self.output}


@dataclass(frozen=True, slots=True)
class Tool:
    """The tool that recorded a jevassert backend folder."""

    name: str | None
    version: str | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Tool:
        return cls(v.string(doc.get("name")), v.string(doc.get("version")))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version}


@dataclass(frozen=True)
class BackendInfo(JsonFile):
    """backend.json, ours or jevassert's."""

    READ_FIX: ClassVar[str] = "repair it, or delete it and re-record"

    KEYS: ClassVar[tuple[str, ...]] = (
        "schema", "id", "name", "provider", "backend", "model", "package", "endpoint", "license", "submitted_by",
        "tool", "pricing", "pricing_usd_per_mtok", "pricing_note", "calibrated", "notes", "reproduce", "created",
        "updated")

    id: str | None = None  # the folder name: the model actually served
    name: str | None = None  # jevassert: a display name
    provider: str | None = None
    backend: str | None = None  # ours: the backend kind (jev, anthropic, openai, sparrow, minilm, mock, ...)
    model: str | None = None
    package: str | None = None  # embedded backends: the pinned package (sparrow-decider==0.2.0)
    endpoint: str | None = None
    license: str | None = None
    pricing: Pricing | None = None
    pricing_usd_per_mtok: ListPricing | None = None
    pricing_note: str | None = None  # why no price, or what the price means
    calibrated: bool | None = None  # are its probabilities calibrated (None: not said)
    notes: str | None = None
    reproduce: str | None = None  # the command that records it
    created: str | None = None
    updated: str | None = None
    schema: int | None = None  # jevassert: its format version
    submitted_by: str | None = None
    tool: Tool | None = None
    order: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)  # settings of one backend (adapter, method, ...)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> BackendInfo:
        pricing, table, tool = doc.get("pricing"), doc.get("pricing_usd_per_mtok"), doc.get("tool")
        return cls(
            id=v.string(doc.get("id")), name=v.string(doc.get("name")), provider=v.string(doc.get("provider")),
            backend=v.string(doc.get("backend")), model=v.string(doc.get("model")),
            package=v.string(doc.get("package")), endpoint=v.string(doc.get("endpoint")),
            license=v.string(doc.get("license")),
            pricing=Pricing.from_json(pricing) if isinstance(pricing, Mapping) else None,
            pricing_usd_per_mtok=ListPricing.from_json(table) if isinstance(table, Mapping) else None,
            pricing_note=v.string(doc.get("pricing_note")), calibrated=v.flag(doc.get("calibrated")),
            notes=v.string(doc.get("notes")), reproduce=v.string(doc.get("reproduce")),
            created=v.string(doc.get("created")), updated=v.string(doc.get("updated")),
            schema=v.integer(doc.get("schema")), submitted_by=v.string(doc.get("submitted_by")),
            tool=Tool.from_json(tool) if isinstance(tool, Mapping) else None,
            order=tuple(doc), extra=v.extra_keys(doc, cls.KEYS))

    def to_json(self) -> dict[str, Any]:
        known = {
            "schema": self.schema, "id": self.id, "name": self.name, "provider": self.provider,
            "backend": self.backend, "model": self.model, "package": self.package, "endpoint": self.endpoint,
            "license": self.license, "submitted_by": self.submitted_by,
            "tool": self.tool.to_json() if self.tool else None,
            "pricing": self.pricing.to_json() if self.pricing else None,
            "pricing_usd_per_mtok": self.pricing_usd_per_mtok.to_json() if self.pricing_usd_per_mtok else None,
            "pricing_note": self.pricing_note, "calibrated": self.calibrated, "notes": self.notes,
            "reproduce": self.reproduce, "created": self.created, "updated": self.updated}
        if not self.order:  # built in memory: the keys it has, in the recorder's order
            known = {key: value for key, value in known.items() if value is not None}
        return v.emit(known, self.order, self.extra)

    def dumps(self) -> str:
        """The file's text: in its own key order, two-space indent, UTF-8, a final newline, any
        secret of the environment masked."""
        return scrub(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n")

    def write(self, path: Path) -> Path:
        atomic_write(path, self.dumps().encode("utf-8"))
        return path

    @property
    def kind(self) -> str | None:
        """The backend kind: ours names it, jevassert's names a provider that maps to one."""
        if self.backend is not None:
            return self.backend
        return PROVIDER_KINDS.get(self.provider) if self.provider is not None else None

    @property
    def prices(self) -> tuple[float | None, float | None]:
        """(input, output) USD per million tokens, ours or jevassert's; None where not given."""
        if self.pricing is not None:
            return self.pricing.input_usd_per_mtok, self.pricing.output_usd_per_mtok
        if self.pricing_usd_per_mtok is not None:
            return self.pricing_usd_per_mtok.input, self.pricing_usd_per_mtok.output
        return None, None

    def pricing_label(self) -> str:
        """The prices as the scoreboard shows them."""
        given = [finite(p) for p in self.prices]
        if all(p is None for p in given):
            return "not stated"
        if all(p == 0 for p in given):
            return "free ($0 per M tokens)"
        return " / ".join("?" if p is None else f"${p:g}" for p in given) + " per M tokens (input / output)"


# -- a backend folder's backend.json --------------------------------------------------------

FOLDER_FIX = "repair it, or delete it and re-record"
PRICING_FIX = 'give pricing as {"input_usd_per_mtok": x, "output_usd_per_mtok": y}, prices >= 0 or null'


def _folder_doc(folder: Path) -> dict[str, Any] | None:
    """backend.json of a backend folder as read; None when it is absent. RecordingError (one line)
    when something is there that is not a readable JSON object."""
    path = backend_json(folder)
    if not is_regular(path):
        if path.exists() or path.is_symlink():
            raise RecordingError("is not a regular file", file=path, fix="replace it with the backend's JSON")
        return None
    try:
        doc = loads(read_text(path, RecordingError))
    except ValueError as exc:
        raise RecordingError(f"not valid JSON ({getattr(exc, 'msg', exc)})", file=path, fix=FOLDER_FIX) from None
    if not isinstance(doc, dict):
        raise RecordingError("must be a JSON object", file=path, fix=FOLDER_FIX)
    return doc


def folder_info(folder: Path) -> BackendInfo | None:
    """The BackendInfo of a backend folder; None without a backend.json (RecordingError, one line,
    for one that cannot be read)."""
    doc = _folder_doc(folder)
    return BackendInfo.from_json(doc) if doc is not None else None


def folder_identity(folder: Path) -> tuple[str | None, str | None]:
    """(backend kind, model) a backend folder's backend.json names; (None, None) without a readable one."""
    try:
        info = folder_info(folder)
    except RecordingError:
        return None, None
    return (info.kind, info.model) if info is not None else (None, None)


def folder_prices(folder: Path, default: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    """(input, output) USD per million tokens from a folder's backend.json, else `default`
    (folder_prices_and_source)."""
    return folder_prices_and_source(folder, default)[0]


def folder_prices_and_source(folder: Path, default: tuple[float | None, float | None]
                             ) -> tuple[tuple[float | None, float | None], tuple[str, str]]:
    """((input, output) USD per million tokens, where each comes from: "backend.json" or "default")
    from a folder's backend.json, else `default`.

    Read strictly, unlike BackendInfo (which reads a value of the wrong type as absent): the prices
    cost a replay's cases, so a price given as null is unknown (a model without a list price), a
    price not given is `default`'s, and anything else that is not a finite number >= 0 (negative,
    NaN, a boolean, a string) is refused with one line. Ours (`pricing`) and jevassert's
    (`pricing_usd_per_mtok`) are both read."""
    doc = _folder_doc(folder)
    table = doc.get("pricing", doc.get("pricing_usd_per_mtok")) if doc is not None else None
    if table is None:
        return default, ("default", "default")
    if not isinstance(table, Mapping):
        raise RecordingError("unreadable pricing (not an object)", file=backend_json(folder), fix=PRICING_FIX)
    prices: list[float | None] = []
    sources: list[str] = []
    for ours, theirs, fallback in (("input_usd_per_mtok", "input", default[0]),
                                   ("output_usd_per_mtok", "output", default[1])):
        key = ours if ours in table else theirs if theirs in table else None
        value = table[key] if key is not None else fallback
        if key is not None and value is not None and not at_least_zero(value):
            raise RecordingError(f"unreadable pricing ({key} = {value!r} is not a number >= 0)",
                                 file=backend_json(folder), fix=PRICING_FIX)
        prices.append(None if value is None else float(value))
        sources.append("backend.json" if key is not None else "default")
    return (prices[0], prices[1]), (sources[0], sources[1])
