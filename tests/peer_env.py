"""pytest-jev 0.1.0's source distribution, and a venv where its tests run against this plugin.

The `jev` fixture is a drop-in for pytest-jev 0.1.0, so pytest-jev's own test suite (the
`tests/` folder of its sdist) and its `examples/` are run against it
(tests/test_fixture_peer_suite.py, tests/test_fixture_peer_examples.py). Both come from the
package index, cached under the tests' cache folder (tests/jevassert_env.py's cache_root()):

    <cache_root()>/pytest-jev-0.1.0-sdist/     the sdist unpacked (pip download, checked
                                               against SDIST_SHA256)
    <cache_root()>/peer-suite-<key>/           a venv with this checkout installed editable,
                                               typesafe-sdk (its tests' fakes import it) and
                                               the pytest this venv runs; NOT pytest-jev, which
                                               installs a module named pytest_jev too

The venv's key hashes the checkout's path, its pyproject.toml, the pytest and typesafe-sdk
versions and the Python version, so each worktree gets its own and a changed dependency list
or entry point builds a new one; the code itself is read from the checkout (editable).
Each is made once per machine under an fcntl lock, in a temporary folder renamed into place.

`python tests/peer_env.py` fetches both (or finds them) and prints the sdist folder and the python.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from jevassert_env import built_once, cache_root, clean_env, pip_download, probe

ROOT = Path(__file__).resolve().parents[1]
VERSION = "0.1.0"
SDIST_SHA256 = "d3a67a9dcee2f7e177526560a0fe8c6d506a1e80ffc138f288db6e783ef7479c"  # pytest_jev-0.1.0.tar.gz
TYPESAFE_SDK = "typesafe-sdk==0.7.5"  # what `pip install pytest-jev==0.1.0` resolves to (its range: >=0.7.1,<0.8)
KEYS = ("TYPESAFE_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TYPESAFE_BASE_URL")


class PeerUnavailable(RuntimeError):
    """pytest-jev's sdist or the venv to run it could not be provided (no index, a failed install)."""


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


# -- the sdist ---------------------------------------------------------------------------------

def sdist_dir() -> Path:
    """The unpacked sdist (pyproject.toml, LICENSE, src/, tests/, examples/), fetched on first use."""
    target = cache_root() / f"pytest-jev-{VERSION}-sdist"

    def ready() -> bool:
        return (target / "pyproject.toml").is_file() and (target / "tests" / "test_plugin.py").is_file()

    def build(tmp: Path) -> None:
        download = tmp / "download"
        failed = pip_download(f"pytest-jev=={VERSION} --hash=sha256:{SDIST_SHA256}", download, wheel=False)
        if failed is not None:
            raise PeerUnavailable(f"`pip download pytest-jev=={VERSION}` (sdist) failed (is the package index "
                                  f"reachable?):\n{failed}")
        [archive] = download.glob("pytest_jev-*.tar.gz")
        if hashlib.sha256(archive.read_bytes()).hexdigest() != SDIST_SHA256:
            raise PeerUnavailable(f"{archive.name} is not the pytest-jev {VERSION} sdist this suite pins")
        with tarfile.open(archive) as tar:
            tar.extractall(tmp / "unpacked", filter="data")
        for item in (tmp / "unpacked" / f"pytest_jev-{VERSION}").iterdir():
            item.rename(tmp / item.name)
        shutil.rmtree(tmp / "unpacked")
        shutil.rmtree(download)

    return built_once(target, ready, build, PeerUnavailable)


# -- the venv: this checkout and typesafe-sdk, not pytest-jev ----------------------------------

def venv_key() -> str:
    parts = [str(ROOT), (ROOT / "pyproject.toml").read_text(), pytest.__version__, TYPESAFE_SDK,
             ".".join(map(str, sys.version_info[:2]))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


PROBE = ("import importlib.util, json, pytest, pytest_jev, typesafe_sdk; print(json.dumps([pytest.__version__, "
         "pytest_jev.__file__, importlib.util.find_spec('pytest_jev.judge') is None]))")


def _works(python: Path) -> bool:
    """`python` runs this checkout's pytest_jev (not pytest-jev's), typesafe-sdk and our pytest."""
    out = probe(python, PROBE)
    if out is None:
        return False
    import json

    version, module, not_theirs = json.loads(out)
    return version == pytest.__version__ and Path(module).resolve().is_relative_to(ROOT / "pytest_jev") and not_theirs


def peer_python() -> Path:
    """The python of the venv where pytest-jev's tests run against this checkout (built on first use)."""
    target = cache_root() / f"peer-suite-{venv_key()}"
    python = target / "bin" / "python"

    def build(tmp: Path) -> None:
        done = subprocess.run([sys.executable, "-m", "venv", str(tmp)], capture_output=True, text=True,
                              timeout=300, check=False)
        if done.returncode != 0:
            raise PeerUnavailable(f"`python -m venv` failed:\n{_tail(done.stdout + done.stderr)}")
        done = subprocess.run([str(tmp / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                               "--no-input", "--quiet", "--retries", "2", "-e", str(ROOT), TYPESAFE_SDK,
                               f"pytest=={pytest.__version__}"],
                              capture_output=True, text=True, timeout=1200, env=clean_env(), check=False)
        if done.returncode != 0:
            raise PeerUnavailable(f"installing this checkout and {TYPESAFE_SDK} failed (is the package index "
                                  f"reachable?):\n{_tail(done.stdout + done.stderr)}")

    built_once(target, lambda: _works(python), build, PeerUnavailable)
    return python


def peer_env() -> dict[str, str]:
    """The environment of a run in the peer venv: no PYTHONPATH, no keys, no inherited pytest options."""
    env = {k: v for k, v in clean_env().items() if k not in KEYS and k != "PYTEST_ADDOPTS"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def unavailable(what: str, exc: Exception) -> None:
    """What a test that needs the sdist or a venv does when it cannot have it: fail (the peer
    suite must never pass by skipping), unless JEV_ALLOW_NO_PYTEST_JEV=1 (the differential's
    switch) turns that into a skip."""
    why = f"{what} is not available for the pytest-jev peer tests: {exc}"
    if os.environ.get("JEV_ALLOW_NO_PYTEST_JEV") == "1":
        pytest.skip(why)
    pytest.fail(f"{why}\nSet JEV_ALLOW_NO_PYTEST_JEV=1 to skip instead.", pytrace=False)


if __name__ == "__main__":
    try:
        print(sdist_dir())
        print(peer_python())
    except PeerUnavailable as exc:
        print(f"pytest-jev's sdist or the peer venv is unavailable: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
