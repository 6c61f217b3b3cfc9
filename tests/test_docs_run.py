"""Docs that run: every shell block of README.md, CONTRIBUTING.md and docs/*.md that needs no key runs,
as written, in a fresh copy of this checkout (its tracked and unignored files, as a clean clone has
them) with this venv's tools first on PATH and no API key in the environment, and must succeed; where
the docs show its output (a block marked `<!-- docs-test: output -->` below it), the lines shown
must be printed; a `console` transcript runs its `$ ` commands and must print the lines it shows
(its commands need not succeed: a transcript may show a run with a red gate). The other blocks
carry a marker saying why they do not run, and are skips with that reason here (tests/docs_blocks.py,
CONTRIBUTING.md "Docs that run"); the `ci` ones must be what .ci/run runs.

A failure names the block (`README.md:431`) and what failed: its exit code and the end of its
output, or the lines shown that it did not print. Nothing is written into the checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from docs_blocks import ROOT, Block, Output, all_blocks, ci_commands, doc_files, missing_lines, normalised, parse

SHELL = [block for block in all_blocks() if block.shell]
RUNNABLE = [block for block in SHELL if block.runs]
WHY = {"needs-key": "needs a provider's key", "ci": ".ci/run runs it (test_the_ci_blocks_are_what_ci_runs)"}
TIMEOUT = 1800  # seconds per block: the registry block replays every column twice on a busy 2-core machine
HIDDEN = ("PYTHONPATH", "VIRTUAL_ENV", "TYPESAFE_BASE_URL", "PYTEST_CURRENT_TEST")
IGNORED = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".pytest_cache", "*.egg-info", "build", "dist",
                                 "scratch", ".jev-bench", "harvest", ".mypy_cache", ".ruff_cache")


def checkout_copy(dest: Path) -> Path:
    """The checkout as a clean clone of it would be, with today's edits: git's tracked and
    untracked-but-not-ignored files (without git: the tree, build and cache folders left out)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=False)
    if listed.returncode != 0:
        shutil.copytree(ROOT, dest, symlinks=True, ignore=IGNORED)
        return dest
    for name in sorted(set(filter(None, listed.stdout.decode("utf-8", "surrogateescape").split("\0")))):
        source, target = ROOT / name, dest / name
        if not os.path.lexists(source):  # deleted in the working tree
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    return dest


