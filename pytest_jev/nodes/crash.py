"""A pack item's failure report with its headline as pytest's crash message.

A pack item fails with plain lines: a headline (what is wrong), then where and how to fix it
(items.JevItem.repr_failure). pytest shows a report's crash message in its short summary cut
to the terminal's width, but whole on CI (the CI variable set) and with -vv, in `--tb=line`,
and as JUnit's `<failure message=...>`; a report that is plain text has its whole text as that
message, so every problem line would be repeated there. FailureText keeps the text and names
its first line, the headline, as the crash message. pytest-xdist carries a report's text from a
worker as plain text, so the controller wraps it again (plugin.pytest_runtest_logreport).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .items import LOCATION


@dataclass(frozen=True)
class CrashLine:
    """What pytest reads of a report's `reprcrash`: where, and the one-line message."""

    path: str
    lineno: int
    message: str

    def __str__(self) -> str:  # `--tb=line` prints str(reprcrash)
        return f"{self.path}:{self.lineno}: {self.message}"


class FailureText:
    """A failed pack item's report text (pytest reads it through `toterminal` and `reprcrash`)."""

    def __init__(self, text: str, where: str, line: int) -> None:
        self.text = text
        lines = text.splitlines()
        place = next((m for m in map(LOCATION.match, lines) if m is not None), None)
        if place is not None:  # the first problem's file and line, else the item's
            where, line = place["file"], int(place["line"] or 1)
        self.reprcrash = CrashLine(where, line, lines[0] if lines else "")

    def toterminal(self, tw: Any) -> None:
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:  # JUnit's failure body; xdist sends this to the controller
        return self.text
