"""A wheel built from the repo (not the editable checkout) carries the templates, schemas, py.typed
and the built-in backend kinds' entry points, and renders a report and the scoreboard: the
templates live in the top-level templates/ folder and reach the package through a link, which
only a real build proves is followed. It is built from a copy of the sources in a temporary
folder, so the build leaves nothing (build/, *.egg-info) in the checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_an_installed_wheel_renders_reports_and_the_scoreboard(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / name, source / name)
    shutil.copytree(ROOT / "templates", source / "templates")
    shutil.copytree(ROOT / "pytest_jev", source / "pytest_jev", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            str(source), "-w", str(tmp_path / "wheel")], capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = (tmp_path / "wheel").glob("jev_packs-*.whl")
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    for shipped in ("pytest_jev/templates/report.md.j2", "pytest_jev/templates/scoreboard.html.j2",
                    "pytest_jev/templates/svg.j2", "pytest_jev/formats/schema/protocol-report.schema.json",
                    "pytest_jev/formats/schema/recording-line.schema.json",
                    "pytest_jev/packs/schema/pack.schema.json", "pytest_jev/py.typed",
                    "pytest_jev/record/__init__.py"):
        assert shipped in names, shipped
    [entry_points] = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
    text = archive.read(entry_points).decode()
    assert "[jev_packs.backends]" in text and "jev = pytest_jev.backends.builtin:JEV" in text

    # "install" it: a venv whose site-packages holds the wheel's files, with the dependencies reached
    # through a .pth line (that folder's own .pth files, the editable install among them, stay unread)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    zipfile.ZipFile(wheel).extractall(site)
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    registry = tmp_path / "registry"
    (registry / "packs").mkdir(parents=True)
    shutil.copytree(ROOT / "packs" / "semantic-drift", registry / "packs" / "semantic-drift")
    for folder in ("sparrow-0.2.0-nano-general-v1.1", "minilm-l6-int8-zeroshot-1.0.0"):
        (registry / "results" / folder).mkdir(parents=True)
        for name in ("backend.json", "semantic-drift.predictions.jsonl", "semantic-drift.heldout.json"):
            shutil.copyfile(ROOT / "results" / folder / name, registry / "results" / folder / name)
    script = ("import sys, json, pathlib, pytest_jev\n"
              "from pytest_jev.backends.catalog import Catalog\n"
              "assert Catalog().forms()[:2] == ['jev', 'mock'], Catalog().forms()\n"
              "from pytest_jev.formats.run_json import ResultsFile\n"
              "from pytest_jev.registry.render import report_markdown\n"
              "from pytest_jev.registry.scoreboard import write_scoreboard\n"
              "root = pathlib.Path(sys.argv[1])\n"
              "doc = json.loads((root / 'results/sparrow-0.2.0-nano-general-v1.1/semantic-drift.heldout.json')"
              ".read_text())\n"
              "print(json.dumps({'module': pytest_jev.__file__, 'report': report_markdown(ResultsFile.from_json(doc)),"
              " 'page': str(write_scoreboard(root))}))\n")
    # a PYTHONPATH naming a checkout would shadow the wheel's copy: the installed venv runs without one
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run([str(python), "-c", script, str(registry)], cwd=tmp_path, capture_output=True, text=True,
                          check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert found["module"].startswith(str(site)), found["module"]  # the wheel's copy, not the checkout
    assert "semantic-drift v0.1.0 (heldout split)" in found["report"] and "<svg" in found["report"]
    page = Path(found["page"]).read_text(encoding="utf-8")
    assert "sparrow-0.2.0-nano-general-v1.1" in page and "minilm-l6-int8-zeroshot-1.0.0" in page
    assert 'data-pack="semantic-drift"' in page
