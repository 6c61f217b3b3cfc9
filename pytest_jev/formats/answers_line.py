"""A line of the `jev` fixture's answers file (tests/jev_answers/<module>.jsonl, and of its
journals .<module>.journal-<writer>.jsonl): AnswerLine.

One line per request a module's tests make: its fingerprint (the replay key), the tests that
asked it, who answered (backend kind, requested and served model), the request (state and
questions as sent) and the answers with their usage. Nothing that changes between two
identical runs is stored, so re-recording a deterministic backend leaves the file as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import values as v

KEYS = ("fingerprint", "tests", "backend", "requested_model", "model", "state", "questions", "answers", "usage")
NAMED = frozenset(KEYS)


@dataclass(frozen=True)
class AnswerLine:
    """One recorded request and its answers. `state` is whatever the test asked about (any JSON
    value); `questions` and `answers` are the System One request and answer objects as sent and
    received (the wire contract's shapes), checked by the answer contract when replayed."""

    fingerprint: str
    tests: tuple[str, ...] = ()  # node ids after the module, sorted
    backend: str | None = None
    requested_model: str | None = None
    model: str | None = None
    state: Any = None
    questions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    answers: Mapping[str, Any] | None = None  # None: not an object (the contract refuses it at replay)
    usage: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys a later version may add, kept after KEYS

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> AnswerLine | None:
        """The line, or None when it is not an answer line (no fingerprint string, no questions
        object). `tests` that is not a list of strings reads as no tests."""
        fingerprint, questions = doc.get("fingerprint"), doc.get("questions")
        if not isinstance(fingerprint, str) or not isinstance(questions, Mapping):
            return None
        tests = doc.get("tests")
        answers, usage = doc.get("answers"), doc.get("usage")
        return cls(fingerprint,
                   tuple(tests) if isinstance(tests, list) and all(isinstance(t, str) for t in tests) else (),
                   v.string(doc.get("backend")), v.string(doc.get("requested_model")), v.string(doc.get("model")),
                   doc.get("state"), questions, answers if isinstance(answers, Mapping) else None,
                   usage if isinstance(usage, Mapping) else None, v.extra_keys(doc, NAMED))

    def to_json(self) -> dict[str, Any]:
        """The line in KEYS order, any other keys after them."""
        return {"fingerprint": self.fingerprint, "tests": list(self.tests), "backend": self.backend,
                "requested_model": self.requested_model, "model": self.model, "state": self.state,
                "questions": dict(self.questions),
                "answers": dict(self.answers) if self.answers is not None else None,
                "usage": dict(self.usage) if self.usage is not None else None, **self.extra}

    def sort_key(self) -> tuple[str, str]:
        """Lines are sorted by their first test, then fingerprint: a test's answers sit together."""
        return (self.tests[0] if self.tests else ""), self.fingerprint
