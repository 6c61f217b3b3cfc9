"""Helpers of the `jev` fixture's tests: answers files written by hand, outcomes read from runs."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_jev.fixture.answers import make_line, render
from pytest_jev.formats.answers_line import AnswerLine
from pytest_jev.wire import Request, fingerprints

# A conftest for inner runs that must not touch the network: any socket connect raises (undone
# at the end of the run: pytester's in-process runs share this process's socket module).
NO_NETWORK = '''
import socket

SAVED = {}


def _refuse(*args, **kwargs):
    raise OSError("network blocked by the test (no_network conftest)")


def pytest_configure(config):
    SAVED.update(connect=socket.socket.connect, connect_ex=socket.socket.connect_ex,
                 create_connection=socket.create_connection)
    socket.socket.connect = _refuse
    socket.socket.connect_ex = _refuse
    socket.create_connection = _refuse


def pytest_unconfigure(config):
    socket.socket.connect = SAVED["connect"]
    socket.socket.connect_ex = SAVED["connect_ex"]
    socket.create_connection = SAVED["create_connection"]
'''

OUTCOME = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S+)")


def outcomes(text: str) -> dict[str, str]:
    """node id -> outcome, from a run's `-rA` short summary (-rA lists every test)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = OUTCOME.match(line)
        if match:
            found.setdefault(match.group(2), match.group(1))
    return found


def failure_text(out: str) -> list[str]:
    """The `E` lines of every failure, whitespace-normalised (the traceback around them shows each
    plugin's own source, which differs by design)."""
    return sorted(" ".join(line[1:].split()) for line in out.splitlines() if line.startswith("E "))


def claims_request(text: Any, claims: Sequence[str], context: Mapping[str, Any] | None = None
                   ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The (state, questions) pytest-jev sends for jev.holds / lacks / expect."""
    state = {"text": text, **(context or {})}
    questions = {f"claim_{i}": {"type": "noul", "instructions": f"Does `text` satisfy: {claim}?"}
                 for i, claim in enumerate(claims)}
    return state, questions


def line(state: Any, questions: dict[str, dict[str, Any]], answers: dict[str, Any], *, backend: str = "jev",
         requested: str = "jev-latest", served: str = "jev-1.13.0", tests: Iterable[str] = ("test_it",),
         tokens: int = 100) -> AnswerLine:
    """An answers-file line for one request, fingerprinted as the fixture fingerprints it."""
    fp = fingerprints([Request("", state, questions, requested)], backend)[0]
    return make_line(fp, backend=backend, requested_model=requested, model=served, state=state, questions=questions,
                     answers=answers, usage={"input_tokens": tokens, "output_tokens": 0}, tests=tests)


def claims_line(text: Any, claims: Mapping[str, float], *, context: Mapping[str, Any] | None = None,
                **kw: Any) -> AnswerLine:
    state, questions = claims_request(text, list(claims), context)
    answers = {f"claim_{i}": {"type": "noul", "noul": p} for i, p in enumerate(claims.values())}
    return line(state, questions, answers, **kw)


def choice_line(text: Any, question: str, probs: Mapping[str, float], *,
                criteria: Mapping[str, str | None] | None = None, **kw: Any) -> AnswerLine:
    criteria = dict(criteria) if criteria is not None else dict.fromkeys(probs)
    questions = {"choice": {"type": "choice", "instructions": question, "criteria": criteria}}
    best = max(probs, key=probs.__getitem__)
    answers = {"choice": {"type": "choice", "choice": best, "confidence": 0.8, "probabilities": dict(probs)}}
    return line({"text": text}, questions, answers, **kw)


def score_line(text: Any, question: str, levels: Sequence[str], probs: Sequence[float], **kw: Any) -> AnswerLine:
    questions = {"score": {"type": "score", "instructions": question, "criteria": list(levels)}}
    spread = {str(i): p for i, p in enumerate(probs)}
    answers = {"score": {"type": "score", "score": sum(i * p for i, p in enumerate(probs)), "confidence": 0.7,
                         "probabilities": spread}}
    return line({"text": text}, questions, answers, **kw)


def write_answers(test_dir: Path, module: str, lines: Iterable[AnswerLine]) -> Path:
    """tests/jev_answers/<module>.jsonl, as the fixture writes it."""
    path = test_dir / "jev_answers" / f"{module}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(render(lines))
    return path
