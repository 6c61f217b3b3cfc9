"""pytest-jev 0.1.0 (PyPI), the package our `jev` fixture is a drop-in for, in a venv of its own.

pytest-jev installs a module named `pytest_jev`, like this project, so the two can never share
an environment: the differential tests and benchmarks/bench_fixture.py run it from

    <cache_root()>/pytest-jev-0.1.0/   (as for jevassert: $JEV_TEST_CACHE, else ~/.cache/jev-packs-tests)

built once per machine from the package index (`pip install pytest-jev==0.1.0`, which brings
pytest and typesafe-sdk, its two dependencies), under an fcntl lock, in a temporary folder
renamed into place. `PYTEST_JEV_PYTHON=/path/to/python` uses an interpreter that already has it.

`python tests/pytestjev_env.py` builds it (or finds it) and prints its python.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from jevassert_env import built_once, cache_root, clean_env, pip_download, probe

VERSION = "0.1.0"
REQUIREMENT = f"pytest-jev=={VERSION}"
PROBE = "import importlib.metadata as m, pytest_jev.judge; print(m.version('pytest-jev'))"


class PytestJevUnavailable(RuntimeError):
    """pytest-jev could not be provided (no index, a failed install)."""


def venv_dir() -> Path:
    return cache_root() / f"pytest-jev-{VERSION}"


def works(python: Path) -> bool:
    """`python` imports pytest-jev VERSION (from its own site-packages, not this checkout)."""
    out = probe(python, PROBE)
    return out is not None and out.strip() == VERSION


def _build(tmp: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True, capture_output=True, timeout=300)
    done = subprocess.run([str(tmp / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                           "--no-input", "--quiet", "--retries", "2", "--timeout", "20", REQUIREMENT],
                          capture_output=True, text=True, timeout=900, env=clean_env(), check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise PytestJevUnavailable(f"`pip install {REQUIREMENT}` failed (is the package index reachable?):\n{tail}")


def ensure_pytest_jev() -> Path:
    """The python of a venv where pytest-jev 0.1.0 is installed (built on first use)."""
    explicit = os.environ.get("PYTEST_JEV_PYTHON")
    if explicit:
        if not works(Path(explicit)):
            raise PytestJevUnavailable(f"PYTEST_JEV_PYTHON={explicit} does not import pytest-jev {VERSION}")
        return Path(explicit)
    target = venv_dir()
    python = target / "bin" / "python"  # `python -m pytest` through bin/python: no script names the build folder
    built_once(target, lambda: works(python), _build, PytestJevUnavailable)
    return python


WHEEL_SHA256 = "97b50077e4ed0eb4eb85cf3abbdefe89b720c85f368e5f2bb895099fda3bae86"  # pytest_jev-0.1.0-py3-none-any


def ensure_pytest_jev_wheel() -> Path:
    """pytest-jev 0.1.0's wheel file as PyPI serves it (checked against WHEEL_SHA256), downloaded once
    per machine into <cache_root()>/pytest-jev-0.1.0-wheel/, for tests that install it with pip."""
    target = cache_root() / f"pytest-jev-{VERSION}-wheel"
    wheel = target / f"pytest_jev-{VERSION}-py3-none-any.whl"

    def download(tmp: Path) -> None:
        failed = pip_download(f"{REQUIREMENT} --hash=sha256:{WHEEL_SHA256}", tmp, wheel=True)
        if failed is not None:
            raise PytestJevUnavailable(f"`pip download {REQUIREMENT}` (wheel) failed:\n{failed}")

    built_once(target, wheel.is_file, download, PytestJevUnavailable)
    return wheel


if __name__ == "__main__":
    try:
        print(ensure_pytest_jev())
    except PytestJevUnavailable as exc:
        print(f"pytest-jev unavailable: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
