"""One exception family for problems in user data.

Every error renders as a single line: where (file:line), what is wrong and how
to fix it, e.g.::

    packs/x/cases.jsonl:12: duplicate case id 'x-0003' (first on line 4); give each case a unique id
"""

from __future__ import annotations

from pathlib import Path


class JevError(Exception):
    """Base of every error caused by user input (packs, recordings, options)."""

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
        return " ".join(text.split())  # never more than one line


class PackError(JevError):
    """pack.yaml, cases.jsonl or gates.yaml does not follow SPEC.md."""


class RecordingError(JevError):
    """A recording file cannot be read or does not match its pack."""


class RecordingNotFound(RecordingError):
    """No recording exists for a pack in replay mode."""


class OptionError(JevError):
    """A --jev-* option or its ini twin has a bad value."""
