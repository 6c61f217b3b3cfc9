"""Label audits: a seeded blind sample of a pack for an independent annotator, and Cohen's
kappa per question between the gold labels and the annotator's.

The annotator gets the states of the sampled cases and pack.yaml, never the gold labels;
each disagreement is then resolved by a relabel or a clearer definition (logged in the
pack's CHANGELOG.md), and the kappa goes in the pack's README.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import JevError
from ..fileio import atomic_write, loads, read_text
from ..formats.audit_line import BlindLine, LabelsLine
from ..packs.model import Case, Pack


def sample(cases: Sequence[Case], fraction: float, seed: int,
           exclude: Collection[str] = frozenset()) -> list[Case]:
    """A seeded random sample of at least `fraction` of the cases (rounded up), in file order.

    With `exclude` (case ids, e.g. an earlier round's sample) the draw is over the other
    cases, in file order, and keeps its size: `fraction` of the WHOLE pack, so a second
    round is as large as the first and shares no case with it."""
    if not 0 < fraction <= 1:
        raise JevError(f"fraction {fraction} is not in (0, 1]", fix="pass --fraction 0.2 for a 20% sample")
    k = max(1, -(-round(fraction * len(cases) * 1000) // 1000))
    rest = [case for case in cases if case.id not in exclude]
    if not rest:
        raise JevError(f"every one of the {len(cases)} cases is excluded, none is left to sample",
                       fix="exclude fewer files")
    chosen = set(random.Random(seed).sample(range(len(rest)), min(k, len(rest))))
    return [case for i, case in enumerate(rest) if i in chosen]


def read_ids(path: Path, known: Collection[str]) -> set[str]:
    """The case ids of a labels.jsonl or blind.jsonl (one {"id": ...} per line), every one
    a case of the pack (`known`)."""
    out: set[str] = set()
    for number, doc in _json_lines(path):
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
            raise JevError('each line is {"id": ..., ...}', file=path, line=number,
                           fix="pass a labels.jsonl or blind.jsonl of an earlier audit")
        if doc["id"] not in known:
            raise JevError(f"case id {doc['id']!r} is not a case of this pack", file=path, line=number,
                           fix="exclude a file made for this pack")
        out.add(doc["id"])
    return out


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) of each non-blank line; a line that is not JSON stops with
    file:line."""
    for number, line in enumerate(read_text(path, JevError).splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = loads(line)
        except ValueError as exc:
            raise JevError(f"not valid JSON ({exc})", file=path, line=number) from None
        yield number, doc


def write_blind(pack: Pack, cases: Sequence[Case], out: Path) -> Path:
    """The annotator's folder: pack.yaml as it is, and blind.jsonl with id and state only."""
    atomic_write(out / "pack.yaml", pack.pack_file.read_bytes())
    lines = [BlindLine(case.id, case.state).dumps() for case in cases]
    atomic_write(out / "blind.jsonl", ("\n".join(lines) + "\n").encode("utf-8"))
    return out


@dataclass(frozen=True)
class Agreement:
    question: str
    n: int
    agree: int
    kappa: float
    disagreements: tuple[tuple[str, Any, Any], ...]  # (case id, gold, annotator)

    @property
    def observed(self) -> float:
        return self.agree / self.n if self.n else 0.0


def cohen_kappa(first: Sequence[Any], second: Sequence[Any]) -> float:
    """Cohen's kappa of two label sequences: (p_o - p_e) / (1 - p_e); 1.0 when both always
    give the same single label, 0.0 when chance agreement is already certain otherwise."""
    n = len(first)
    if n == 0 or n != len(second):
        raise ValueError("kappa needs two label lists of the same non-zero length")
    observed = sum(1 for a, b in zip(first, second) if a == b) / n
    counts_a, counts_b = Counter(map(_key, first)), Counter(map(_key, second))
    expected = sum(counts_a[label] * counts_b[label] for label in counts_a) / (n * n)
    if expected == 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return (observed - expected) / (1 - expected)


def _key(label: Any) -> str:
    return json.dumps(label)


def read_labels(path: Path) -> dict[str, Mapping[str, Any]]:
    """The annotator's file: one {"id": ..., "labels": {question: label}} per line."""
    out: dict[str, Mapping[str, Any]] = {}
    for number, doc in _json_lines(path):
        labelled = LabelsLine.from_json(doc) if isinstance(doc, dict) else None
        if labelled is None:
            raise JevError('each line is {"id": ..., "labels": {...}}', file=path, line=number)
        out[labelled.id] = labelled.labels
    return out


def agreement(pack: Pack, labels: Mapping[str, Mapping[str, Any]]) -> list[Agreement]:
    """Per question: how often the annotator gave the gold label, and Cohen's kappa."""
    by_id = {case.id: case for case in pack.cases}
    unknown = [cid for cid in labels if cid not in by_id]
    if unknown:
        raise JevError(f"labels for cases the pack lacks: {unknown[:5]}")
    out = []
    for qid in pack.questions:
        pairs = [(cid, by_id[cid].expect[qid], given[qid]) for cid, given in labels.items() if qid in given]
        if not pairs:
            continue
        gold, other = [p[1] for p in pairs], [p[2] for p in pairs]
        out.append(Agreement(qid, len(pairs), sum(g == o for g, o in zip(gold, other)),
                             cohen_kappa(gold, other), tuple(p for p in pairs if p[1] != p[2])))
    return out


def report_lines(pack: Pack, found: Sequence[Agreement]) -> list[str]:
    lines = [f"audit of {pack.id} v{pack.version}:"]
    for a in found:
        lines.append(f"  {a.question}: n={a.n}, agreement {a.observed:.3f}, Cohen's kappa {a.kappa:.3f}, "
                     f"{len(a.disagreements)} disagreements")
    for a in found:
        for cid, gold, given in a.disagreements:
            lines.append(f"  {cid} {a.question}: gold {json.dumps(gold)}, annotator {json.dumps(given)}")
    return lines
