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


class JevError(Exception):
    """Base of every error caused by user input (packs, recordings, options)."""

    refusal = False  # a rule of the protocol refused the input (exit 1), rather than a usage error (exit 2)

    def __init__(self, what: str, *, file: str | Path | None = None, line: int | None = None,
                 fix: str | None = None) -> None:
        self.what = what
        self.file = str(file) if file is not None else None
        self.line = line
        self.fix = fix
        super().__init__(self.one_line())

    @property
    def where(self) -> str:
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file

    def one_line(self) -> str:
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
        return printable(" ".join(text.split()))


class PackError(JevError):
    """pack.yaml, cases.jsonl or gates.yaml does not follow SPEC.md."""


class RecordingError(JevError):
    """A recording file cannot be read or does not match its pack."""


class RecordingNotFound(RecordingError):
    """No recording exists for a pack in replay mode."""


class OptionError(JevError):
    """A --jev-* option or its ini twin has a bad value."""
