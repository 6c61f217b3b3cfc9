"""Backends as a pluggable set: a third-party package adds a backend kind through the entry-point
group `jev_packs.backends` with no change here (installed into a venv of its own, then used to
record and replay a pack, and seen by the catalog the CLI uses); a conftest.py adds one through
the pytest_jev_backend_kinds hook, takes over pack recording's backend through
pytest_jev_make_backend, and the `jev` fixture's through the `jev_backend` fixture."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import write_pack
from pytest_jev.backends.catalog import ENTRY_POINT_GROUP, Catalog, installed_kinds

# A backend kind as somebody else's package writes it: answers every question with its first label
# at 0.8 (a noul question: true at 0.8), serves `acme-<model>`, costs $1/$2 per million tokens.
ACME = '''
from pytest_jev.backends.base import Answer
from pytest_jev.backends.kinds import BackendKind
from pytest_jev.backends.system_one import labels_of, shape


class AcmeBackend:
    name = "acme"
    mode = "live"

    def __init__(self, model):
        self.model = model or "acme-1"

    def backend_id(self, served_model):
        return served_model or self.model

    def describe(self):
        return {"provider": "Acme gateway", "backend": self.name, "model": self.model,
                "pricing": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0}}

    async def answer(self, request):
        answers = {}
        for qid, question in request.questions.items():
            n = max(2, len(labels_of(question)))
            probs = [0.2, 0.8] if question["type"] == "noul" else [0.8] + [0.2 / (n - 1)] * (n - 1)
            answers[qid] = shape(question, probs)
        return Answer(model=self.model, answers=answers, usage={"input_tokens": 10, "output_tokens": 2},
                      latency_ms=1.0, http_status=200)

    async def aclose(self):
        return None


class Acme(BackendKind):
    name = "acme"
    model_in_spec = True
    forms = ("acme", "acme:<model>")

    def make(self, spec, *, pack=None, **options):
        return AcmeBackend(spec.asked_model)

    def folder(self, spec):
        return spec.asked_model or "acme-1"

    def list_price(self, model):
        return (1.0, 2.0)
'''

ACME_PYPROJECT = '''
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "acme-jev-backend"
version = "1.0"
dependencies = ["jev-packs"]

[project.entry-points."jev_packs.backends"]
acme = "acme_backend:Acme"
'''


def test_the_built_in_kinds_register_through_the_entry_point_group() -> None:
    from importlib.metadata import entry_points

    points = {point.name: point.value for point in entry_points(group=ENTRY_POINT_GROUP)}
    assert {name: points[name] for name in ("jev", "mock", "sparrow", "minilm", "anthropic", "openai", "openrouter")
            } == {name: f"pytest_jev.backends.builtin:{name.upper()}" for name in
                  ("jev", "mock", "sparrow", "minilm", "anthropic", "openai", "openrouter")}
    assert {kind.name for kind in installed_kinds()} >= set(points)
    assert Catalog().forms()[:4] == ["jev", "mock", "sparrow", "minilm"]  # built-ins first, in their order


@pytest.fixture(scope="module")
def acme_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding this project (through the test venv's site-packages, read as a site folder so
    the editable install and every dependency are there) and, installed by pip, the acme package."""
    root = tmp_path_factory.mktemp("acme")
    package = root / "acme-jev-backend"
    (package / "acme_backend").mkdir(parents=True)
    (package / "acme_backend" / "__init__.py").write_text(ACME)
    (package / "pyproject.toml").write_text(ACME_PYPROJECT)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "test_venv.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                                "--no-index", str(package)], capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert (site / "acme_backend" / "__init__.py").is_file()  # in the new venv, not the test venv
    return python


