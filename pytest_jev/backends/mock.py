"""The `mock` backend: a seeded, noisy oracle that answers from the gold labels.

It exists to exercise the harness (recording, retries, grading, gates) without a
network or a model: with probability `accuracy` a question gets its gold label,
otherwise another label, and the probabilities are shaped like System One's. It
injects seeded failures: per attempt, retryable HTTP 500s (`fail_rate`: the recorder
retries them) and malformed 200s (`malformed_rate`: answers that break the contract,
recorded as an error and not retried); per case, an endpoint that is down (`down_rate`:
HTTP 503 on every attempt, so the case ends as an error line). The class defaults inject
nothing (an oracle for tests of other things); `--jev-backend=mock`, the protocol's
harness check, injects HARNESS_FAILURES, so a mock recording holds failed cases and
every failure path of the harness runs. backend.json states the rates. Everything is
deterministic in (seed, case_id) for answers and down cases and (seed, case_id,
attempt) for the other failures, so a rerun with the same seed writes the same
recording. Lines it writes carry mode "mock", which the report labels as such.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from ..pricing import FREE, per_mtok, text_tokens
from ..wire import Request
from .base import Answer
from .system_one import shape

_M = TypeVar("_M", bound="MockBackend")


# the injected failures of `--jev-backend=mock` (the protocol's harness check): about 3% of cases down,
# 2% of attempts malformed, 5% of attempts a transient server error (retried)
HARNESS_FAILURES = {"fail_rate": 0.05, "malformed_rate": 0.02, "down_rate": 0.03}


def _unit(*parts: Any) -> float:
    digest = hashlib.sha256(":".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class MockBackend:
    name = "mock"
    mode = "mock"

    def __init__(self, gold: Mapping[str, Mapping[str, Any]] | None = None, *, seed: int = 0,
                 accuracy: float = 0.85, fail_rate: float = 0.0, malformed_rate: float = 0.0,
                 latency_ms: float = 0.0, levels: Mapping[str, Sequence[str]] | None = None,
                 model: str | None = None, down_rate: float = 0.0) -> None:
        """gold: case_id -> expect dict (as in cases.jsonl); levels: score question id -> level labels,
        needed to place a score gold label when the pack sends level descriptions instead."""
        if (not 0.0 <= accuracy <= 1.0 or fail_rate < 0 or malformed_rate < 0 or fail_rate + malformed_rate > 1
                or not 0.0 <= down_rate <= 1.0):
            raise ValueError("accuracy and down_rate in [0, 1]; fail_rate, malformed_rate >= 0 and their sum <= 1")
        self.gold = {str(k): dict(v) for k, v in (gold or {}).items()}
        self.seed = seed
        self.accuracy = accuracy
        self.fail_rate = fail_rate
        self.malformed_rate = malformed_rate
        self.down_rate = down_rate
        self.latency_ms = latency_ms
        self.levels = {k: list(v) for k, v in (levels or {}).items()}
        self.model = f"mock-{seed}"  # the requested model is ignored: the oracle is what answers
        self.calls = 0

    @classmethod
    def from_pack(cls: type[_M], pack: Any, **kw: Any) -> _M:
        """The oracle for a Pack: gold labels and score levels taken from it."""
        gold = {case.id: dict(case.expect) for case in pack.cases}
        levels = {qid: list(q.levels) for qid, q in pack.questions.items() if q.type == "score"}
        return cls(gold, levels=levels, **kw)

    def backend_id(self, served_model: str | None) -> str:
        return f"mock-{self.seed}"

    def describe(self) -> dict[str, Any]:
        return {"provider": "mock oracle (answers from the gold labels, with noise)", "backend": self.name,
                "model": self.model, "endpoint": "in-process",
                "pricing": per_mtok(FREE), "calibrated": False,
                "accuracy": self.accuracy, "seed": self.seed, "fail_rate": self.fail_rate,
                "malformed_rate": self.malformed_rate, "down_rate": self.down_rate,
                "injected_failures": (f"seeded (seed {self.seed}): {self.down_rate:.0%} of cases down (HTTP 503 on "
                                      f"every attempt: an error line), {self.malformed_rate:.0%} of attempts "
                                      f"malformed (a misfit error line, not retried), {self.fail_rate:.0%} of "
                                      "attempts a transient HTTP 500 (retried)"),
                "notes": "Not a model: a harness check. Its scores say nothing about any real backend.",
                "reproduce": f"pytest packs/ --jev-record --jev-backend=mock (seed {self.seed})"}

    async def answer(self, request: Request) -> Answer:
        self.calls += 1
        if self.latency_ms:
            await asyncio.sleep(self.latency_ms / 1000)
        else:
            await asyncio.sleep(0)
        if _unit(self.seed, request.case_id, "down") < self.down_rate:
            return Answer(error="HTTP 503: injected failure (the endpoint is down for this case)", retryable=True,
                          http_status=503, error_detail={"type": "http", "status": 503, "retryable": True,
                                                         "message": "injected failure: down", "body_excerpt": None})
        roll = _unit(self.seed, request.case_id, request.attempt, "fail")
        if roll < self.fail_rate:
            return Answer(error="HTTP 500: injected failure", retryable=True, http_status=500,
                          error_detail={"type": "http", "status": 500, "retryable": True,
                                        "message": "injected failure", "body_excerpt": None})
        answers = {qid: self._answer(request.case_id, qid, q) for qid, q in request.questions.items()}
        if roll < self.fail_rate + self.malformed_rate:
            answers = self._break(answers, request.case_id, request.attempt)
        tokens = text_tokens(json.dumps(request.state) + json.dumps(request.questions))
        return Answer(model=self.model, answers=answers, usage={"input_tokens": tokens, "output_tokens": 0},
                      latency_ms=self.latency_ms, http_status=200)

    async def aclose(self) -> None:
        return None

    # -- the oracle -------------------------------------------------------------------------

    def _answer(self, case_id: str, qid: str, question: Mapping[str, Any]) -> dict[str, Any]:
        rng = random.Random(f"{self.seed}:{case_id}:{qid}")
        kind = question["type"]
        if kind == "noul":
            keys: list[Any] = [False, True]
        elif kind == "choice":
            keys = list(question["criteria"])
        else:
            keys = list(range(len(question["criteria"])))
        gold = self._gold_index(case_id, qid, question, keys)
        right = gold is not None and rng.random() < self.accuracy
        pick = gold if right else rng.choice([i for i in range(len(keys)) if i != gold] or [0])
        top = rng.uniform(0.55, 0.97)
        rest = [rng.random() + 0.01 for _ in keys]
        others = sum(r for i, r in enumerate(rest) if i != pick) or 1.0
        probs = [top if i == pick else (1 - top) * r / others for i, r in enumerate(rest)]
        if len(keys) == 1:
            probs = [1.0]
        return shape(question, probs)

    def _gold_index(self, case_id: str, qid: str, question: Mapping[str, Any], keys: list[Any]) -> int | None:
        expect = self.gold.get(case_id, {})
        if qid not in expect:
            return None
        label = expect[qid]
        kind = question["type"]
        if kind == "noul":
            return 1 if label is True else 0 if label is False else None
        if kind == "choice":
            return keys.index(label) if label in keys else None
        levels = self.levels.get(qid)
        if levels and label in levels and len(levels) == len(keys):
            return levels.index(label)
        criteria = list(question["criteria"])  # levels sent as their own labels
        return criteria.index(label) if label in criteria else None

    def _break(self, answers: dict[str, Any], case_id: str, attempt: int) -> dict[str, Any]:
        """A 200 whose answers do not fit the questions: one of three deterministic faults."""
        broken: dict[str, Any] = json.loads(json.dumps(answers))
        qid = min(broken)
        fault = int(_unit(self.seed, case_id, attempt, "fault") * 3)
        if fault == 0:
            del broken[qid]
        elif fault == 1:
            broken[qid]["type"] = "mystery"
        else:
            broken[qid]["noul" if broken[qid]["type"] == "noul" else "probabilities"] = 1.7
        return broken
