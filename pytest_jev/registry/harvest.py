"""`jev-packs harvest PACK`: the cases where backends disagree, as a review file for label fixes.

For a pack recorded by two or more backends, a row is written per (case, question) where

- at least two backends decided different labels (`split`), or
- every backend that decided (two at least) decided the same label and it is not the gold
  (`all-wrong`): the prime label-error suspects, ranked by the mean probability of the
  agreed label, highest first.

Answers are decided exactly as grading decides them (`grade.decide`). A case whose line has
an error (or null answers) counts as `error` for that backend, an answer grading cannot
read as `unusable`; neither is a decision. Rows where every decision equals the gold are
not written. A mock backend (backend.json says `mock`) is an oracle built from the gold
labels, so it says nothing about label quality and is left out unless --include-mock (or
named with --backend).

Two files go to the output folder, both rewritten atomically and byte-identical on a rerun
(no timestamps, no absolute paths, fixed key order): `<pack>.harvest.md` (a header with the
counts, then per question a table of all-wrong rows and one of splits) and
`<pack>.harvest.jsonl` (every row, all-wrong first). Refusals (fewer than two backends, a
recording of another pack) exit 1 like `jev-packs merge`; unreadable files exit 2.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backends.catalog import Catalog
from ..errors import JevError, printable
from ..evaluate import integrity_problems
from ..fileio import atomic_write, is_regular
from ..formats.backend_json import folder_identity, folder_info
from ..formats.harvest_row import HarvestRow, HarvestVote
from ..formats.recording_line import RecordingLine
from ..grade import decide, grade
from ..packs import load_pack
from ..packs.model import Case, Pack, Question
from ..paths import PREDICTIONS_SUFFIX, predictions_in
from ..recording_file import Recording, load_recording
from ..recording_lookup import recorded_by
from ..rubric import check as check_rubric

ALL_WRONG, SPLIT = "all-wrong", "split"
KINDS = (ALL_WRONG, SPLIT)
EXCERPT = 200  # characters of each state field shown per row
DIGITS = 4  # probabilities as written: enough to rank, short enough to read
ERROR, UNUSABLE, DECIDED = "error", "unusable", "decided"


class HarvestError(JevError):
    """The recordings cannot be compared: too few backends, or one belongs to another pack."""

    refusal = True


@dataclass(frozen=True)
class Backend:
    folder: str  # the results folder's name: what a reader finds on disk
    kind: str | None  # backend.json's backend kind
    model: str | None
    recording: Recording
    rubric: str  # ok | drift | unchecked: the wording the recording was made with


@dataclass(frozen=True)
class Vote:
    """One backend's reading of one answer."""

    status: str  # decided | error | unusable
    decision: Any = None
    probability: float | None = None
    top2: tuple[tuple[str, float], ...] = ()  # choice and score: the two most probable labels

    def to_vote(self) -> HarvestVote:
        """The vote as a harvest row holds it (probabilities rounded to DIGITS)."""
        if self.status != DECIDED:
            return HarvestVote(self.status)
        return HarvestVote(DECIDED, self.decision, _number(self.probability),
                           tuple((label, _number(p)) for label, p in self.top2) or None)


@dataclass(frozen=True)
class Row:
    kind: str  # all-wrong | split
    case: Case
    split: str | None  # None: the pack declares no splits
    question: Question
    votes: tuple[Vote, ...]  # in the order of Harvest.backends
    agreed_probability: float | None = None  # all-wrong: mean probability of the agreed label

    def to_line(self, pack: Pack, backends: Sequence[Backend]) -> HarvestRow:
        """The row as a line of <pack>.harvest.jsonl."""
        return HarvestRow(
            kind=self.kind, pack=pack.id, pack_version=pack.version, case_id=self.case.id, split=self.split,
            locale=self.case.locale, tags=self.case.tags, question=self.question.id, type=self.question.type,
            gold=self.case.expect[self.question.id], agreed_probability=_number(self.agreed_probability),
            answers={b.folder: vote.to_vote() for b, vote in zip(backends, self.votes)},
            state=state_excerpt(pack, self.case))


@dataclass(frozen=True)
class Harvest:
    pack: Pack
    backends: tuple[Backend, ...]
    rows: tuple[Row, ...]  # all-wrong (ranked) first, then splits in case order
    kinds: tuple[str, ...]
    excluded_mock: tuple[str, ...] = ()  # mock folders left out (their names)

    def count(self, kind: str, question: str | None = None) -> int:
        return sum(1 for r in self.rows if r.kind == kind and (question is None or r.question.id == question))


