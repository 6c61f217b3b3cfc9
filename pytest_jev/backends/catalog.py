"""The catalog of backend kinds: what --jev-backend (and the CLI's --backend) can name.

Kinds come from the entry-point group `jev_packs.backends` (the built-in ones in this package's
pyproject.toml, and any installed package's), plus, in a pytest run, the kinds conftest.py files
and plugins return from the pytest_jev_backend_kinds hook (these win over an installed kind of
the same name). The catalog parses a spec into a BackendSpec once, checks before a recording run
that it can start, and builds its backend.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from ..errors import OptionError
from .kinds import BackendKind, BackendSpec, parse_spec

if TYPE_CHECKING:
    from ..packs.model import Pack
    from .base import Backend

ENTRY_POINT_GROUP = "jev_packs.backends"


@functools.cache
def installed_kinds() -> tuple[BackendKind, ...]:
    """Every kind an installed distribution registers (loaded once per process). An entry point
    names a BackendKind instance or subclass; one that cannot be loaded stops with one line."""
    found = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = point.load()
            kind = loaded() if isinstance(loaded, type) else loaded
        except Exception as exc:  # noqa: BLE001  someone else's package: one line naming it, no traceback
            raise OptionError(f"the backend kind '{point.name}' ({point.value}) cannot be loaded: "
                              f"{type(exc).__name__}: {exc}",
                              fix="reinstall the package that provides it, or uninstall it") from None
        if not isinstance(kind, BackendKind):
            raise OptionError(f"the entry point '{point.name}' ({point.value}) of group {ENTRY_POINT_GROUP} is not a "
                              "pytest_jev.backends.kinds.BackendKind", fix="see CONTRIBUTING.md, Adding a backend")
        found.append(kind)
    return tuple(found)


class Catalog:
    """The kinds of this run: the installed ones, then `extra` (a conftest's, through the hook)."""

    def __init__(self, extra: Iterable[BackendKind] = ()) -> None:
        self.extra = tuple(extra)

    @functools.cached_property
    def kinds(self) -> Mapping[str, BackendKind]:
        """Kind name -> kind, in the order hints list them."""
        by_name = {kind.name: kind for kind in (*installed_kinds(), *self.extra)}
        if not by_name:
            raise OptionError("no backend kinds are installed (none registers the entry-point group "
                              f"{ENTRY_POINT_GROUP})", fix="install jev-packs, e.g. pip install -e '.[test,local]'")
        return dict(sorted(by_name.items(), key=lambda item: (item[1].order, item[0])))

    def parse(self, text: str, *, model: str | None = None, base_url: str | None = None) -> BackendSpec:
        return parse_spec(text, self.kinds, model=model, base_url=base_url)

    def forms(self) -> list[str]:
        """What --jev-backend can be, for hints: jev, mock, ..., anthropic:<model>, ..."""
        return [form for kind in self.kinds.values() for form in kind.spec_forms()]

    def asks_own_model(self, kind: str) -> bool:
        """Whether backends of `kind` ask for their own model whatever model a request names."""
        known = self.kinds.get(kind)
        return known is not None and known.asks_own_model

    def known(self, spec: BackendSpec) -> BackendKind:
        if spec.known is None:
            raise OptionError(f"unknown backend '{spec.text}'", fix=f"use one of: {', '.join(self.forms())}")
        return spec.known

    def check_ready(self, spec: BackendSpec | None) -> None:
        """Fail before collection, in one line, when recording with `spec` cannot start: no backend
        named, an unknown one, a missing key (AuthError names the variable) or a missing extra."""
        if spec is None:
            raise OptionError("--jev-record needs a backend", fix=f"pass --jev-backend={'|'.join(self.forms())}")
        self.known(spec).check_ready(spec)

    def make(self, spec: BackendSpec, *, pack: Pack | None = None, **options: Any) -> Backend:
        """The backend `spec` names; OptionError for an unknown one."""
        return self.known(spec).make(spec, pack=pack, **options)


def backend_from(text: str, *, model: str | None = None, base_url: str | None = None, pack: Pack | None = None,
                 **options: Any) -> Backend:
    """The backend a spec names, from the installed kinds (the library's and the tests' shortcut:
    `backend_from("jev", base_url=...)`)."""
    catalog = Catalog()
    return catalog.make(catalog.parse(text, model=model, base_url=base_url), pack=pack, **options)
