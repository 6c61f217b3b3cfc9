"""What a recording run would do, worked out without calling anything: the requests of the chosen
cases (choice options shuffled per case under --jev-shuffle-options), their fingerprints, and
which recorded or journaled lines are kept. Both the run and --jev-dry-run read this plan, so
an estimate counts exactly the calls a run makes.

A line is kept (not asked again) when it is usable: no error, answers that honour the answer
contract, recorded for this very request (its fingerprint). Modes (modes.py): `new_episodes`
keeps every usable line; `all` keeps only journaled ones (of an interrupted run of its own);
`once` calls nothing once a recording exists (else it records as `new_episodes`); `none` calls
nothing.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..contract import AnswerSpec, answers_problems, specs_of
from ..errors import OptionError, RecordingError
from ..fileio import is_regular
from ..formats.recording_line import RecordingLine
from ..packs.model import Case, Pack
from ..wire import Request, fingerprints
from .journal import peek_journal, read_recording
from .modes import BARE, RecordMode


@dataclass(frozen=True)
class Plan:
    """What a recording run would do, worked out without calling anything."""

    requests: list[Request]  # the chosen cases' requests, in pack order
    fingerprints: dict[str, str]  # case id -> request fingerprint
    keep: dict[str, RecordingLine]  # chosen cases whose recorded or journaled line is kept
    existing: dict[str, RecordingLine]  # the recording as it is (case id -> line)
    order: list[str]  # its case ids in file order
    calls: bool = True  # False: the mode calls nothing (none; once where a recording exists)

    @property
    def todo(self) -> list[Request]:
        if not self.calls:
            return []
        return [req for req in self.requests if req.case_id not in self.keep]


def build_requests(pack: Pack, model: str, shuffle_seed: int | None = None,
                   cases: Sequence[Case] | None = None) -> list[Request]:
    """One Request per case in pack order; choice options permuted per case when shuffle_seed is set.

    The permutation is seeded with (shuffle_seed, case id) rather than one stream over the pack,
    so a case's request, and hence its fingerprint, does not change when other cases are added.
    """
    sent = pack.questions_as_sent()
    out = []
    for case in pack.cases if cases is None else cases:
        questions, order = sent, None
        if shuffle_seed is not None:
            rng = random.Random(f"{shuffle_seed}:{case.id}")
            questions = {qid: _shuffled(q, rng) for qid, q in sent.items()}
            order = {qid: list(q["criteria"]) for qid, q in questions.items() if q["type"] == "choice"}
        out.append(Request(case.id, dict(case.state), questions, model, option_order=order))
    return out


def _shuffled(question: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    if question["type"] != "choice":  # score levels are ordered: never permuted
        return question
    items = list(question["criteria"].items())
    rng.shuffle(items)
    return {**question, "criteria": dict(items)}


T = TypeVar("T")


def per_questions(cache: dict[int, tuple[Any, T]], questions: Any, make: Callable[[Any], T]) -> T:
    """`make(questions)`, computed once per questions object. The cache holds the object itself
    beside the value: a dict freed while keyed by its id() could lend that id to another one."""
    hit = cache.get(id(questions))
    if hit is not None and hit[0] is questions:
        return hit[1]
    value = make(questions)
    cache[id(questions)] = (questions, value)
    return value


def usable(line: RecordingLine | None, fingerprint: str, specs: Mapping[str, AnswerSpec], *,
           strict: bool) -> bool:
    """A line worth keeping: no error, answers that honour the contract, recorded for this
    very request. strict=False accepts a line without a fingerprint (a jevassert recording
    we cannot check); a fingerprint that is not a string is corrupt, and asked again."""
    answers = line.answers if line is not None and not line.error else None
    if line is None or answers is None:
        return False
    recorded = line.get("request_fingerprint")  # as written: a corrupted one (not a string) is never trusted
    if not (recorded == fingerprint or (not strict and recorded is None)):
        return False
    return not answers_problems(specs, answers)


def plan(pack: Pack, backend_name: str, out_path: Path, *, mode: str = BARE, model: str | None = None,
         shuffle_seed: int | None = None, cases: Sequence[Case] | None = None) -> Plan:
    """Which of the chosen cases (default: all) a run would call, and which lines it keeps:
    the one reading both record_pack and --jev-dry-run use, so the estimate counts exactly
    the calls the run makes."""
    mode = check_mode(mode)
    requests = build_requests(pack, model or pack.record_model, shuffle_seed, cases)
    fps = dict(zip((req.case_id for req in requests), fingerprints(requests, backend_name)))
    try:
        existing, order = read_recording(out_path)
    except RecordingError:
        if mode is not RecordMode.ALL or cases is not None:
            raise
        existing, order = {}, []  # re-recording every case replaces a recording that cannot be read
    journaled = peek_journal(out_path)
    keep: dict[str, RecordingLine] = {}
    if mode is RecordMode.NONE or (mode is RecordMode.ONCE and is_regular(out_path)):
        return Plan(requests, fps, {r.case_id: existing[r.case_id] for r in requests if r.case_id in existing},
                    existing, order, calls=False)
    specs: dict[int, tuple[Any, dict[str, AnswerSpec]]] = {}
    for req in requests:
        spec = per_questions(specs, req.questions, specs_of)
        fp = fps[req.case_id]
        if usable(journaled.get(req.case_id), fp, spec, strict=True):
            keep[req.case_id] = journaled[req.case_id]
        elif mode is not RecordMode.ALL and usable(existing.get(req.case_id), fp, spec, strict=False):
            keep[req.case_id] = existing[req.case_id]
    return Plan(requests, fps, keep, existing, order)


def check_mode(mode: str) -> RecordMode:
    """The mode `mode` names; OptionError for another word."""
    try:
        return RecordMode(mode)
    except ValueError:
        raise OptionError(f"unknown record mode '{mode}'",
                          fix=f"use one of: {', '.join(m.value for m in RecordMode)}") from None