# -- finding and reading the recordings -------------------------------------------------------

def backend_folders(results_dir: Path, pack_id: str, names: Sequence[str] = (),
                    include_mock: bool = False) -> tuple[list[Path], list[str]]:
    """(folders to compare, mock folders left out). Without `names`: every folder under
    results_dir holding the pack's recording and a backend.json, mock ones only with
    include_mock. A name picks the folder of that name, or the folders of the backend it names
    as --jev-backend would (`sparrow`, `openai:qwen2.5:7b`, `sonnet`: parsed by the same
    catalog of backend kinds), mock or not: naming it is the choice."""
    folders = sorted(p for p in results_dir.iterdir() if p.is_dir()) if results_dir.is_dir() else []
    recorded = [f for f in folders if is_regular(predictions_in(f, pack_id))]
    if names:
        catalog = Catalog()
        chosen: list[Path] = []
        for name in names:
            spec = catalog.parse(name)
            found = [f for f in recorded if f.name == name] or [f for f in recorded if recorded_by(f, spec)]
            if not found:
                raise JevError(f"no folder '{name}' (nor one whose backend.json names backend '{name}') holds "
                               f"{pack_id}{PREDICTIONS_SUFFIX}", file=results_dir,
                               fix="pass --backend with a folder name under --results-dir")
            chosen.extend(f for f in found if f not in chosen)
        return chosen, []
    with_info = [f for f in recorded if folder_info(f) is not None]
    mock = [f.name for f in with_info if folder_identity(f)[0] == "mock"]
    return [f for f in with_info if include_mock or f.name not in mock], ([] if include_mock else mock)


def load_backends(pack: Pack, folders: Sequence[Path], results_dir: Path) -> tuple[Backend, ...]:
    """Each folder's recording of the pack, refused unless it belongs to the pack (the rules of
    check[recording]) and unless there are two at least."""

    if len(folders) < 2:
        found = ", ".join(f.name for f in folders) or "none"
        raise HarvestError(f"harvest needs recordings of pack '{pack.id}' by two backends at least; found "
                           f"{len(folders)} ({found})", file=results_dir,
                           fix=f"record the pack with another backend (pytest {pack.path} --jev-record "
                               "--jev-backend=NAME), or point --results-dir at the folder that holds them")
    out = []
    for folder in folders:
        recording = load_recording(predictions_in(folder, pack.id))
        problems = integrity_problems(pack, pack.cases, recording, grade(pack, recording))
        if problems:
            more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
            raise HarvestError(f"{problems[0]}{more}",
                               fix="harvest compares complete recordings of this pack only")
        kind, model = folder_identity(folder)
        out.append(Backend(folder.name, kind, model, recording, check_rubric(pack, pack.cases, recording).outcome))
    return tuple(out)


# -- comparing --------------------------------------------------------------------------------

def vote(question: Question, line: RecordingLine | None) -> Vote:
    """A backend's answer to `question` read as grading reads it."""
    answers = line.answers if line is not None else None
    if line is None or line.error or answers is None:
        return Vote(ERROR)
    answer = answers.get(question.id)
    decided = decide(question, answer) if isinstance(answer, dict) else None
    if decided is None:
        return Vote(UNUSABLE)
    decision, probability = decided
    top2 = _top2(question, answer) if question.type != "noul" and isinstance(answer, dict) else ()
    return Vote(DECIDED, decision, probability, top2)


def _top2(question: Question, answer: Mapping[str, Any]) -> tuple[tuple[str, float], ...]:
    raw = answer.get("probabilities")
    probs: list[tuple[str, float]] = []
    for key, value in raw.items() if isinstance(raw, dict) else ():
        try:
            p = float(value)
        except (TypeError, ValueError, OverflowError):
            continue
        label = str(key)
        if question.type == "score" and label.isdigit() and int(label) < len(question.levels):
            label = question.levels[int(label)]
        probs.append((label, p))
    ranked = sorted(enumerate(probs), key=lambda item: (-_rankable(item[1][1]), item[0]))  # first on ties
    return tuple(pair for _, pair in ranked[:2])


