"""jev-packs' entry points: the pytest plugin (`pytest11`: jev_packs) and the `jev-packs` command.

They live outside the `pytest_jev` package on purpose. PyPI's unrelated pytest-jev installs a module
of that same name, `pytest_jev`, so when both distributions are installed one's files replace the
other's (whichever was installed last), or shadow them (an editable install of ours beside
pytest-jev in site-packages). Only a module pytest-jev never ships can always see that and say so in
one line, whichever files won:

- ours won (pytest-jev installed first): pytest runs our plugin, registered under the name of
  pytest-jev's entry point (`jev`, which now names our module too: registering it twice would stop
  pytest with a traceback), and prints the line in its header; `jev-packs` prints it on stderr and
  runs;
- theirs won: pytest stops with the line as a usage error (our plugin's files are not there to
  run), and `jev-packs` prints it and exits 2.

Nothing here is imported by the `pytest_jev` package; it imports `pytest_jev.plugin` and
`pytest_jev.cli` only once it knows they are ours.

PYTEST_DONT_REWRITE: this module asserts nothing, so pytest need not rewrite it (and must not warn
that it was imported before it could: pytester's in-process runs import it again and again).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PEER = "pytest-jev"  # PyPI's pytest-jev: installs the module pytest_jev too
PEER_ENTRY = "jev"  # its pytest11 entry point
SHARED = ("__init__.py", "plugin.py", "verdicts.py")  # pytest_jev/ files both distributions ship
OURS_ONLY = "options.py"  # a file of ours that pytest-jev does not ship
FIX = "run `pip uninstall -y pytest-jev jev-packs`, then install jev-packs again (README.md, \"Using it\")"

_found: list[str] = []  # the line, once the plugin said it (for the header)


def _record_hash(data: bytes) -> str:
    """A file's hash as a wheel's RECORD writes it."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def _theirs_found(peer: importlib.metadata.Distribution) -> bool:
    """Whether `import pytest_jev` finds pytest-jev's files rather than ours: a package without our
    own files, or one of the shared files with the bytes pytest-jev's RECORD lists."""
    spec = importlib.util.find_spec("pytest_jev")
    if spec is None or spec.origin is None:
        return False
    package = Path(spec.origin).parent
    if not (package / OURS_ONLY).is_file():
        return True
    recorded = {str(f.name): f"{f.hash.mode}={f.hash.value}" for f in (peer.files or ())
                if f.hash is not None and f.parent.name == "pytest_jev"}
    for name in SHARED:
        path = package / name
        if name in recorded and path.is_file() and _record_hash(path.read_bytes()) == recorded[name]:
            return True
    return False


def collision() -> tuple[str, bool] | None:
    """(the one line, whether pytest-jev's files are the ones imported) when pytest-jev is installed
    in this environment too; None when it is not."""
    try:
        peer = importlib.metadata.distribution(PEER)
    except importlib.metadata.PackageNotFoundError:
        return None
    both = f"jev-packs: {PEER} {peer.version} is installed in this environment too (both install the module pytest_jev)"
    if _theirs_found(peer):
        return f"{both}, and `import pytest_jev` finds {PEER}'s files, not jev-packs'; {FIX}", True
    return (f"{both}; its files are jev-packs' here, so `pip uninstall {PEER}` alone would delete some of them: "
            f"{FIX}"), False


# -- the pytest plugin ------------------------------------------------------------------------

def pytest_addhooks(pluginmanager: Any) -> None:
    """Runs as soon as pytest registers this entry point, before pytest-jev's may be loaded."""
    found = collision()
    _found[:] = [found[0]] if found is not None else []
    if found is not None:
        line, theirs = found
        if theirs:
            import pytest

            raise pytest.UsageError(line)
    from pytest_jev import plugin

    if not pluginmanager.is_registered(plugin):  # pytest-jev's entry point may have registered it already
        # beside pytest-jev, under its entry point's name: that entry point names our module now, and pytest
        # (its entry points, or `-p jev`) then finds it loaded instead of registering it twice
        pluginmanager.register(plugin, PEER_ENTRY if found is not None else "pytest_jev.plugin")


def pytest_report_header() -> list[str]:
    return list(_found)


# -- the jev-packs command ----------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    found = collision()
    if found is not None:
        line, theirs = found
        print(line, file=sys.stderr)
        if theirs:
            return 2
    from pytest_jev.cli import main as run

    return run(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