def environment() -> dict[str, str]:
    """The reader's shell: this venv's tools first on PATH (not resolved: the venv's bin/), no key."""
    env = {key: value for key, value in os.environ.items()
           if not key.endswith("_API_KEY") and key not in HIDDEN and not key.startswith("PYTEST_XDIST")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_every_shell_block_runs_or_says_why_not() -> None:
    """Markers are known and well placed; the docs hold runnable blocks (the test below is not empty)."""
    problems = [problem for path in doc_files() for problem in parse(path)[1]]
    assert problems == []
    assert len(RUNNABLE) >= 4
    assert {block.where.split(":")[0] for block in RUNNABLE} >= {"README.md", "CONTRIBUTING.md"}


def test_the_ci_blocks_are_what_ci_runs() -> None:
    """A block marked `ci` is not run here because .ci/run runs it: each of its commands is there."""
    ci = ci_commands()
    marked = [block for block in all_blocks() if block.kind == "ci"]
    assert marked, "README's two commands are marked `ci`"
    missing = [f"{block.where}: `{command}` is not in .ci/run" for block in marked for command in block.commands()
               if normalised(command) not in ci]
    assert missing == []


def test_the_parser_finds_blocks_markers_and_output(tmp_path: Path) -> None:
    """docs_blocks.parse on a document written here: each kind of marker, an indented block, output."""
    doc = tmp_path / "README.md"
    doc.write_text("# t\n\n```sh\necho one && echo two  # a comment\n```\n\n<!-- docs-test: output -->\n```\n"
                   "one\n...o\n```\n\n1. step\n\n   <!-- docs-test: needs-key -->\n   ```sh\n"
                   "   TYPESAFE_API_KEY=... pytest\n   ```\n\n<!-- docs-test: illustrative -->\n```bash\nx\n```\n\n"
                   "<!-- docs-test: sometimes -->\n```sh\ny\n```\n\n<!-- docs-test: ci -->\n```python\nz\n```\n",
                   encoding="utf-8")
    blocks, problems = parse(doc, tmp_path)
    assert [(b.where, b.lang, b.kind) for b in blocks] == [
        ("README.md:3", "sh", None), ("README.md:16", "sh", "needs-key"), ("README.md:21", "bash", "illustrative"),
        ("README.md:26", "sh", "sometimes"), ("README.md:31", "python", "ci")]
    assert blocks[0].commands() == ["echo one", "echo two"] and blocks[0].runs and not blocks[1].runs
    assert blocks[1].text == "TYPESAFE_API_KEY=... pytest\n"
    assert [(o.where, o.text) for o in blocks[0].outputs] == [("README.md:8", "one\n...o")]
    assert problems == ["README.md:21: say why it is illustrative: `<!-- docs-test: illustrative: <why> -->`",
                        "README.md:26: unknown docs-test marker 'sometimes' (one of: ci, illustrative, needs-key, "
                        "output)", "README.md:31: docs-test marker 'ci' on a python block, which never runs"]
    assert missing_lines("one\n...o", "zero\none\ntwo\n") == []
    assert missing_lines("two\none", "one\ntwo\n") == ["one"]  # in order
    assert missing_lines("--- jev flips ---\n...\nend", "------ jev flips -----\nx\ny\nend\n") == []
    assert missing_lines("--- jev flips ---", "------ jev flip -----\n") == ["--- jev flips ---"]


def test_a_console_block_is_a_transcript(tmp_path: Path) -> None:
    """`$ ` lines (with their `\\` continuations) are the commands, each run whatever the one before
    returned; the other lines are the output it shows."""
    doc = tmp_path / "README.md"
    doc.write_text("```console\n$ echo a \\\n  b\na b\n...\n$ false\n$ echo c\nc\n```\n", encoding="utf-8")
    [block], problems = parse(doc, tmp_path)
    assert problems == [] and block.runs and block.transcript
    assert block.script() == "set -uo pipefail\necho a \\\n  b\nfalse\necho c\n"
    assert block.shown() == "a b\n...\nc"
    assert block.commands() == ["echo a \\", "b", "false", "echo c"]
    done = subprocess.run(["bash", "-c", block.script()], capture_output=True, text=True, check=False)
    assert missing_lines(block.shown(), done.stdout) == []


@pytest.mark.slow
@pytest.mark.parametrize("block", SHELL, ids=[block.where for block in SHELL])
def test_the_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    if block.kind is not None:  # a block its doc marks as not run here is a skip with the doc's reason, not silence
        pytest.skip(f"{block.where}: marked docs-test: {block.kind} ({block.reason or WHY[block.kind]})")
    copy = checkout_copy(tmp_path / "checkout")
    script = tmp_path / "block.sh"
    script.write_text(block.script(), encoding="utf-8")
    try:
        done = subprocess.run(["bash", str(script)], cwd=copy, env=environment(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{block.where}: the block did not finish in {TIMEOUT} s:\n{block.text}", pytrace=False)
        raise AssertionError("unreachable") from exc
    tail = "\n".join(done.stdout.splitlines()[-60:])
    if done.returncode != 0 and not block.transcript:
        pytest.fail(f"{block.where}: the block failed (exit {done.returncode}):\n{block.text}"
                    f"--- the end of its output ---\n{tail}", pytrace=False)
    shown = [Output(block.where, block.shown())] if block.transcript else []
    for output in [*shown, *block.outputs]:
        missing = missing_lines(output.text, done.stdout)
        if missing:
            pytest.fail(f"{block.where}: the output shown at {output.where} is not what the block printed; not "
                        "found, in order:\n  " + "\n  ".join(missing) + f"\n--- the end of its output ---\n{tail}",
                        pytrace=False)