def compare(pack: Pack, backends: Sequence[Backend], kinds: Sequence[str] = KINDS,
            excluded_mock: Sequence[str] = ()) -> Harvest:
    """Every row of the kinds asked for, all-wrong first (ranked), then splits in case order."""
    split_of = {case.id: name for name, split in pack.splits.items() for case in split.cases}
    wrong: list[tuple[float, int, Row]] = []
    splits: list[Row] = []
    for index, case in enumerate(pack.cases):
        lines = [b.recording.lines.get(case.id) for b in backends]
        for qid, gold in case.expect.items():
            question = pack.questions[qid]
            votes = tuple(vote(question, line) for line in lines)
            decided = [v for v in votes if v.status == DECIDED]
            labels = {_key(v.decision) for v in decided}
            split = split_of.get(case.id) or None
            if len(labels) > 1 and SPLIT in kinds:
                splits.append(Row(SPLIT, case, split, question, votes))
            elif len(decided) >= 2 and len(labels) == 1 and labels != {_key(gold)} and ALL_WRONG in kinds:
                mean = math.fsum(v.probability or 0.0 for v in decided) / len(decided)
                wrong.append((-_rankable(mean), index, Row(ALL_WRONG, case, split, question, votes, mean)))
    wrong.sort(key=lambda item: item[:2])  # stable: questions keep case-line order within a case
    return Harvest(pack, tuple(backends), tuple(row for *_, row in wrong) + tuple(splits), tuple(kinds),
                   tuple(excluded_mock))


def _key(label: Any) -> str:
    """Labels compared as JSON (true is not 1, and an unhashable label cannot crash a set)."""
    return json.dumps(label, sort_keys=True, default=str)


def _rankable(p: float) -> float:
    return p if math.isfinite(p) else -1.0  # a NaN probability ranks last, never first


def _number(p: float | None) -> float | None:
    return round(p, DIGITS) if p is not None and math.isfinite(p) else None


def state_excerpt(pack: Pack, case: Case) -> dict[str, str]:
    """The first EXCERPT characters of each state field, as text (JSON for non-strings)."""
    out = {}
    for name in pack.state_fields:
        value = case.state.get(name)
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)  # keys as written
        out[name] = text if len(text) <= EXCERPT else text[:EXCERPT] + "…"
    return out


# -- writing ----------------------------------------------------------------------------------

def jsonl(harvest: Harvest) -> bytes:
    return "".join(row.to_line(harvest.pack, harvest.backends).dumps() for row in harvest.rows).encode("utf-8")


def md_text(text: str) -> str:
    """`text` safe inside a Markdown table cell: no line breaks (`<br>`), `|` and `\\`
    escaped, no HTML, no control characters."""
    out = []
    for line in str(text).splitlines() or [""]:
        safe = printable(line).replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        out.append(safe.replace("|", "\\|"))
    return "<br>".join(out)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _cell(v: Vote) -> str:
    if v.status != DECIDED:
        return v.status
    text = f"**{md_text(_label(v.decision))}** {_shown(v.probability)}"
    if v.top2:
        others = [pair for pair in v.top2 if pair[0] != v.decision][:1]
        text += "".join(f" (next: {md_text(label)} {_shown(p)})" for label, p in others)
    return text


def _shown(p: float | None) -> str:
    return "nan" if p is None or not math.isfinite(p) else f"{p:.3f}"


