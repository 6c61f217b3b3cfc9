"""Installing jev-packs as README.md's "Using it" says (from a checkout, from a wheel built from it),
and beside PyPI's pytest-jev, which installs a module of the same name (`pytest_jev`): each way the
files can end up, pytest and `jev-packs` say so in one line, never with a traceback, and the fix
that line gives (`pip uninstall -y pytest-jev jev-packs`, then install jev-packs again) works.

Each scenario is a fresh venv (no pip of its own: this venv's pip installs into it with --python)
whose dependencies come through a .pth line from a folder of links to the peer venv's site-packages
(tests/peer_env.py: our dependencies and typesafe-sdk, which pytest-jev imports), so no scenario
downloads anything; pytest-jev's wheel is PyPI's, fetched once (tests/pytestjev_env.py).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from peer_env import PeerUnavailable, peer_env, peer_python, unavailable
from pytestjev_env import PytestJevUnavailable, ensure_pytest_jev_wheel

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
BOTH = "jev-packs: pytest-jev 0.1.0 is installed in this environment too (both install the module pytest_jev)"
FIX = "run `pip uninstall -y pytest-jev jev-packs`, then install jev-packs again (README.md, \"Using it\")"
THEIRS = f"{BOTH}, and `import pytest_jev` finds pytest-jev's files, not jev-packs'; {FIX}"
OURS = f"{BOTH}; its files are jev-packs' here, so `pip uninstall pytest-jev` alone would delete some of them: {FIX}"
# what our plugin adds to `pytest --help`, and a test of the jev fixture that needs no answer
OUR_FLAG = "--jev-registry"
BUILD = ("setuptools", "_distutils_hack", "pkg_resources")
SKIPPED = ("jev_packs", "__editable__", "pytest_jev", "pip", "__pycache__")
PROJECT_TEST = ("def test_plain():\n    assert True\n\n\n"
                "def test_jev_is_ours(jev):\n    assert 'threshold=0.8' in repr(jev)\n")


def _source(dest: Path) -> Path:
    """The files a build of jev-packs reads, copied (a build writes build/ and *.egg-info beside them)."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md", "jev_packs_entry.py"):
        shutil.copyfile(ROOT / name, dest / name)
    shutil.copytree(ROOT / "templates", dest / "templates")
    shutil.copytree(ROOT / "pytest_jev", dest / "pytest_jev", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def pip(*args: str | Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *map(str, args)],
                          capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, f"pip {' '.join(map(str, args))}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """source: a copy of the checkout; ours: the wheel `pip wheel` builds from it (README's form, here
    without build isolation: no download); theirs: pytest-jev 0.1.0's wheel; deps: the folder of links."""
    base = tmp_path_factory.mktemp("install")
    source = _source(base / "jev-packs")
    pip("wheel", "--no-deps", "--no-build-isolation", "-q", "-w", base / "dist", source)
    [ours] = (base / "dist").glob("jev_packs-*.whl")
    try:
        theirs = ensure_pytest_jev_wheel()
        peer = peer_python()
    except (PytestJevUnavailable, PeerUnavailable, OSError, subprocess.SubprocessError) as exc:
        unavailable("pytest-jev 0.1.0's wheel and the peer venv", exc)
        raise AssertionError("unreachable") from exc
    site = Path(subprocess.run([str(peer), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    deps = base / "deps"
    deps.mkdir()
    # the build backend this venv has (setuptools >= 77, as pyproject.toml asks), to build a checkout offline
    ours_site = Path(sysconfig.get_paths()["purelib"])
    build = [entry for entry in ours_site.iterdir() if entry.name.startswith(BUILD)]
    for entry in [*build, *site.iterdir()]:  # but this checkout's editable install, pip and .pth files
        name = entry.name
        if name.startswith(SKIPPED) or name.endswith(".pth") or (deps / name).exists() \
                or (entry.parent == site and name.startswith(BUILD)):
            continue
        (deps / name).symlink_to(entry)
    return {"source": source, "ours": ours, "theirs": theirs, "deps": deps}


def venv(where: Path, deps: Path, *after: Path) -> Path:
    """A fresh venv without pip; its .pth line reaches `deps` (and then `after`, behind site-packages)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "deps.pth").write_text("".join(f"{p}\n" for p in (deps, *after)))
    return python


def install(python: Path, *args: str | Path) -> None:
    pip("--python", python, "install", "--no-deps", "--no-index", "-q", *args)


def uninstall(python: Path, *names: str) -> None:
    pip("--python", python, "uninstall", "-y", "-q", *names)


def run(python: Path, project: Path, *args: str, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), *args], cwd=project, capture_output=True, text=True, check=False,
                          timeout=300, env=env or peer_env())


def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "test_it.py").write_text(PROJECT_TEST)
    (folder / "pytest.ini").write_text("[pytest]\n")
    return folder


def assert_ours_alone(python: Path, folder: Path) -> None:
    """pytest runs our plugin and says nothing about pytest-jev; so does jev-packs."""
    tests = run(python, folder, "-m", "pytest", "-p", "no:cacheprovider", "test_it.py")
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "jev-packs: pytest-jev" not in tests.stdout + tests.stderr
    assert OUR_FLAG in run(python, folder, "-m", "pytest", "--help").stdout
    command = run(python, folder, "-c", "import jev_packs_entry, sys; sys.exit(jev_packs_entry.main(['--help']))")
    assert command.returncode == 0 and command.stderr == "", command.stderr


def assert_stopped_in_one_line(python: Path, folder: Path) -> None:
    """pytest-jev's files are the ones imported: pytest stops with the line (usage error, exit 4,
    no traceback), and so does jev-packs (exit 2)."""
    tests = run(python, folder, "-m", "pytest", "-p", "no:cacheprovider", "test_it.py")
    text = tests.stdout + tests.stderr
    assert tests.returncode == pytest.ExitCode.USAGE_ERROR, text
    assert f"ERROR: {THEIRS}" in text and "Traceback" not in text and "ValueError" not in text, text
    command = run(python, folder, "-c", "import jev_packs_entry, sys; sys.exit(jev_packs_entry.main(['--help']))")
    assert command.returncode == 2 and command.stderr.strip() == THEIRS, command.stderr


def test_installed_from_a_checkout_alone_it_says_nothing(built: dict[str, Path], tmp_path: Path) -> None:
    python = venv(tmp_path / "venv", built["deps"])
    install(python, "--no-build-isolation", built["source"])  # README: pip install ./jev-packs
    assert_ours_alone(python, project(tmp_path))


def test_pytest_jev_installed_over_jev_packs_stops_pytest_with_one_line_and_the_fix_works(
        built: dict[str, Path], tmp_path: Path) -> None:
    python = venv(tmp_path / "venv", built["deps"])
    folder = project(tmp_path)
    install(python, built["ours"])
    install(python, built["theirs"])
    assert_stopped_in_one_line(python, folder)
    # the fix the line gives
    uninstall(python, "pytest-jev", "jev-packs")
    install(python, built["ours"])
    assert_ours_alone(python, folder)


def test_jev_packs_installed_over_pytest_jev_runs_and_says_so_in_the_header(built: dict[str, Path],
                                                                            tmp_path: Path) -> None:
    python = venv(tmp_path / "venv", built["deps"])
    folder = project(tmp_path)
    install(python, built["theirs"])
    install(python, built["ours"])
    tests = run(python, folder, "-m", "pytest", "-p", "no:cacheprovider", "test_it.py")
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert tests.stdout.splitlines().count(OURS) == 1 and "Traceback" not in tests.stdout + tests.stderr
    # whichever entry point pytest loads first (here forced, with autoloading off)
    for order in (["-p", "jev", "-p", "jev_packs"], ["-p", "jev_packs", "-p", "jev"]):
        env = {**peer_env(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        forced = run(python, folder, "-m", "pytest", "-p", "no:cacheprovider", *order, "test_it.py", env=env)
        assert forced.returncode == 0 and OURS in forced.stdout, forced.stdout + forced.stderr
    command = run(python, folder, "-c", "import jev_packs_entry, sys; sys.exit(jev_packs_entry.main(['--help']))")
    assert command.returncode == 0 and command.stderr.strip() == OURS
    # what the line warns about: uninstalling pytest-jev alone deletes files of ours
    purelib = Path(run(python, folder, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
                   .stdout.strip())
    uninstall(python, "pytest-jev")
    assert not (purelib / "pytest_jev" / "plugin.py").exists()
    install(python, "--force-reinstall", built["ours"])
    assert_ours_alone(python, folder)


def test_an_install_that_pytest_jev_shadows_says_so_in_one_line(built: dict[str, Path], tmp_path: Path) -> None:
    """jev-packs in a folder behind site-packages (as an editable install's finder is), pytest-jev in
    site-packages: `import pytest_jev` finds pytest-jev's package, which has no file of ours."""
    behind = tmp_path / "behind"
    pip("install", "--no-deps", "--no-index", "-q", "--target", behind, built["ours"])
    python = venv(tmp_path / "venv", built["deps"], behind)
    folder = project(tmp_path)
    install(python, built["theirs"])
    assert_stopped_in_one_line(python, folder)
    uninstall(python, "pytest-jev")
    assert_ours_alone(python, folder)


def test_the_readme_says_how_to_install_today() -> None:
    """`pip install jev-packs` finds nothing on the package index: README and docs/fixture.md give
    forms that work (a checkout, a wheel built from it, pip's git-URL form), not that one."""
    for doc in (ROOT / "README.md", ROOT / "docs" / "fixture.md"):
        text = doc.read_text(encoding="utf-8")
        assert "pip install jev-packs " not in text and "pip install jev-packs\n" not in text, doc
        assert "git+" in text, doc
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    using = readme.split("\n## Using it\n", 1)[1].split("\n## ", 1)[0]
    assert "pip wheel --no-deps -w dist" in using and "dist/jev_packs-0.1.0-py3-none-any.whl" in using
