"""The recorder's crash-safe journal, and reading the recording a run continues.

Crash-safety model (kill -9 at any moment):
- every finished case is one ``os.write`` of one complete line to ``<out>.journal.jsonl``
  (O_APPEND). Once ``write`` returns the line survives the death of the process (it is
  in the kernel's page cache); ``fsync`` runs in a worker thread, coalesced, so that the
  line also survives a power cut without stalling the event loop on a slow disk.
- the recording itself is only ever replaced whole: temp file, fsync, ``os.replace``,
  fsync of the folder. The journal is removed after that, so a kill between the two
  leaves a journal whose lines equal the recording's, which the next run just reuses.
- a torn last journal line (killed mid-write on a filesystem without atomic appends)
  is cut off on the next start and its case redone.

Atomic writes, line encoding and secret masking are fileio's.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import RecordingError
from ..fileio import DuplicateKeyError, encode_line, fsync_dir, loads, loads_line, read_bytes, write_all
from ..formats.recording_line import RecordingLine
from ..recording_file import split_recording


def journal_path(out_path: Path) -> Path:
    return out_path.with_name(out_path.name + ".journal.jsonl")


# -- reading -------------------------------------------------------------------------------

def _split(data: bytes) -> tuple[list[bytes], bool]:
    """Complete lines, and whether a torn (newline-less) tail was left out."""
    torn = bool(data) and not data.endswith(b"\n")
    parts = data.split(b"\n")
    return parts[:-1], torn


def read_recording(path: Path) -> tuple[dict[str, RecordingLine], list[str]]:
    """An existing recording, tolerant of a torn last line (that case is simply redone).

    Returns case_id -> line (a later duplicate wins) and the case ids in file order.
    An invalid line in the middle is refused: it is not ours to silently drop.
    """
    if not os.path.lexists(path):
        return {}, []
    data = read_bytes(path, RecordingError)
    lines, _tail = split_recording(path, data)  # lines split as replay splits them
    out: dict[str, RecordingLine] = {}
    order: list[str] = []
    for number, text in enumerate(lines, 1):
        raw = text.strip()
        if not raw:
            continue
        try:
            line = _decode(raw, strict=True)
        except DuplicateKeyError as exc:
            raise RecordingError(str(exc), file=path, line=number,
                                 fix="keep one of them, or re-record everything with mode 'all'") from None
        if line is None:
            raise RecordingError("not a JSON object with a case_id", file=path, line=number,
                                 fix="repair or delete the line, or re-record everything with mode 'all'")
        if line.case_id not in out:
            order.append(line.case_id)
        out[line.case_id] = line
    return out, order  # a torn tail's case is simply missing and gets recorded again


def _decode(raw: bytes | str, strict: bool = False) -> RecordingLine | None:
    """A recording line (a JSON object with a non-empty case_id), else None. `strict`: a key
    repeated in one object raises DuplicateKeyError, as replay refuses it."""
    try:
        doc = loads_line(raw.decode("utf-8") if isinstance(raw, bytes) else raw) if strict else loads(raw)
    except DuplicateKeyError:
        raise
    except ValueError:  # UnicodeDecodeError too
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("case_id"), str) or not doc["case_id"]:
        return None
    return RecordingLine(doc)


# -- the journal ---------------------------------------------------------------------------

class Journal:
    """Append-only, line-atomic, fsynced journal of finished cases; one writer at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None
        self.recovered: dict[str, RecordingLine] = {}
        self.dropped = 0  # torn or invalid lines found on open
        self._dirty = False
        self._syncer: asyncio.Task[None] | None = None

    def open(self) -> dict[str, RecordingLine]:
        """Open (creating) the journal, lock it, cut a torn tail; return the lines it held."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            _lock(fd, self.path)
            data = _read_all(fd)
            lines, torn = _split(data)
            keep = sum(len(raw) + 1 for raw in lines)
            if torn:
                os.ftruncate(fd, keep)
                os.fsync(fd)
                self.dropped += 1
            for raw in lines:
                line = _decode(raw) if raw.strip() else None
                if line is None:
                    self.dropped += bool(raw.strip())
                    continue
                self.recovered[line.case_id] = line  # a later line for a case wins
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return self.recovered

    def append(self, line: Mapping[str, Any]) -> bytes:
        """One os.write of one whole line: survives kill -9 as soon as this returns.

        Returns the encoded line, so that the final recording can reuse it instead of encoding again.
        """
        assert self.fd is not None
        data = encode_line(line)
        write_all(self.fd, data)
        self._dirty = True
        if self._syncer is None or self._syncer.done():
            self._syncer = asyncio.get_running_loop().create_task(self._sync())
        return data

    async def _sync(self) -> None:
        # Group commit: while one fsync runs, later lines pile up and share the next one.
        while self._dirty and self.fd is not None:
            self._dirty = False
            await asyncio.to_thread(os.fsync, self.fd)

    async def close(self) -> None:
        if self._syncer is not None:
            await asyncio.shield(self._syncer)
        if self.fd is not None:
            os.fsync(self.fd)
            os.close(self.fd)
            self.fd = None

    def remove(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        fsync_dir(self.path.parent)


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _lock(fd: int, path: Path) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory lock, single writer assumed
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RecordingError("another recording run is writing this journal", file=path,
                             fix="wait for it to finish (or stop it) before recording again") from None


def peek_journal(out_path: Path) -> dict[str, RecordingLine]:
    """The finished cases a journal holds, read without taking its lock or repairing it
    (for --jev-dry-run: what a run would reuse)."""
    path = journal_path(out_path)
    if not os.path.lexists(path):
        return {}
    lines, _torn = _split(read_bytes(path, RecordingError))
    out: dict[str, RecordingLine] = {}
    for raw in lines:
        line = _decode(raw) if raw.strip() else None
        if line is not None:
            out[line.case_id] = line
    return out
