"""Reading user files without surprises: regular files only, every OS and parser failure
as one line naming the file.

A FIFO named cases.jsonl would block a read forever, a directory named gates.yaml is
not "no gates", and a JSON document nested 100,000 deep must not raise RecursionError
from deep inside the parser: each of these is the user's file being wrong, so it gets
the user's kind of error (a JevError subclass chosen by the caller).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from .errors import JevError


def exists(path: Path) -> bool:
    """Whether anything is at `path`: a file, a folder, a FIFO, or a dangling link."""
    return os.path.lexists(path)


def is_regular(path: Path) -> bool:
    """A regular file (following links); False for folders, FIFOs, devices and dangling links."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):
        return False


def read_bytes(path: Path, error: type[JevError], *, fix: str | None = None) -> bytes:
    """The bytes of a regular file, or `error` with one line saying why they cannot be read."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        link = os.path.islink(path)
        raise error("is a dangling link" if link else "is missing", file=path,
                    fix=fix or ("point the link at the file, or replace it with the file" if link else
                                "restore the file")) from None
    except OSError as exc:
        raise error(f"cannot be read ({exc.strerror})", file=path, fix="check the path and its permissions") from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise error(f"is {kind}, not a file", file=path, fix=fix or "replace it with a regular file")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise error(f"cannot be read ({exc.strerror})", file=path, fix="check the file's permissions") from None


def read_text(path: Path, error: type[JevError], *, fix: str | None = None) -> str:
    return decode(read_bytes(path, error, fix=fix), path, error)


def decode(data: bytes, path: Path, error: type[JevError]) -> str:
    """A file's bytes as UTF-8 text, or `error` naming the file and the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=path,
                    fix="save the file as UTF-8") from None


def loads(text: str | bytes) -> Any:
    """json.loads, with a document nested too deeply for the parser as a ValueError like any
    other syntax problem (json raises RecursionError there)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None
