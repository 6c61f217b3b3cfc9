"""--jev-repeat: how often a backend changes its decision when asked the same case again.

Round 1 is the pack's recording; round k (k >= 2) sits beside it as
``<pack>.predictions-r<k>.jsonl`` (jevassert's ``FILE-r2.jsonl`` naming). A decision is
read with the same rule the metrics use (grade.decide). An item is one (case, question)
decided in round 1 and in at least one later round; it *flipped* when any later round
decided it differently. ``discordant`` is jevassert's ``--repeat`` figure: summed over
rounds 2..N, the items that are correct in exactly one of round 1 and round k.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .formats.run_json import QuestionStability, StabilityEntry
from .grade import decide
from .packs.model import Pack
from .paths import round_path
from .recording_file import Recording, load_recording


@dataclass(frozen=True)
class Stability:
    pack: str
    rounds: int  # rounds read, round 1 included
    items: int  # (case, question) decided in round 1 and in a later round
    flipped: int  # of those, decided differently in at least one later round
    discordant: int  # jevassert's count: correct in exactly one of round 1 and round k, summed over k
    by_question: dict[str, tuple[int, int]] = field(default_factory=dict)  # qid -> (items, flipped)
    flipped_cases: tuple[str, ...] = ()  # case ids with a flipped item, in pack order

    @property
    def flip_rate(self) -> float | None:
        return self.flipped / self.items if self.items else None

    def entry(self) -> StabilityEntry:
        """The pack's entry in --jev-json's `stability`."""
        return StabilityEntry(
            self.pack, self.rounds, self.items, self.flipped, self.flip_rate, self.discordant,
            {qid: QuestionStability(n, f, f / n if n else None) for qid, (n, f) in self.by_question.items()},
            self.flipped_cases)

    def line(self) -> str:
        if not self.items:
            return f"jev stability {self.pack}: {self.rounds} round(s), no decision answered in two rounds"
        per_q = ", ".join(f"{qid} {f / n:.3f}" for qid, (n, f) in self.by_question.items() if n)
        return (f"jev stability {self.pack}: {self.rounds} rounds, {self.items} decisions compared, "
                f"{self.flipped} flipped (flip rate {self.flip_rate:.3f}; {per_q}); "
                f"{self.discordant} discordant correct/wrong pairs against round 1")


def _decisions(pack: Pack, recording: Recording) -> dict[tuple[str, str], tuple[Any, bool]]:
    out: dict[tuple[str, str], tuple[Any, bool]] = {}
    for case in pack.cases:
        line = recording.lines.get(case.id)
        answers = line.answers if line is not None and not line.error else None
        if answers is None:
            continue
        for qid, gold in case.expect.items():
            answer = answers.get(qid)
            decided = decide(pack.questions[qid], answer) if isinstance(answer, dict) else None
            if decided is not None:
                out[(case.id, qid)] = (decided[0], decided[0] == gold)
    return out


def stability(pack: Pack, first: Path, rounds: int) -> Stability:
    """Compare rounds 2..`rounds` of a recording with round 1 (rounds whose file is missing are skipped)."""
    base = _decisions(pack, load_recording(first))
    others = [_decisions(pack, load_recording(p)) for k in range(2, rounds + 1)
              if (p := round_path(first, k)).is_file()]
    compared: set[tuple[str, str]] = set()
    flipped: set[tuple[str, str]] = set()
    discordant = 0
    for other in others:
        for key, (decision, correct) in base.items():
            seen = other.get(key)
            if seen is None:
                continue
            compared.add(key)
            if seen[0] != decision:
                flipped.add(key)
            discordant += seen[1] != correct
    by_question = {qid: (sum(1 for k in compared if k[1] == qid), sum(1 for k in flipped if k[1] == qid))
                   for qid in pack.questions}
    cases = {cid for cid, _ in flipped}
    return Stability(pack.id, 1 + len(others), len(compared), len(flipped), discordant, by_question,
                     tuple(c.id for c in pack.cases if c.id in cases))
