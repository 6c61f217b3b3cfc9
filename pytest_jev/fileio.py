"""Files in and out, without surprises: the one module that reads user files and writes ours.

Reading: regular files only, every OS and parser failure as one line naming the file. A FIFO
named cases.jsonl would block a read forever, a directory named gates.yaml is not "no gates",
and a JSON document nested 100,000 deep must not raise RecursionError from deep inside the
parser: each of these is the user's file being wrong, so it gets the user's kind of error (a
JevError subclass chosen by the caller).

Writing: a file is only ever replaced whole (temp file, fsync, os.replace, fsync of the folder),
so a reader never sees half of one and a kill leaves the old file; a JSON document is written
with sorted keys, two-space indent and a final newline; a JSONL line has every secret of the
environment masked (SECRET_ENV_VARS). Canonical JSON (sorted keys, no spaces) is what every
fingerprint hashes.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .errors import JevError

# Keys that may hold secrets in the environment: any value of theirs found in a line
# is masked before the line is written (belt and braces: backends never put keys in
# an Answer, but a server may echo one back in an error body).
SECRET_ENV_VARS = ("TYPESAFE_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY",
                   "AI_GATEWAY_API_KEY")


def exists(path: Path) -> bool:
    """Whether anything is at `path`: a file, a folder, a FIFO, or a dangling link."""
    return os.path.lexists(path)


def is_regular(path: Path) -> bool:
    """A regular file (following links); False for folders, FIFOs, devices and dangling links."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):
        return False


def read_bytes(path: Path, error: type[JevError], *, fix: str | None = None,
               limit: tuple[int, str] | None = None) -> bytes:
    """The bytes of a regular file, or `error` with one line saying why they cannot be read.
    `limit` (bytes, what the file is): a larger file is refused before a byte is read (a 1 GB
    sparse file costs no disk, but reading and decoding it would take 2 GB of memory)."""
    try:
        info = path.stat()
        mode = info.st_mode
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
    if limit is not None and info.st_size > limit[0]:
        raise error(f"is {megabytes(info.st_size)}, more than the {megabytes(limit[0])} {limit[1]} may be", file=path,
                    fix="split it, or check that it is the file you meant") from None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise error(f"cannot be read ({exc.strerror})", file=path, fix="check the file's permissions") from None


def megabytes(size: int) -> str:
    return f"{size / 2**20:,.0f} MB" if size >= 2**20 else f"{size:,} bytes"


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


class DuplicateKeyError(ValueError):
    """A JSON object names one key twice: json keeps the last value, silently (as YAML would:
    the pack's YAML files refuse it too)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {json.dumps(key, ensure_ascii=False)} in one JSON object "
                         "(JSON keeps the last, silently)")
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return doc


# one C scanner calling a small hook per object: about 1 us a recording line (benchmarks/README.md)
_STRICT = json.JSONDecoder(object_pairs_hook=_unique_keys)


def loads_line(text: str) -> Any:
    """loads() of one line of a cases file or a recording, refusing a key repeated in any of its
    objects (DuplicateKeyError, a ValueError naming the key)."""
    try:
        return _STRICT.decode(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


# -- writing ---------------------------------------------------------------------------------

def canonical_json(value: Any) -> str:
    """Canonical JSON (sorted keys, no spaces, UTF-8 as is): what every fingerprint hashes."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def json_sha256(value: Any) -> str:
    """`sha256:` and the hex sha256 of `value`'s canonical JSON: a state, a question, an identity."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def scrub(text: str) -> str:
    """`text` with the value of every secret variable of the environment masked as ***."""
    for var in SECRET_ENV_VARS:
        secret = os.environ.get(var, "")
        if len(secret) >= 8 and secret in text:
            text = text.replace(secret, "***")
    return text


def encode_line(line: Mapping[str, Any]) -> bytes:
    """One JSONL line (keys in the mapping's order), secrets masked, with its newline."""
    text = json.dumps(line, ensure_ascii=False, separators=(", ", ": "), default=str)
    return (scrub(text) + "\n").encode("utf-8")


def write_all(fd: int, data: bytes) -> None:
    """Write every byte to an O_APPEND descriptor (os.write may write fewer than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def fsync_dir(folder: Path) -> None:
    """fsync a folder, so that a file renamed into it survives a power cut."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms that cannot open folders
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write data beside path, fsync, os.replace over path, fsync the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def write_json(path: Path, doc: Any) -> None:
    """A JSON document written atomically: sorted keys, two-space indent, UTF-8, a final newline."""
    atomic_write(path, (json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))


def write_lines(path: Path, lines: Iterable[Mapping[str, Any] | bytes]) -> None:
    """Atomically write one line per item: a mapping is encoded; bytes are a line encode_line already made."""
    atomic_write(path, b"".join(line if isinstance(line, bytes) else encode_line(line) for line in lines))
