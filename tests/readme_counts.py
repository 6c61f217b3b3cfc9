"""Recount the count tables of a pack README from the pack's cases.

A pack README states its label distribution in Markdown tables; the tables are written by hand
and rot when a label changes (moderation 0.1.1 relabelled md-0488 and left its action x severity
table one off). This module reads every table of a regular shape, recounts it from the cases and
names each cell that disagrees. The shapes it knows:

- label distribution: a header `question | label | count ...`, one row per label, the question cell
  blank on a continuation row; the count is `N` or `N (x%)`, an optional share column `x%` or `x`;
- cross table of two questions: a first header cell `a \\ b`, or `a` with the labels of `b` (bare or
  as `b label`) as the other header cells; a zero is written `–`, `-` or `0`;
- split files (spec 1): `split | file | cases ...`, cases `N` or `N (a vi + b en)`;
- per split and locale (spec 1): a first header cell naming a question (`` `category` ``) or `tag`,
  then columns `<split> <locale>` and `all` (a `gold` column is the tag's one gold label); cells
  `N` or `N (x%)`, with a `**cases**` row for the column sizes.

Counts are recomputed, shares too (as many decimals as written; a share is of the question's
cases, or of the column's in a split table). A table of no known shape is left alone; `check()`
says which ones were checked, so a test can insist that each pack has some.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pytest_jev.packs.model import Case, Pack

ZERO = {"–", "-", "—", "0", ""}
COUNT = re.compile(r"^(\d+)(?:\s*\((\d+(?:\.\d+)?)%\))?$")
SHARE = re.compile(r"^(\d+(?:\.\d+)?)%?$")


@dataclass(frozen=True)
class Table:
    line: int  # 1-based line of the header in README.md
    header: tuple[str, ...]
    rows: tuple[tuple[int, tuple[str, ...]], ...]  # (line, cells)


def tables(text: str) -> Iterator[Table]:
    """Every Markdown table of the text: header, then rows (the `|---|` line skipped)."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|\s*$", lines[i + 1]):
            header = _cells(lines[i])
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append((j + 1, _cells(lines[j])))
                j += 1
            yield Table(i + 1, header, tuple(rows))
            i = j
        else:
            i += 1


def _cells(line: str) -> tuple[str, ...]:
    inner = line.strip()
    inner = inner[1:-1] if inner.endswith("|") else inner[1:]
    return tuple(cell.strip() for cell in re.split(r"(?<!\\)\|", inner))


def _bare(cell: str) -> str:
    return cell.replace("`", "").replace("*", "").strip()


def _label(case: Case, qid: str) -> str:
    value = case.expect[qid]
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _share_ok(written: str, count: int, total: int) -> bool:
    decimals = len(written.split(".")[1]) if "." in written else 0
    return total > 0 and f"{100 * count / total:.{decimals}f}" == written


def check(pack: Pack, text: str) -> tuple[list[str], list[int]]:
    """(disagreements, header lines of the tables checked) for one README text."""
    problems: list[str] = []
    checked: list[int] = []
    for table in tables(text):
        for kind in (_distribution, _cross, _per_split, _split_files):
            found = kind(pack, table)
            if found is not None:
                checked.append(table.line)
                problems.extend(f"README.md:{line}: {what}" for line, what in found)
                break
    return problems, checked


Found = list[tuple[int, str]]


def _distribution(pack: Pack, table: Table) -> Found | None:
    head = [_bare(c).lower() for c in table.header]
    if len(head) < 3 or head[0] != "question" or head[1] != "label":
        return None
    total = len(pack.cases)
    found: Found = []
    qid = ""
    for line, cells in table.rows:
        qid = _bare(cells[0]) or qid
        if qid not in pack.questions:
            return None
        label = _bare(cells[1])
        if label not in pack.questions[qid].labels:
            found.append((line, f"{qid}: '{label}' is not a label of the question"))
            continue
        count = sum(1 for case in pack.cases if _label(case, qid) == label)
        match = COUNT.match(cells[2])
        if match is None:
            return None
        if int(match.group(1)) != count:
            found.append((line, f"{qid} {label}: {match.group(1)} written, {count} in the cases"))
        column = SHARE.match(cells[3]) if len(cells) > 3 else None
        share = match.group(2) or (column.group(1) if column else None)
        if share is not None and not _share_ok(share, count, total):
            found.append((line, f"{qid} {label}: share {share}% written, {100 * count / total:.2f}% in the cases"))
    return found


