"""Pack YAML, read once and defensively: data plus the line of every key.

pack.yaml and gates.yaml are small, plain documents, so what YAML allows beyond that is
refused with one line naming the file and line:

- aliases (`*name`): nine nested anchors expand to 10**9 nodes (an "alias bomb");
- duplicate keys: YAML keeps the last, so `min_accuracy: 0.99` then `min_accuracy: 0.01`
  would silently loosen a gate;
- nesting deeper than MAX_DEPTH (no pack key is deeper than 5);
- numbers that are not finite (.nan, .inf) or too large for a float, and integers longer
  than Python converts (a 5000-digit number).

It is parsed once, with libyaml's C parser when PyYAML has it (a 50 MB file: 0.5 s,
against 25 s for two passes of the pure-Python loader).

Two things YAML does quietly are told apart for the messages: a plain word it reads as
something other than text (YAML 1.1 reads `yes`, `no`, `on`, `off` as booleans, `~` as null,
`1.0` as a number), so a "True is not of type 'string'" can say which word to quote; and a
syntax error found one line after its cause (a key without its colon is noticed on the next
line), reported where the construct that was left open starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import PackError
from ..fileio import read_text
from ..numbers import finite

MAX_DEPTH = 32
PLAIN_TAGS = {"tag:yaml.org,2002:bool": "the boolean", "tag:yaml.org,2002:null": "null",
              "tag:yaml.org,2002:int": "the number", "tag:yaml.org,2002:float": "the number"}
# a syntax error noticed past its cause: report where this construct started (context_mark)
OPENED_AT = {"while scanning a simple key": "for the key that starts on this line",
             "while scanning a quoted scalar": "for the quoted text that starts on this line",
             "while parsing a flow sequence": "for the [ opened on this line",
             "while parsing a flow mapping": "for the { opened on this line"}


class Lines(dict[tuple[Any, ...], int]):
    """The line of every mapping key and sequence item by path; `plain` keeps each plain word
    YAML read as something other than text: (path of the mapping or of the value, the word, its
    line, what YAML made of it, whether it is a key)."""

    def __init__(self) -> None:
        super().__init__()
        self.plain: list[tuple[tuple[Any, ...], str, int, str, bool]] = []

    def unquoted(self, path: tuple[Any, ...], instance: Any) -> tuple[str, int, str, bool] | None:
        """The plain word at `path` (a value, or a key of the mapping there) YAML read as
        `instance`: (word, line, what YAML read it as, is a key); None when there is none."""
        for where, word, line, kind, is_key in self.plain:
            if where == path and _reads_as(word, kind, instance):
                return word, line, kind, is_key
        return None


def _reads_as(word: str, kind: str, instance: Any) -> bool:
    if kind == "the boolean":
        return isinstance(instance, bool) and yaml_key(word) == str(instance).lower()
    if kind == "null":
        return instance is None
    return not isinstance(instance, bool) and isinstance(instance, (int, float))


def _loader_class() -> Any:
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _key_without_colon(lines: list[str], problem_line: int) -> int | None:
    """The line of a key written without its colon, when YAML noticed it on the next line: a
    colon YAML cannot take on `problem_line` after a less indented line with no colon at all (YAML
    read that word and the next line as one text)."""
    indent = len(lines[problem_line - 1]) - len(lines[problem_line - 1].lstrip())
    for number in range(problem_line - 1, 0, -1):
        text = lines[number - 1]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if len(text) - len(text.lstrip()) < indent and ":" not in text and not text.lstrip().startswith("-"):
            return number
        return None
    return None


def read_yaml(file: Path) -> tuple[Any, Lines]:
    """Parse a YAML file; also return the line of every mapping key and sequence item by path."""
    return parse_yaml(read_text(file, PackError), file)


def parse_yaml(text: str, file: Path) -> tuple[Any, Lines]:
    """read_yaml() of a file's text, already read."""
    import yaml

    loader = _loader_class()(text)
    try:
        node = loader.get_single_node()
        lines = Lines()
        if node is not None:
            _index(node, file, lines)
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        source = text.splitlines()
        context = getattr(exc, "context", None)
        opened = getattr(exc, "context_mark", None) if context in OPENED_AT else None
        mark = opened or getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line = mark.line + 1 if mark else None
        if opened is not None:
            problem += f" {OPENED_AT.get(str(context), '')}"
        elif line is not None and problem.startswith("mapping values are not allowed"):
            keyless = _key_without_colon(source, line)
            if keyless is not None:
                line, problem = keyless, f"a key without its colon ({problem}, noticed on line {line})"
        fix = "fix the syntax (check indentation and quoting)"
        bad_line = source[line - 1] if line is not None and 0 < line <= len(source) else ""
        if "\t" in bad_line[:len(bad_line) - len(bad_line.lstrip())] or (mark and bad_line[mark.column:][:1] == "\t"):
            problem, fix = f"a tab indents this line ({problem})", "indent with spaces: YAML does not allow tabs there"
        raise PackError(f"invalid YAML: {problem}", file=file, line=line, fix=fix) from None
    except RecursionError:
        raise PackError("invalid YAML: nested too deeply", file=file, fix="flatten the document") from None
    except ValueError as exc:  # int() of a number longer than Python converts
        raise PackError(f"invalid YAML: {str(exc).splitlines()[0][:120]}", file=file,
                        fix="write numbers with at most a few digits") from None
    finally:
        loader.dispose()
    _check_numbers(data, file, lines)
    return data, lines


