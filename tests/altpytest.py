"""Another pytest major version beside the project's, for the citizenship tests.

A venv under the tests' cache folder gets only `pytest==<version>`; a .pth file then puts
the project's own site-packages after it on sys.path, so `python -m pytest` there runs that
pytest with this checkout's plugin and every other dependency as the project has them.
Built once per machine under an fcntl lock, into a temporary folder renamed into place.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

from jevassert_env import cache_root


def pytest_python(version: str) -> Path:
    """The python of a venv whose pytest is `version` (building it on first use)."""
    folder = cache_root() / f"pytest-{version}"
    python = folder / "bin" / "python"
    if _works(python, version):
        return python
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".pytest-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _works(python, version):
            return python
        tmp = Path(tempfile.mkdtemp(prefix=f"pytest-{version}-", dir=folder.parent))
        subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True, capture_output=True)
        subprocess.run([str(tmp / "bin" / "python"), "-m", "pip", "install", "--quiet", f"pytest=={version}"],
                       check=True, capture_output=True, timeout=600)
        own = next(Path(p) for p in site.getsitepackages() if p.endswith("site-packages"))
        target = next((tmp / "lib").glob("python3*/site-packages"))
        # an `import` line runs: addsitedir also reads the project's own .pth files (the editable install)
        (target / "zz-jev-packs-project.pth").write_text(f"import site; site.addsitedir({str(own)!r})\n")
        if folder.exists():
            shutil.rmtree(folder)
        tmp.rename(folder)
        # pip wrote the temporary folder into the scripts it made; `python -m pytest` needs none of them
    if not _works(python, version):
        raise RuntimeError(f"could not build a venv with pytest {version} in {folder}")
    return python


def _works(python: Path, version: str) -> bool:
    if not python.is_file():
        return False
    done = subprocess.run([str(python), "-c", "import pytest, pytest_jev; print(pytest.__version__)"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""}, check=False,
                          cwd=tempfile.gettempdir())  # not the checkout: pytest_jev must come from site-packages
    return done.returncode == 0 and done.stdout.strip() == version
