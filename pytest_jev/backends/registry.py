"""Backend names -> backends. Every backend module is imported only when its name is asked for."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import OptionError
from .base import Backend

NAMES = ("jev", "mock", "sparrow", "minilm", "sonnet", "anthropic:<model>", "openai:<model>")
SONNET = "sonnet"  # anthropic.py resolves the alias (ALIASES) to the current Sonnet id

# List prices, USD per million tokens (input, output): wire-contract §1.4; Anthropic's in anthropic.py.
_JEV = (0.042, 0.0)
_FREE = (0.0, 0.0)


def kind_of(spec: str) -> str:
    """The backend kind a spec makes (the `backend` field of its recording lines)."""
    name = spec.strip().lower()
    if name == "sonnet" or name.startswith("anthropic:"):
        return "anthropic"
    if name.startswith("openai:"):
        return "openai"
    return name


def list_price(spec: str, model: str | None = None) -> tuple[float, float] | None:
    """(input, output) USD per million tokens at list price; None when unknown."""
    kind = kind_of(spec)
    if kind == "jev":
        return _JEV
    if kind in ("mock", "sparrow", "minilm", "openai"):  # openai = a local OpenAI-compatible server
        return _FREE
    if kind == "anthropic":
        anthropic = importlib.import_module(".anthropic", __package__)
        wanted = (model or (spec.split(":", 1)[1] if ":" in spec else SONNET)).strip()
        price: tuple[float, float] | None = anthropic.list_price(anthropic.ALIASES.get(wanted.lower(), wanted))
        return price
    return None


def make_backend(spec: str, *, base_url: str | None = None, model: str | None = None,
                 gold: Mapping[str, Mapping[str, Any]] | None = None, **kw: Any) -> Backend:
    """Build the backend a --jev-backend value names; OptionError for an unknown name."""
    name = spec.strip()
    low = name.lower()
    if low == "jev":
        from .typesafe import TypeSafeBackend
        return TypeSafeBackend(base_url=base_url, model=model, **kw)
    if low == "mock":
        from .mock import MockBackend
        return MockBackend(gold, model=model, **kw)
    if low in ("sparrow", "minilm"):
        local = importlib.import_module(".local", __package__)
        return _call(getattr(local, f"make_{low}"), model=model, base_url=base_url, **kw)
    if low == "sonnet" or low.startswith("anthropic:"):
        chosen = name.split(":", 1)[1].strip() if ":" in name else (model or SONNET)
        _need_model(name, chosen)
        module = importlib.import_module(".anthropic", __package__)
        return _call(module.make_anthropic, chosen, base_url=base_url, **kw)
    if low.startswith("openai:"):
        chosen = name.split(":", 1)[1].strip()
        _need_model(name, chosen)
        module = importlib.import_module(".openai", __package__)
        return _call(module.make_openai, chosen, base_url=base_url, **kw)
    raise OptionError(f"unknown backend '{spec}'", fix=f"use one of: {', '.join(NAMES)}")


def _need_model(spec: str, model: str) -> None:
    if not model:
        raise OptionError(f"backend '{spec}' names no model", fix="write it as anthropic:<model> or openai:<model>")


def _call(factory: Callable[..., Backend], *args: Any, **kw: Any) -> Backend:
    """Call a factory with the keyword arguments it accepts (None values are left out)."""
    params = inspect.signature(factory).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    given = {k: v for k, v in kw.items() if v is not None and (takes_any or k in params)}
    return factory(*args, **given)