def _index(root: Any, file: Path, out: Lines) -> None:
    """Walk the node graph once, iteratively: record lines, refuse aliases, duplicate keys and
    excessive depth. An alias is a node reached a second time (the composer shares it)."""
    import yaml

    seen: set[int] = set()
    stack: list[tuple[Any, tuple[Any, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        line = node.start_mark.line + 1
        if id(node) in seen:
            raise PackError("YAML aliases (*name) are not allowed in pack files", file=file, line=line,
                            fix="write the value out instead of referring to an anchor")
        seen.add(id(node))
        if len(path) > MAX_DEPTH:
            raise PackError(f"nested more than {MAX_DEPTH} levels deep", file=file, line=line,
                            fix="a pack file is a few levels deep at most; flatten it")
        out.setdefault(path, line)
        if isinstance(node, yaml.MappingNode):
            keys: dict[str, int] = {}
            for key, value in node.value:
                name = yaml_key(key.value) if isinstance(key, yaml.ScalarNode) else f"<{type(key).__name__}>"
                key_line = key.start_mark.line + 1
                if name in keys:
                    raise PackError(f"duplicate key '{name}' (first on line {keys[name]})", file=file,
                                    line=key_line, fix="keep one; YAML would silently use the last")
                keys[name] = key_line
                key_path = (*path, name)
                out[key_path] = key_line
                _plain(out, path, key, key_line, is_key=True)
                stack.append((value, key_path))
                if not isinstance(key, yaml.ScalarNode):
                    stack.append((key, key_path))
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                stack.append((value, (*path, i)))
        else:
            _plain(out, path, node, line, is_key=False)


def _plain(out: Lines, path: tuple[Any, ...], node: Any, line: int, *, is_key: bool) -> None:
    """Note a plain scalar YAML reads as a boolean, null or a number (`yes`, `~`, `1.0`)."""
    kind = PLAIN_TAGS.get(getattr(node, "tag", ""))
    if kind is not None and not getattr(node, "style", None) and isinstance(node.value, str):
        out.plain.append((path, node.value, line, kind, is_key))


def yaml_key(value: str) -> str:
    """A key as the loader uses it: YAML 1.1's boolean words read as the labels true/false."""
    low = value.lower()
    return "true" if low in ("true", "yes", "on") else "false" if low in ("false", "no", "off") else value


def _check_numbers(data: Any, file: Path, lines: Lines) -> None:
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, (*path, yaml_key(str(k)) if isinstance(k, str) else k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and finite(value) is None:
            where = ".".join(str(p) for p in path)
            raise PackError(f"{where}: {str(value)[:20]} is not a finite number", file=file,
                            line=line_of(lines, path), fix="write a plain number such as 0.85")


def line_of(lines: Mapping[tuple[Any, ...], int], path: tuple[Any, ...]) -> int | None:
    while path and path not in lines:
        path = path[:-1]
    return lines.get(path)
