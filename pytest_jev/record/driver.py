"""The recorder's driver: each case asked, retried, billed and turned into its recording line.

What is retried within a run: transport errors, timeouts and the statuses the backend marks
retryable (408, 429, 5xx, 529), waiting what the server asks (Retry-After) up to
MAX_RETRY_AFTER_S, else an exponential backoff (pacing.py). What is not: an answer that breaks
the contract or a malformed reply (the wire contract: not a transient error); it is recorded as
an error line, and the next --jev-record run asks again. Tokens are billed over every attempt.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Protocol

from ..backends.base import RECORD_VERSION, Answer, AuthError, Backend, plugin_version
from ..contract import AnswerSpec, answers_problems, specs_of
from ..formats.recording_line import RecordingLine
from ..rubric import question_fingerprints, rubric_fingerprint
from ..wire import Request, state_fingerprint
from .pacing import Pacer, backoff_delay
from .plan import per_questions

MAX_RETRY_AFTER_S = 60.0  # a server asking for a longer wait gets an error line, not a stalled run
MAX_ATTEMPTS = 4  # per request, retries included
TIMEOUT_S = 30.0  # per attempt
TOKEN_KEYS = ("input_tokens", "output_tokens")



@dataclass(frozen=True)
class Progress:
    done: int  # calls finished in this run (success or error line)
    total: int  # calls this run makes (cases reused from a recording or journal are not counted)
    errors: int
    rate_per_s: float
    eta_s: float | None
    reused: int = 0


class Lines(Protocol):
    """Where a runner journals each finished line (record.journal.Journal for a pack)."""

    def append(self, line: Mapping[str, Any]) -> bytes:
        """Journal one line; the bytes written (reused for the final file)."""


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Billed:
    """Tokens billed over every attempt of one case: a retried call is paid for each time."""

    def __init__(self) -> None:
        self.totals = dict.fromkeys(TOKEN_KEYS, 0)
        self.attempts_with_usage = 0

    def add(self, answer: Answer) -> None:
        usage = answer.usage
        if not isinstance(usage, Mapping):
            return
        self.attempts_with_usage += 1
        for key in TOKEN_KEYS:
            value = usage.get(f"{key}_total", usage.get(key))
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.totals[key] += int(value)

    def usage(self, last: Answer) -> dict[str, Any] | None:
        """The usage to record: the last attempt's own keys, token counts summed over attempts."""
        if not self.attempts_with_usage:
            return None
        out = dict(last.usage) if isinstance(last.usage, Mapping) else {}
        for key in TOKEN_KEYS:
            out[key] = self.totals[key]
            if f"{key}_total" in out or self.attempts_with_usage > 1:
                out[f"{key}_total"] = self.totals[key]
        return out