def _cross(pack: Pack, table: Table) -> Found | None:
    first = _bare(table.header[0])
    if "\\" in first:
        row_q, col_q = (part.strip() for part in first.split("\\", 1))
        columns = [_bare(c) for c in table.header[1:]]
    elif first in pack.questions:
        row_q = first
        others = [q for q in pack.questions if q != row_q]
        col_q, columns = "", []
        for other in others:
            names = [_bare(c).removeprefix(f"{other} ").strip() for c in table.header[1:]]
            if names and all(name in pack.questions[other].labels for name in names):
                col_q, columns = other, names
        if not col_q:
            return None
    else:
        return None
    if row_q not in pack.questions or col_q not in pack.questions:
        return None
    counts = Counter((_label(case, row_q), _label(case, col_q)) for case in pack.cases)
    found: Found = []
    seen = set()
    for line, cells in table.rows:
        row = _bare(cells[0])
        if row not in pack.questions[row_q].labels:
            return None
        seen.add(row)
        for column, cell in zip(columns, cells[1:]):
            written = 0 if cell in ZERO else int(cell) if cell.isdigit() else None
            if written is None:
                return None
            if written != counts[(row, column)]:
                found.append((line, f"{row_q} {row} x {col_q} {column}: {cell} written, "
                                    f"{counts[(row, column)]} in the cases"))
    missing = {row for row, _ in counts} - seen
    found.extend((table.line, f"{row_q} {row}: no row, {sum(n for (r, _), n in counts.items() if r == row)} cases")
                 for row in sorted(missing))
    return found


def _per_split(pack: Pack, table: Table) -> Found | None:
    if not pack.declares_splits:
        return None
    first = _bare(table.header[0])
    by_tag = first == "tag"
    if not by_tag and first not in pack.questions:
        return None
    columns: list[tuple[str, str | None]] = []  # (split or "all", locale or None)
    gold_column = False
    for cell in table.header[1:]:
        name = _bare(cell)
        if name == "gold" and by_tag:
            gold_column = True
            continue
        if name == "all":
            columns.append(("all", None))
            continue
        parts = name.split()
        if len(parts) != 2 or parts[0] not in pack.splits or parts[1] not in pack.locales:
            return None
        columns.append((parts[0], parts[1]))
    groups: list[Sequence[Case]] = [
        pack.cases if split == "all" else
        [c for c in pack.splits[split].cases if c.locale == locale] for split, locale in columns]
    found: Found = []
    for line, cells in table.rows:
        row = _bare(cells[0])
        values = list(cells[1:])
        if gold_column:
            gold, values = _bare(values[0]), values[1:]
        if by_tag and row != "cases" and gold_column:
            golds = {_label(c, q) for c in pack.cases if row in c.tags for q in pack.questions}
            if golds != {gold}:
                found.append((line, f"tag {row}: gold {gold} written, {sorted(golds)} in the cases"))
        if not (row == "cases" or by_tag or row in pack.questions[first].labels):
            return None
        for (split, locale), cases, cell in zip(columns, groups, values):
            match = COUNT.match(cell)
            if match is None:
                return None
            count = sum(1 for case in cases if _member(case, row, by_tag, first))
            where = "all" if split == "all" else f"{split} {locale}"
            if int(match.group(1)) != count:
                found.append((line, f"{row} in {where}: {match.group(1)} written, {count} in the cases"))
            if match.group(2) is not None and not _share_ok(match.group(2), count, len(cases)):
                found.append((line, f"{row} in {where}: share {match.group(2)}% written, "
                                    f"{100 * count / len(cases):.1f}% in the cases"))
    return found


def _member(case: Case, row: str, by_tag: bool, qid: str) -> bool:
    """Whether a case counts in a row of a split table: every case, a tag's, or a label's."""
    if row == "cases":
        return True
    return row in case.tags if by_tag else _label(case, qid) == row


def _split_files(pack: Pack, table: Table) -> Found | None:
    head = [_bare(c).lower() for c in table.header]
    if not pack.declares_splits or head[:3] != ["split", "file", "cases"]:
        return None
    found: Found = []
    for line, cells in table.rows:
        name, file = _bare(cells[0]), _bare(cells[1])
        split = pack.splits.get(name)
        if split is None or split.file.name != file:
            found.append((line, f"split {name} ({file}) is not a split of pack.yaml"))
            continue
        match = re.match(r"^(\d+)(?:\s*\((.*)\))?$", cells[2])
        if match is None:
            return None
        if int(match.group(1)) != len(split.cases):
            found.append((line, f"split {name}: {match.group(1)} cases written, {len(split.cases)} in {file}"))
        for part in (match.group(2) or "").split("+") if match.group(2) else ():
            count, locale = part.split()
            have = sum(1 for case in split.cases if case.locale == locale)
            if int(count) != have:
                found.append((line, f"split {name}: {count} {locale} written, {have} in {file}"))
    names = {_bare(cells[0]) for _, cells in table.rows}
    found.extend((table.line, f"split {name}: no row") for name in pack.splits if name not in names)
    return found
