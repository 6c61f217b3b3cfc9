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

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jevassert_env import cache_root, clean_env, probe

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


def _build(target: Path) -> None:
    build = Path(tempfile.mkdtemp(prefix=f".{target.name}-build-", dir=target.parent))
    try:
        subprocess.run([sys.executable, "-m", "venv", str(build)], check=True, capture_output=True, timeout=300)
        done = subprocess.run([str(build / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                               "--no-input", "--quiet", "--retries", "2", "--timeout", "20", REQUIREMENT],
                              capture_output=True, text=True, timeout=900, env=clean_env(), check=False)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise PytestJevUnavailable(f"`pip install {REQUIREMENT}` failed (is the package index reachable?):\n{tail}")
        build.chmod(0o755)
        if target.exists():
            shutil.rmtree(target)
        os.rename(build, target)  # `python -m pytest` through bin/python: no script names the build folder
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise


def ensure_pytest_jev() -> Path:
    """The python of a venv where pytest-jev 0.1.0 is installed (built on first use)."""
    explicit = os.environ.get("PYTEST_JEV_PYTHON")
    if explicit:
        if not works(Path(explicit)):
            raise PytestJevUnavailable(f"PYTEST_JEV_PYTHON={explicit} does not import pytest-jev {VERSION}")
        return Path(explicit)
    target = venv_dir()
    python = target / "bin" / "python"
    if works(python):
        return python
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per machine; the others wait, then reuse
        try:
            if not works(python):
                for stale in target.parent.glob(f".{target.name}-build-*"):  # left by a killed build
                    shutil.rmtree(stale, ignore_errors=True)
                _build(target)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if not works(python):
        raise PytestJevUnavailable(f"{target} was built but does not import pytest-jev {VERSION}")
    return python


if __name__ == "__main__":
    try:
        print(ensure_pytest_jev())
    except PytestJevUnavailable as exc:
        print(f"pytest-jev unavailable: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
