"""A kind of backend as --jev-backend names it (BackendKind), and a --jev-backend value parsed
against the kinds (BackendSpec).

A BackendKind says how specs name it (`anthropic:<model>`, `sonnet`), which model a bare spec
means, where its recordings go before the model served is known, its list price, what it needs
before a run may start, and how to build the backend. Every kind is one: the built-in ones
(builtin.py) register through the entry-point group `jev_packs.backends` exactly as an installed
package's do, and a conftest.py can add one through the pytest_jev_backend_kinds hook
(hookspecs.py). CONTRIBUTING.md, "Adding a backend", walks through one.

A BackendSpec is a spec parsed once per run (options.py for pytest, the catalog for the CLI and
the library): nothing after that looks at the string again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import OptionError
from ..pricing import Price, text_tokens
from ..wire import Request

if TYPE_CHECKING:
    from ..packs.model import Pack
    from .base import Backend

NEEDS_MODEL_FIX = "write it as <kind>:<model>, e.g. anthropic:<model>, openai:<model> or openrouter:<model>"


class BackendKind:
    """One kind of backend. Subclass it, set `name` (the `backend` field of the recording lines,
    and the word a spec starts with) and implement `make`; override the rest as needed.

    Keep the module that defines a kind light: it is imported whenever a spec is parsed, so
    import the client library (an HTTP client, a model runtime) inside `make` and `check_ready`.
    """

    name: str = ""
    aliases: ClassVar[Mapping[str, str]] = {}  # other bare spec words and the model each means (sonnet -> claude-...)
    default_model: str | None = None  # the model a bare `<name>` asks for; None: --jev-model, else the backend's own
    model_in_spec: bool = False  # `<name>:<model>` names the model asked for
    needs_model: bool = False  # a spec of this kind must name its model (anthropic:<model>)
    asks_own_model: bool = False  # the backend asks for its own model, not the model a request names
    forms: tuple[str, ...] = ()  # how --jev-backend hints list it; default: its name
    order: int = 100  # its place in those hints (the built-in kinds come first)

    def make(self, spec: BackendSpec, *, pack: Pack | None = None, **options: Any) -> Backend:
        """The backend `spec` names, for recording `pack` (None: the `jev` fixture). `options` are
        keyword arguments a caller passes through (a test's transport, the mock's seed)."""
        raise NotImplementedError(f"backend kind {self.name!r} does not say how to build its backend")

    def check_ready(self, spec: BackendSpec) -> None:
        """Raise a JevError (OptionError; AuthError naming the variable for a missing key) when a
        recording run with `spec` cannot start. Runs before collection, so a run fails in one line."""
        if (self.needs_model or spec.pinned) and not spec.model:
            raise OptionError(f"backend '{spec.text}' names no model", fix=NEEDS_MODEL_FIX)

    def folder(self, spec: BackendSpec) -> str | None:
        """The results folder recordings go to before the model served is known (it is named by
        the backend's backend_id once it is); None when it cannot be told without building the
        backend. Replay and resume look there first."""
        return None

    def list_price(self, model: str | None) -> Price | None:
        """(input, output) USD per million tokens at list price for `model`; None: unknown."""
        return None

    def request_model(self, spec: BackendSpec) -> str | None:
        """The model a pack's requests name (and are fingerprinted with) when it is not the pack's
        own `tested` version; None: the pack's."""
        return None

    def estimate_tokens(self, request: Request) -> tuple[int, int]:
        """(input, output) tokens a call is likely to bill (--jev-dry-run): by default the System
        One body that would be sent, output free."""
        body = json.dumps({"model": request.model, "state": request.state, "questions": request.questions},
                          ensure_ascii=False)
        return text_tokens(body), 0

    def spec_forms(self) -> tuple[str, ...]:
        return self.forms or (self.name,)


@dataclass(frozen=True)
class BackendSpec:
    """A --jev-backend value, parsed once against the known kinds.

    `model` is the model the spec names itself (`openai:qwen2.5:7b`, or what `sonnet` and
    `openrouter` mean): replay matches backend folders by it. `asked_model` is the model a backend
    built from the spec asks for: the spec's own when it names one after a colon (`pinned`),
    else --jev-model, else what the bare spec means.
    """

    text: str  # as given
    kind: str  # the backend kind (recording lines' `backend`); an unknown spec is its own kind
    model: str | None = None
    asked_model: str | None = None
    pinned: bool = False  # the spec names its model after a colon: --jev-model does not change it
    base_url: str | None = None
    folder: str | None = None  # results folder before the served model is known (BackendKind.folder)
    request_model: str | None = None  # the model requests name, when not the pack's (BackendKind.request_model)
    list_price: Price | None = None  # at the asked model
    known: BackendKind | None = field(default=None, compare=False, repr=False)  # None: no installed kind

    def asked_with(self, option_model: str | None) -> str | None:
        """The model asked for had --jev-model been `option_model` (the fixture prices an answer at
        the model that served it: `sonnet` answered by a dated snapshot)."""
        return self.model if self.pinned else (option_model or self.model)

    def price_with(self, option_model: str | None) -> Price | None:
        return self.known.list_price(self.asked_with(option_model)) if self.known is not None else None

    def estimate_tokens(self, request: Request) -> tuple[int, int]:
        return (self.known or BackendKind()).estimate_tokens(request)


def parse_spec(text: str, kinds: Mapping[str, BackendKind], *, model: str | None = None,
               base_url: str | None = None) -> BackendSpec:
    """`text` (a --jev-backend value) against the kinds by name: a bare name or alias, or
    `<name>:<model>` for a kind that takes its model in the spec. Anything else is a kind of its
    own that no installed package provides (a results folder name, for replay; refused when
    recording)."""
    name = text.strip()
    low = name.lower()
    head, colon, tail = name.partition(":")
    kind: BackendKind | None = None
    named: str | None = None
    pinned = False
    alias = next((k for k in kinds.values() if low in k.aliases), None)
    if alias is not None:
        kind, named = alias, alias.aliases[low]
    elif low in kinds:
        kind = kinds[low]
        named = kind.default_model
    elif colon and head.lower() in kinds and kinds[head.lower()].model_in_spec:
        kind = kinds[head.lower()]
        named, pinned = tail.strip() or None, True
    if kind is None:
        return BackendSpec(text, low, base_url=base_url, asked_model=model)
    spec = BackendSpec(text, kind.name, named, named if pinned else (model or named), pinned, base_url, known=kind)
    return BackendSpec(text, kind.name, spec.model, spec.asked_model, pinned, base_url, folder=kind.folder(spec),
                       request_model=kind.request_model(spec), list_price=kind.list_price(spec.asked_model),
                       known=kind)
