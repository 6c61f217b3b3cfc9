"""The hooks pytest_jev calls: their docstrings are the contract a plugin or conftest.py implements.

A backend kind reaches the plugin in one of two ways: an installed package registers it under
the entry-point group `jev_packs.backends` (the CLI sees it too), or a conftest.py / plugin
returns it from `pytest_jev_backend_kinds` (this run only). How a backend is built for pack
recording can be taken over by `pytest_jev_make_backend`, and for the `jev` fixture by
overriding the `jev_backend` fixture. CONTRIBUTING.md, "Adding a backend", shows all three.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .backends.base import Backend
    from .backends.kinds import BackendKind, BackendSpec
    from .options import Options
    from .packs.model import Pack


def pytest_jev_backend_kinds(config: pytest.Config) -> list[BackendKind]:
    """Backend kinds to add to the installed ones for this run: each a
    pytest_jev.backends.kinds.BackendKind, so that --jev-backend (and its ini twin) can name it.

    Called once, when the options are parsed (pytest_configure): implement it in a plugin or in
    an initial conftest.py (the rootdir's, or one beside the paths given on the command line),
    as for pytest_addoption. A kind returned here wins over an installed kind of the same name.
    """
    raise NotImplementedError  # a hook specification: pluggy calls the implementations, never this


@pytest.hookspec(firstresult=True)
def pytest_jev_make_backend(spec: BackendSpec, options: Options, pack: Pack | None, config: pytest.Config
                            ) -> Backend | None:
    """The backend to record with: `spec` is --jev-backend parsed, `pack` the pack about to be
    recorded (None when the `jev` fixture's default `jev_backend` asks). Return a Backend
    (pytest_jev.backends.base.Backend) or None to leave it to the next implementation; the
    plugin's own, called last, builds the backend of the spec's kind.

    Pack recording happens on the controller in pytest_collection_finish, before any test runs,
    so no fixture can take part there: this hook is how a conftest.py records packs through its
    own backend (a company gateway, a fake).
    """
    raise NotImplementedError  # a hook specification: pluggy calls the implementations, never this

