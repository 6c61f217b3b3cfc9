"""The shell blocks of the docs, as tests/test_docs_run.py runs them.

A fenced block whose language is a shell's (sh, bash, shell, console, zsh) runs as written unless
an HTML comment on the nearest line above its fence says otherwise (CONTRIBUTING.md, "Docs that
run"):

    <!-- docs-test: needs-key -->                 needs a provider's key: not run
    <!-- docs-test: illustrative: <why> -->       placeholders, your environment or project: not run
    <!-- docs-test: ci -->                        .ci/run runs these commands: checked against it
    <!-- docs-test: output -->                    (before any fenced block) output of the shell
                                                  block above it: its lines must be printed, in order

A `console` block is a transcript: its `$ ` lines are the commands, run in order, and its other
lines are what they print, checked as an output block's are; its commands need not succeed (a
transcript may show a run whose gates fail), its output must be what it shows. Any other shell
block must succeed as a whole (`set -euo pipefail`).

Every block is named by its file and the line of its opening fence (`README.md:431`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHELLS = {"sh", "bash", "shell", "console", "zsh"}
KINDS = {"needs-key", "illustrative", "ci", "output"}
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<kind>[\w-]+)\s*(?::\s*(?P<reason>.*?))?\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
ELLIPSIS = "..."
SEPARATOR = re.compile(r"(?<![^ ])(-{3,}|={3,})(?![^ ])")


def doc_files(root: Path = ROOT) -> list[Path]:
    """The documents whose blocks must run: README.md, CONTRIBUTING.md and docs/*.md."""
    return [root / "README.md", root / "CONTRIBUTING.md", *sorted((root / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Output:
    where: str  # file:line of its fence
    text: str


@dataclass(frozen=True)
class Block:
    where: str  # file:line of its opening fence, e.g. README.md:431
    lang: str
    text: str  # the body, dedented to the fence's indentation
    kind: str | None = None  # the docs-test marker above it, if any
    reason: str | None = None
    outputs: list[Output] = field(default_factory=list)

    @property
    def shell(self) -> bool:
        return self.lang.lower() in SHELLS

    @property
    def runs(self) -> bool:
        return self.shell and self.kind is None

    @property
    def transcript(self) -> bool:
        """A console block: `$ ` commands and the lines they print."""
        return self.lang.lower() == "console"

    def script(self) -> str:
        """What bash runs: the block, or a transcript's commands (its `$ ` lines, with their `\\`
        continuations), each run whatever the one before it returned."""
        if not self.transcript:
            return "set -euo pipefail\n" + self.text
        lines, going = [], False
        for line in self.text.splitlines():
            if line.startswith("$ ") or going:
                lines.append(line[2:] if line.startswith("$ ") and not going else line)
                going = line.endswith("\\")
        return "set -uo pipefail\n" + "\n".join(lines) + "\n"

    def shown(self) -> str:
        """The output a transcript shows: its lines that are not commands."""
        if not self.transcript:
            return ""
        out, going = [], False
        for line in self.text.splitlines():
            if line.startswith("$ ") or going:
                going = line.endswith("\\")
            else:
                out.append(line)
        return "\n".join(out)

    def commands(self) -> list[str]:
        """Its commands, comments dropped, one per `&&` or line (for the ci check)."""
        out = []
        for line in (self.script().split("\n", 1)[1] if self.transcript else self.text).splitlines():
            command = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
            out.extend(part.strip() for part in command.split("&&") if part.strip())
        return out


def parse(path: Path, root: Path = ROOT) -> tuple[list[Block], list[str]]:
    """(every fenced block of a document, with its marker and outputs; the marker problems found)."""
    name = path.relative_to(root).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    problems: list[str] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            if lines[i].lstrip().startswith("<!--") and "docs-test" in lines[i] and not MARKER.match(lines[i]):
                problems.append(f"{name}:{i + 1}: a docs-test comment that does not read "
                                "`<!-- docs-test: KIND[: why] -->`")
            i += 1
            continue
        indent, fence, lang = opened["indent"], opened["fence"], opened["lang"]
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence[0] * len(fence)):
            end += 1
        body = "\n".join(line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[i + 1:end])
        above = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        marker = MARKER.match(above)
        kind, reason = (marker["kind"], marker["reason"] or None) if marker else (None, None)
        where = f"{name}:{i + 1}"
        block = Block(where, lang, body + "\n", kind, reason)
        if kind is not None and kind not in KINDS:
            problems.append(f"{where}: unknown docs-test marker '{kind}' (one of: {', '.join(sorted(KINDS))})")
        elif kind == "output":
            shells = [b for b in blocks if b.shell]
            if block.shell or not shells:
                problems.append(f"{where}: an output marker belongs before the output of a shell block, below it")
            else:
                shells[-1].outputs.append(Output(where, body))
        elif kind is not None and not block.shell:
            problems.append(f"{where}: docs-test marker '{kind}' on a {lang or 'plain'} block, which never runs")
        elif kind == "illustrative" and not reason:
            problems.append(f"{where}: say why it is illustrative: `<!-- docs-test: illustrative: <why> -->`")
        elif kind == "needs-key" and "_API_KEY" not in body:
            problems.append(f"{where}: marked needs-key, but names no *_API_KEY variable")
        if kind != "output":
            blocks.append(block)
        i = end + 1
    return blocks, problems


def all_blocks(root: Path = ROOT) -> Iterator[Block]:
    for path in doc_files(root):
        yield from parse(path, root)[0]


def _plain(line: str) -> str:
    """A line with its whitespace normalised and pytest's separator runs (`-----`, `=====`, as wide as
    the terminal) cut to three."""
    return SEPARATOR.sub(lambda run: run[0][0] * 3, " ".join(line.split()))


def missing_lines(shown: str, printed: str) -> list[str]:
    """The lines of `shown` not printed, in order: whitespace is normalised, and so are separator
    runs, `...` stands for any text (a line of only `...` for any lines), and each shown line must
    match a whole printed line after the previous match."""
    out = [_plain(line) for line in printed.splitlines()]
    position, missing = 0, []
    for line in shown.splitlines():
        want = _plain(line)
        if not want or want == ELLIPSIS:
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in want.split(ELLIPSIS)))
        found = next((k for k in range(position, len(out)) if pattern.fullmatch(out[k])), None)
        if found is None:
            missing.append(line.strip())
        else:
            position = found + 1
    return missing


def ci_commands(root: Path = ROOT) -> set[str]:
    """The commands of .ci/run, in the form a README writes them (`.venv/bin/pip install X` for
    `.venv/bin/python -m pip install --quiet X`)."""
    out = set()
    for line in (root / ".ci" / "run").read_text(encoding="utf-8").splitlines():
        command = line.split(" #", 1)[0].strip()
        if command and not command.startswith("#"):
            out.add(normalised(command))
    return out


def normalised(command: str) -> str:
    command = " ".join(command.split())
    command = command.replace(".venv/bin/python -m pip", ".venv/bin/pip").replace(" --quiet", "")
    return command
