"""One exception family for problems in user data, and how user text is printed safely.

Every error renders as a single line: where (file:line), what is wrong and how
to fix it, e.g.::

    packs/x/cases.jsonl:12: duplicate case id 'x-0003' (first on line 4); give each case a unique id
"""

from __future__ import annotations

import os
from pathlib import Path

_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """`text` with every character a terminal would act on escaped (line breaks, ESC,
    other control and format characters, lone surrogates), so user data printed by us
    can neither break a line nor forge one (a case id "x\\nFAILED y" prints as x\\nFAILED y).
    Printable Unicode (accents, CJK, emoji) is kept."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable():
            out.append(ch)
        elif ch in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[ch])
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)


def node_name_part(text: str) -> str:
    """`text` as it may stand in a pytest node id: printable() with backslashes doubled
    whenever anything is escaped, so two different ids never print the same."""
    if text.isprintable():
        return text
    return printable(text.replace("\\", "\\\\"))


MAX_PROBLEMS = 20  # problems of one file shown in one run; the rest are counted


class JevError(Exception):
    """Base of every error caused by user input (packs, recordings, options).

    A file with several problems raises its first one carrying the others (`more`, up to
    MAX_PROBLEMS in all) and the count of those past the cap (`hidden`): `lines()` gives
    every one, `one_line()` the first with that count, so one run reports them all."""

    refusal = False  # a rule of the protocol refused the input (exit 1), rather than a usage error (exit 2)

    def __init__(self, what: str, *, file: str | Path | None = None, line: int | None = None,
                 fix: str | None = None) -> None:
        self.what = what
        self.file = str(file) if file is not None else None
        self.line = line
        self.fix = fix
        self.more: tuple[JevError, ...] = ()
        self.hidden = 0
        super().__init__(self.one_line())

    def also(self, more: list[JevError], hidden: int) -> JevError:
        """This error with the further problems found beside it."""
        self.more, self.hidden = tuple(more), hidden
        self.args = (self.one_line(),)
        return self

    @property
    def count(self) -> int:
        """How many problems this error reports: itself, those it carries and those past the cap."""
        return 1 + len(self.more) + self.hidden

    def lines(self) -> list[str]:
        """One line per problem, then how many more were found past the cap."""
        lines = [self._line(), *(error._line() for error in self.more)]
        if self.hidden:
            lines.append(f"... and {self.hidden} more problem{'s' if self.hidden > 1 else ''} "
                         f"(the first {len(lines)} are shown)")
        return lines

    @property
    def where(self) -> str:
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file

    def one_line(self) -> str:
        others = self.count - 1
        tail = f" (and {others} more problem{'s' if others > 1 else ''})" if others else ""
        return self._line() + tail

    def _line(self) -> str:
        text = f"{self.where}: {self.what}" if self.where else self.what
        if self.fix:
            text += f"; {self.fix}"
        return printable(" ".join(text.split()))  # never more than one line, nothing a terminal acts on

    def headline(self) -> str:
        """What is wrong first, the file's name and line after it: what a line cut to the width of
        a terminal (pytest's short summary) keeps, e.g. `duplicate case id 'x-0003' (first on
        line 4) (cases.jsonl:12)`."""
        place = os.path.basename(self.file.rstrip("/\\")) if self.file else ""
        if place and self.line:
            place += f":{self.line}"
        text = f"{self.what} ({place})" if place else self.what
        others = self.count - 1
        if others:
            text += f" (and {others} more problem{'s' if others > 1 else ''} below)"
        return printable(" ".join(text.split()))


class Problems:
    """The problems of a file (or of a pack's files) gathered in one pass: each is added as
    it is found, up to MAX_PROBLEMS kept and the rest counted; `check()` raises the first,
    carrying the others, when there is any."""

    def __init__(self, cap: int = MAX_PROBLEMS) -> None:
        self.cap = cap
        self.found: list[JevError] = []
        self.total = 0

    def add(self, error: JevError) -> None:
        for one in (error, *error.more):
            self.total += 1
            if len(self.found) < self.cap:
                self.found.append(one)
        self.total += error.hidden
        error.more, error.hidden = (), 0

    def __bool__(self) -> bool:
        return self.total > 0

    def check(self) -> None:
        if self.found:
            first, *rest = self.found
            raise first.also(rest, self.total - len(self.found))


class PackError(JevError):
    """pack.yaml, cases.jsonl or gates.yaml does not follow SPEC.md."""


class RecordingError(JevError):
    """A recording file cannot be read or does not match its pack."""


class RecordingNotFound(RecordingError):
    """No recording exists for a pack in replay mode."""


class OptionError(JevError):
    """A --jev-* option or its ini twin has a bad value."""