def run_in(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run([str(python), *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=300,
                          env=env)


@pytest.mark.slow
def test_an_installed_package_adds_a_backend_kind_that_records_and_replays(acme_venv: Path, tmp_path: Path) -> None:
    write_pack(tmp_path, recording=None, gates=None)  # the acme model is no good: no gate to fail
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    recorded = run_in(acme_venv, tmp_path, "-m", "pytest", "packs", "--jev-record", "--jev-backend=acme:acme-7",
                      "-p", "no:cacheprovider")
    assert recorded.returncode == 0, recorded.stdout[-3000:] + recorded.stderr[-3000:]
    assert "jev recorded toy: 12 called, 0 reused, 0 errors" in recorded.stdout
    folder = tmp_path / "results" / "acme-7"
    lines = [json.loads(line) for line in (folder / "toy.predictions.jsonl").read_text().splitlines()]
    assert len(lines) == 12 and {(line["backend"], line["model"]) for line in lines} == {("acme", "acme-7")}
    info = json.loads((folder / "backend.json").read_text())
    assert (info["provider"], info["pricing"]) == ("Acme gateway", {"input_usd_per_mtok": 1.0,
                                                                   "output_usd_per_mtok": 2.0})
    replayed = run_in(acme_venv, tmp_path, "-m", "pytest", "packs", "--jev-backend=acme:acme-7", "-p",
                      "no:cacheprovider")
    assert replayed.returncode == 0, replayed.stdout[-3000:]
    assert "recording results/acme-7/toy.predictions.jsonl (backend acme:acme-7, model acme-7" in replayed.stdout
    assert "cost/case $0.000014 (total $0.0002 at $1.0/M input + $2.0/M output tokens)" in replayed.stdout
    dry = run_in(acme_venv, tmp_path, "-m", "pytest", "packs", "--jev-dry-run", "--jev-record=all",
                 "--jev-backend=acme:acme-7", "-p", "no:cacheprovider")
    assert "jev dry run toy: 12 calls" in dry.stdout and "with --jev-backend=acme:acme-7" in dry.stdout
    # outside pytest: the catalog the jev-packs CLI parses --backend with knows the kind too
    probe = ("from pytest_jev.backends.catalog import Catalog, backend_from\n"
             "spec = Catalog().parse('acme:acme-9')\n"
             "print(Catalog().forms()[-2:], spec.kind, spec.list_price, backend_from('acme').model)\n")
    seen = run_in(acme_venv, tmp_path, "-c", probe)
    assert seen.stdout.split("\n")[0] == "['acme', 'acme:<model>'] acme (1.0, 2.0) acme-1", seen.stderr
    # and the test venv, where the package is not installed, does not
    assert "acme" not in Catalog().kinds


FAKE_KIND = '''
import json
import pathlib

from pytest_jev.backends.base import Answer
from pytest_jev.backends.kinds import BackendKind
from pytest_jev.backends.mock import MockBackend


class Fake(BackendKind):
    name = "fake"

    def make(self, spec, *, pack=None, **options):
        backend = MockBackend.from_pack(pack, seed=3)
        backend.name = "fake"
        return backend


def pytest_jev_backend_kinds(config):
    return [Fake()]
'''


def test_a_conftest_adds_a_backend_kind_through_the_hook(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, recording=None)
    pytester.makeconftest(FAKE_KIND)
    result = pytester.runpytest("packs", "--jev-record", "--jev-backend=fake", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["jev recorded toy: 12 called, 0 reused, 0 errors, * -> "
                                 "results/mock-3/toy.predictions.jsonl"])
    lines = (pytester.path / "results" / "mock-3" / "toy.predictions.jsonl").read_text().splitlines()
    assert {json.loads(line)["backend"] for line in lines} == {"fake"}
    replay = pytester.runpytest("packs", "--jev-backend=fake", "-p", "no:cacheprovider")
    replay.stdout.fnmatch_lines(["recording results/mock-3/toy.predictions.jsonl (backend fake, *"])
    assert replay.ret == 0
    unknown = pytester.runpytest("packs", "--jev-record", "--jev-backend=fakes", "-p", "no:cacheprovider")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(["*unknown backend 'fakes'; use one of: jev, mock, *, fake"])


MAKE_BACKEND = '''
import pathlib

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_jev_make_backend(spec, options, pack, config):
    """Every pack is recorded through a wrapper of the backend the plugin would build."""
    backend = options.catalog.make(spec, pack=pack)
    pathlib.Path("made.txt").write_text(f"{spec.kind} {pack.id}")
    return backend
'''


def test_a_conftest_builds_pack_recordings_backend_through_the_hook(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, recording=None)
    pytester.makeconftest(MAKE_BACKEND)
    result = pytester.runpytest("packs", "--jev-record", "--jev-backend=mock", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["jev recorded toy: 12 called, *"])
    assert (pytester.path / "made.txt").read_text() == "mock toy"


JEV_BACKEND = '''
import pathlib

import pytest


class Counting:
    """The default backend, counting the requests that reach it."""

    def __init__(self, inner):
        self.inner = inner
        self.name, self.mode = inner.name, inner.mode
        self.calls = 0

    def backend_id(self, served):
        return self.inner.backend_id(served)

    def describe(self):
        return self.inner.describe()

    async def answer(self, request):
        self.calls += 1
        pathlib.Path("calls.txt").write_text(str(self.calls))
        return await self.inner.answer(request)

    async def aclose(self):
        await self.inner.aclose()


@pytest.fixture(scope="session")
def jev_backend(jev_backend):
    return Counting(jev_backend)
'''


def test_the_jev_fixture_records_through_an_overridden_jev_backend(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(JEV_BACKEND)
    pytester.makepyfile(test_bot='''
def test_one(jev):
    jev.holds("Sorry, refunded.", "apologizes")


def test_two(jev):
    jev.choice("Sorry, refunded.", "Which team?", ["billing", "technical"])
''')
    result = pytester.runpytest("--jev-record", "--jev-backend=mock", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert (pytester.path / "calls.txt").read_text() == "2"
    result.stdout.fnmatch_lines(["jev: wrote jev_answers/test_bot.jsonl: 2 new, 0 re-recorded"])
    replay = pytester.runpytest("--jev-backend=mock", "-p", "no:cacheprovider")  # replay never asks for it
    replay.assert_outcomes(passed=2)
    assert (pytester.path / "calls.txt").read_text() == "2"


def test_a_backend_kind_entry_point_that_fails_to_load_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    import pytest_jev.backends.catalog as catalog

    broken = EntryPoint(name="broken", value="no_such_module_here:Kind", group=ENTRY_POINT_GROUP)
    monkeypatch.setattr(catalog, "entry_points", lambda group: [broken])
    catalog.installed_kinds.cache_clear()
    try:
        with pytest.raises(catalog.OptionError) as failed:
            catalog.installed_kinds()
    finally:
        monkeypatch.undo()
        catalog.installed_kinds.cache_clear()
    line = failed.value.one_line()
    assert "the backend kind 'broken' (no_such_module_here:Kind) cannot be loaded: ModuleNotFoundError" in line
    assert "\n" not in line