def markdown(harvest: Harvest, limit: int | None = None) -> str:
    pack = harvest.pack
    out = [f"# Disagreement harvest: {md_text(pack.id)} {md_text(pack.version)}", "",
           ("Rows where the backends disagree with each other (`split`), or all agree on a label that is not the "
           "gold (`all-wrong`: label-error suspects, highest mean probability of the agreed label first). "
           "Rows where every decision is the gold are left out; `error` and `unusable` answers are not "
           "decisions. Question instructions are in pack.yaml. Every row is in "
           f"`{md_text(pack.id)}.harvest.jsonl`."), "",
           "Backends compared (results folder: backend, model, recording):"]
    for b in harvest.backends:
        out.append(f"- `{md_text(b.folder)}`: {md_text(b.kind or '?')}, {md_text(b.model or '?')}, "
                   f"sha256 {b.recording.sha256[:12]}, wording {b.rubric}")
    if harvest.excluded_mock:
        out.append(f"- left out (mock, built from the gold labels; --include-mock compares them): "
                   f"{', '.join(f'`{md_text(name)}`' for name in harvest.excluded_mock)}")
    pairs = len(pack.cases)
    totals = " ".join(f"{kind} {harvest.count(kind)}," for kind in harvest.kinds).rstrip(",")
    out += ["", (f"Rows: {len(harvest.rows)} ({totals}) of {_plural(pairs, 'case')} x "
                 f"{_plural(len(pack.questions), 'question')}."), "",
            "| question | type | " + " | ".join(harvest.kinds) + " |",
            "|---|---|" + "---:|" * len(harvest.kinds)]
    for qid, q in pack.questions.items():
        out.append(f"| {md_text(qid)} | {q.type} | " + " | ".join(str(harvest.count(k, qid)) for k in harvest.kinds)
                   + " |")
    out.append("| **total** | | " + " | ".join(str(harvest.count(k)) for k in harvest.kinds) + " |")
    for qid, q in pack.questions.items():
        out += ["", f"## {md_text(qid)} ({q.type})"]
        for kind in harvest.kinds:
            rows = [r for r in harvest.rows if r.kind == kind and r.question.id == qid]
            out += ["", f"### {kind} ({len(rows)})", ""]
            out += _table(harvest, rows, limit) if rows else ["None."]
    return "\n".join(out) + "\n"


def _table(harvest: Harvest, rows: Sequence[Row], limit: int | None) -> list[str]:
    pack = harvest.pack
    extra = [name for name, shown in (("split", pack.declares_splits), ("locale", any(c.locale for c in pack.cases)),
                                      ("tags", any(c.tags for c in pack.cases))) if shown]
    mean = rows[0].kind == ALL_WRONG
    head = ["#", "case", *extra, "gold", *(md_text(b.folder) for b in harvest.backends),
            *(["mean p"] if mean else []), "state"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    shown = rows if limit is None else rows[:limit]
    for n, row in enumerate(shown, 1):
        state = "<br>".join(f"**{md_text(k)}**: {md_text(v)}" for k, v in state_excerpt(pack, row.case).items())
        cells = [str(n), md_text(row.case.id), *(md_text(_column(row, name)) for name in extra),
                 md_text(_label(row.case.expect[row.question.id])), *(_cell(v) for v in row.votes),
                 *([_shown(row.agreed_probability)] if mean else []), state]
        out.append("| " + " | ".join(cells) + " |")
    if len(shown) < len(rows):
        out += ["", f"... and {len(rows) - len(shown)} more in `{md_text(pack.id)}.harvest.jsonl` (--limit {limit})."]
    return out


def _column(row: Row, name: str) -> str:
    if name == "split":
        return row.split or ""
    return row.case.locale or "" if name == "locale" else ", ".join(row.case.tags)


@dataclass(frozen=True)
class Written:
    harvest: Harvest
    markdown: Path
    jsonl: Path

    def summary(self) -> str:
        h = self.harvest
        counts = ", ".join(f"{kind} {h.count(kind)}" for kind in h.kinds)
        return (f"harvest {h.pack.id} {h.pack.version}: {len(h.rows)} rows ({counts}) from "
                f"{len(h.backends)} backends ({', '.join(b.folder for b in h.backends)}) written to "
                f"{self.markdown} and {self.jsonl.name}")


def run(pack_dir: Path, *, results_dir: Path, out: Path | None = None, names: Sequence[str] = (),
        include_mock: bool = False, limit: int | None = None, kinds: Iterable[str] = KINDS) -> Written:
    """Load, compare, write both files (out defaults to <results_dir>/harvest)."""

    if limit is not None and limit < 0:
        raise JevError(f"--limit {limit} is negative", fix="pass --limit N with N >= 0 (rows per Markdown table)")
    pack = load_pack(pack_dir)
    folders, mock = backend_folders(results_dir, pack.id, names, include_mock)
    harvest = compare(pack, load_backends(pack, folders, results_dir), tuple(k for k in KINDS if k in set(kinds)),
                      mock)
    out = results_dir / "harvest" if out is None else out
    md, lines = out / f"{pack.id}.harvest.md", out / f"{pack.id}.harvest.jsonl"
    atomic_write(lines, jsonl(harvest))
    atomic_write(md, markdown(harvest, limit).encode("utf-8"))
    return Written(harvest, md, lines)