class CaseRunner:
    """Asks a backend for each case of a run: concurrency, pacing, retries, billing, the answer
    contract, and the recording line of each case (journaled as soon as it is built). The pack
    recorder (engine.record_pack) runs it over a plan's requests; the `jev` fixture over one
    request at a time (fixture/live.py)."""


    def __init__(self, backend: Backend, journal: Lines, *, concurrency: int, rpm: float | None,
                 max_attempts: int, timeout_s: float, backoff: tuple[float, float],
                 progress: Callable[[Progress], None] | None, total: int, reused: int,
                 max_retry_after_s: float) -> None:
        self.backend, self.journal = backend, journal
        self.sem = asyncio.Semaphore(concurrency)
        self.pacer = Pacer(rpm)
        self.max_attempts, self.timeout_s, self.backoff = max_attempts, timeout_s, backoff
        self.max_retry_after_s = max_retry_after_s
        self.progress, self.total, self.reused = progress, total, reused
        self.base_url = getattr(backend, "base_url", None)
        self.version = plugin_version()
        self.done = self.errors = self.retries = 0
        self.t0 = time.perf_counter()
        self.results: dict[str, RecordingLine] = {}  # case id -> the line this run recorded
        self.encoded: dict[str, bytes] = {}  # the journal's bytes of each result line, reused for the final file
        # per questions object (a pack's requests share one): the object is kept with its value, so
        # its id cannot be reused by another questions dict while the entry lives
        self.specs: dict[int, tuple[Any, dict[str, AnswerSpec]]] = {}
        self.rubrics: dict[int, tuple[Any, tuple[str, dict[str, str]]]] = {}

    async def run(self, todo: list[tuple[Request, str]]) -> None:
        tasks = [asyncio.ensure_future(self._case(req, fp)) for req, fp in todo]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _case(self, req: Request, fp: str) -> None:
        started, attempts = now(), 0
        reasons: list[str] = []
        billed = Billed()
        while True:
            async with self.sem:
                await self.pacer.wait()
                answer = await self._attempt(req if req.attempt == attempts else replace(req, attempt=attempts))
                attempts += 1
            billed.add(answer)
            problem, retryable = self._problem(req, answer)
            if problem is None:
                line = self._line(req, fp, answer, attempts, reasons, started, None, billed)
                break
            wait = self._delay(answer, attempts) if retryable else 0.0
            if retryable and answer.retry_after_s is not None and answer.retry_after_s > self.max_retry_after_s:
                problem += (f" (the server asked to wait {answer.retry_after_s:.0f} s, over the "
                            f"{self.max_retry_after_s:.0f} s limit: run --jev-record again later)")
                retryable = False
            if not retryable or attempts >= self.max_attempts:
                line = self._line(req, fp, answer, attempts, reasons, started, (problem, retryable), billed)
                break
            reasons.append(problem[:120])
            self.retries += 1
            await asyncio.sleep(wait)
        self.encoded[req.case_id] = self.journal.append(line)
        recorded = self.results[req.case_id] = RecordingLine(line)
        self._report(recorded)

    if sys.version_info >= (3, 11):
        async def _call(self, req: Request) -> Answer:
            async with asyncio.timeout(self.timeout_s):  # no extra task per call, unlike wait_for
                return await self.backend.answer(req)
    else:  # pragma: no cover - Python 3.10
        async def _call(self, req: Request) -> Answer:
            return await asyncio.wait_for(self.backend.answer(req), self.timeout_s)

    async def _attempt(self, req: Request) -> Answer:
        try:
            return await self._call(req)
        except (AuthError, asyncio.CancelledError):
            raise
        except asyncio.TimeoutError:
            msg = f"no answer within {self.timeout_s:g} s"
            return Answer(error=f"timeout: {msg}", retryable=True, error_detail={
                "type": "timeout", "status": None, "retryable": True, "message": msg, "body_excerpt": None})
        except Exception as exc:  # noqa: BLE001  a backend bug or library failure: record it, keep the run going
            msg = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            return Answer(error=f"exception: {msg}"[:200], retryable=False, error_detail={
                "type": "exception", "status": None, "retryable": False, "message": msg, "body_excerpt": None})

    def _problem(self, req: Request, answer: Answer) -> tuple[str | None, bool]:
        """(why this attempt's answer cannot be kept, whether trying again may help)."""
        if answer.error:
            return str(answer.error), bool(answer.retryable)
        if answer.answers is None:
            return "malformed: no answers", False
        specs = per_questions(self.specs, req.questions, specs_of)
        wrong = answers_problems(specs, answer.answers)
        return (f"misfit: {'; '.join(wrong)}", False) if wrong else (None, False)

    def _delay(self, answer: Answer, attempts: int) -> float:
        if answer.retry_after_s is not None:  # the server said how long: wait at least that
            wait = min(answer.retry_after_s, self.max_retry_after_s)
            if answer.http_status == 429:
                self.pacer.hold(wait)
            return wait
        return backoff_delay(attempts, self.backoff)

    def _line(self, req: Request, fp: str, answer: Answer, attempts: int, reasons: list[str], started: str,
              failure: tuple[str, bool] | None, billed: Billed) -> dict[str, Any]:
        ok = failure is None
        line: dict[str, Any] = {
            "case_id": req.case_id, "model": answer.model if ok else None,
            "latency_ms": answer.latency_ms if ok else None,
            "usage": billed.usage(answer),  # billed tokens count, error lines too (jevassert prices them)
            "answers": answer.answers if ok else None, "error": failure[0][:200] if failure else None,
            "record_version": RECORD_VERSION, "backend": self.backend.name, "mode": self.backend.mode}
        if self.base_url:
            line["base_url"] = self.base_url
        rubric, per_question = self._rubric(req)
        line.update(requested_model=req.model, request_fingerprint=fp, state_fingerprint=state_fingerprint(req.state),
                    rubric_fingerprint=rubric, question_fingerprints=per_question)
        if req.option_order is not None:
            line["option_order"] = req.option_order
        line.update(attempts=attempts,
                    retry_reasons=reasons, http_status=answer.http_status, request_id=answer.request_id,
                    started_at=started, finished_at=now(),
                    error_detail=error_detail(answer, *failure) if failure else None, plugin_version=self.version)
        for key, value in (answer.extra or {}).items():
            line.setdefault(key, value)
        return line

    def _rubric(self, req: Request) -> tuple[str, dict[str, str]]:
        """The rubric and question fingerprints of a request's questions (once per questions object)."""
        return per_questions(self.rubrics, req.questions,
                             lambda q: (rubric_fingerprint(q), question_fingerprints(q)))

    def _report(self, line: RecordingLine) -> None:
        self.done += 1
        self.errors += bool(line.error)
        if self.progress is None:
            return
        elapsed = time.perf_counter() - self.t0
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else None
        self.progress(Progress(self.done, self.total, self.errors, rate, eta, self.reused))


def error_detail(answer: Answer, problem: str, retryable: bool) -> dict[str, Any]:
    detail = dict(answer.error_detail or {})
    kind = "misfit" if problem.startswith("misfit") else "malformed" if problem.startswith("malformed") else "error"
    detail.setdefault("type", kind)
    detail.setdefault("status", answer.http_status)
    detail.setdefault("retryable", retryable)
    detail.setdefault("message", problem[:500])
    detail.setdefault("body_excerpt", None)
    return detail
