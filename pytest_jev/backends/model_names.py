"""The model names of the built-in HTTP model backends: what a bare spec means (`sonnet`,
`openrouter`) and the results folder a model's recordings go to. The provider modules and the
built-in kinds (builtin.py) share them, so they live apart from both."""

from __future__ import annotations

from ..paths import MAX_NAME, safe_name

SONNET = "sonnet"
SONNET_MODEL = "claude-sonnet-5"  # what `sonnet` means (Sonnet 5.5's exact id is unconfirmed: anthropic:<id>)
OPENROUTER_MODEL = "typesafe/jev-1.13"  # what bare `openrouter` asks for: Jev pinned, OpenRouter's id
OPENROUTER_SUFFIX = "-openrouter"
JEV_DEFAULT_MODEL = "jev-latest"  # what the jev backend asks for when nothing names a model


def folder_name(kind: str, model: str) -> str:
    """The results folder of a model an HTTP model backend serves (the served model once known,
    else the one asked for): lower case and path-safe; `<model>-openai` for an OpenAI-compatible
    server, `<model>-openrouter` (within MAX_NAME) through OpenRouter, `<model>` for Anthropic."""
    low = model.lower()
    if kind == "openai":
        return f"{safe_name(low, fallback='model')}-openai"
    if kind == "openrouter":
        base = safe_name(low, fallback="jev")[:MAX_NAME - len(OPENROUTER_SUFFIX)].rstrip("-.")
        return f"{base or 'jev'}{OPENROUTER_SUFFIX}"
    if kind == "anthropic":
        return safe_name(low, fallback="anthropic")
    raise ValueError(f"no model folder rule for backend kind {kind!r}")
