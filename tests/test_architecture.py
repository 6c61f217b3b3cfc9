"""The package's shape, as ARCHITECTURE.md states it: the import-linter contracts hold (one
direction of layers, no cycle, pytest only on the pytest side), no private name crosses a module,
every module name means one thing, and a module over 400 lines says at its top why it is one."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_jev"
MAX_LINES = 400
LONG_MODULE_REASON = "Kept as one module"  # how a module over MAX_LINES starts the sentence that says why


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_module(path: Path, node: ast.ImportFrom) -> str:
    """The absolute name of the module an ImportFrom reads from."""
    if not node.level:
        return node.module or ""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def test_the_import_linter_contracts_hold() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint is not None, "import-linter is in the test extra: pip install -e '.[test]'"
    done = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:]
    assert "0 broken" in done.stdout


def test_every_module_below_the_pytest_side_is_held_to_not_importing_pytest() -> None:
    """The layers contract is exhaustive (a new top-level module must sit in a layer); the contract
    that keeps pytest out names the same modules as every layer below the pytest side's."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    contracts = {contract["name"]: contract for contract in config["contracts"]}
    layers = contracts["Layers: each layer imports only from the layers below it"]["layers"]
    below = layers[layers.index("stash") + 1:]
    named = {f"pytest_jev.{name.strip(' ()')}" for layer in below for name in re.split(r"[:|]", layer)}
    assert set(contracts["Only the pytest side imports pytest"]["source_modules"]) == named


def test_no_private_name_crosses_a_module() -> None:
    names = {module_name(path): path for path in modules()}
    crossings = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = imported_module(path, node)
            if not source.startswith("pytest_jev"):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    crossings.append(f"{path.relative_to(PACKAGE)} imports {alias.name} from "
                                     f"{names[source].relative_to(PACKAGE)}")
    assert crossings == []


def test_every_module_name_means_one_thing() -> None:
    seen: dict[str, list[str]] = {}
    for path in modules():
        if path.name not in ("__init__.py", "__main__.py"):
            seen.setdefault(path.stem, []).append(str(path.relative_to(PACKAGE)))
    assert {stem: where for stem, where in seen.items() if len(where) > 1} == {}


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_module_over_400_lines_says_why_at_its_top(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if text.count("\n") <= MAX_LINES:
        return
    docstring = ast.get_docstring(ast.parse(text)) or ""
    assert LONG_MODULE_REASON in docstring, f"{path.name} has {text.count(chr(10))} lines and no reason at its top"


def test_only_options_reads_flags_and_ini_values() -> None:
    """Every --jev-* flag and ini key is parsed once, in options.py, into the frozen Options
    (issue 17); no other module calls config.getoption or config.getini, the fixture included."""
    readers = [str(path.relative_to(PACKAGE)) for path in modules() if path.name != "options.py"
               and re.search(r"\.(getoption|getini)\(", path.read_text(encoding="utf-8"))]
    assert readers == []
