"""Record a pack against a backend: async calls, pacing, retries, a crash-safe journal, resume.

Modes follow vcrpy: ``once`` calls only cases that are missing, recorded with an
error, recorded for a different request (fingerprint) or recorded with an answer that
breaks the answer contract; ``new_episodes`` does the same but also keeps lines for case
ids the pack no longer has; ``all`` records the chosen cases afresh; ``none`` calls
nothing and writes nothing. Only the chosen cases are ever called (pytest's selection:
`-k`, node ids, `--deselect`); every other case keeps the line it has. The final
recording holds one line per case it has an answer or error for, in pack order, and
replaces the old file atomically only when the run completes (see journal.py for kill -9
safety).

What is retried within a run: transport errors, timeouts and the statuses the backend
marks retryable (408, 429, 5xx, 529), waiting what the server asks (Retry-After) up to
MAX_RETRY_AFTER_S. What is not: an answer that breaks the contract or a malformed
reply (the wire contract: not a transient error); it is recorded as an error line, and
the next --jev-record run asks again.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from ..backends.base import RECORD_VERSION, Answer, AuthError, Backend, plugin_version
from ..contract import AnswerSpec, answers_problems, specs_of
from ..errors import OptionError, RecordingError
from ..fileio import atomic_write, scrub, write_lines
from ..packs.model import Case, Pack
from ..paths import backend_json
from ..rubric import question_fingerprints, rubric_fingerprint
from ..wire import Request, fingerprints
from .journal import Journal, journal_path, peek_journal, read_recording

MODES = ("once", "new_episodes", "all", "none")
MAX_RETRY_AFTER_S = 60.0  # a server asking for a longer wait gets an error line, not a stalled run
MAX_ATTEMPTS = 4  # per request, retries included
TIMEOUT_S = 30.0  # per attempt
BACKOFF_S = (0.5, 8.0)  # exponential backoff: base and cap, seconds
TOKEN_KEYS = ("input_tokens", "output_tokens")


@dataclass(frozen=True)
class Progress:
    done: int  # calls finished in this run (success or error line)
    total: int  # calls this run makes (cases reused from a recording or journal are not counted)
    errors: int
    rate_per_s: float
    eta_s: float | None
    reused: int = 0


@dataclass(frozen=True)
class RecordSummary:
    path: Path
    n_cases: int
    n_called: int
    n_reused: int
    n_errors: int  # error lines written by this run (mode none: error or missing lines found)
    served_models: tuple[str, ...]  # models named by the lines of the final recording
    elapsed_s: float
    calls_per_s: float
    mode: str = "once"
    n_retries: int = 0


@dataclass(frozen=True)
class Plan:
    """What a recording run would do, worked out without calling anything."""

    requests: list[Request]  # the chosen cases' requests, in pack order
    fingerprints: dict[str, str]  # case id -> request fingerprint
    keep: dict[str, dict[str, Any]]  # chosen cases whose recorded or journaled line is kept
    existing: dict[str, dict[str, Any]]  # the recording as it is (case id -> line)
    order: list[str]  # its case ids in file order

    @property
    def todo(self) -> list[Request]:
        return [req for req in self.requests if req.case_id not in self.keep]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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


def usable(line: Mapping[str, Any] | None, fingerprint: str, specs: Mapping[str, AnswerSpec], *,
           strict: bool) -> bool:
    """A line worth keeping: no error, answers that honour the contract, recorded for this
    very request. strict=False accepts a line without a fingerprint (a jevassert recording
    we cannot check)."""
    if not line or line.get("error") or not isinstance(line.get("answers"), dict):
        return False
    recorded = line.get("request_fingerprint")
    if not (recorded == fingerprint or (not strict and recorded is None)):
        return False
    return not answers_problems(specs, line["answers"])


def plan(pack: Pack, backend_name: str, out_path: Path, *, mode: str = "once", model: str | None = None,
         shuffle_seed: int | None = None, cases: Sequence[Case] | None = None) -> Plan:
    """Which of the chosen cases (default: all) a run would call, and which lines it keeps:
    the one reading both record_pack and --jev-dry-run use, so the estimate counts exactly
    the calls the run makes."""
    _check_mode(mode)
    requests = build_requests(pack, model or pack.record_model, shuffle_seed, cases)
    fps = dict(zip((req.case_id for req in requests), fingerprints(requests, backend_name)))
    try:
        existing, order = read_recording(out_path)
    except RecordingError:
        if mode != "all" or cases is not None:
            raise
        existing, order = {}, []  # re-recording every case replaces a recording that cannot be read
    journaled = peek_journal(out_path)
    keep: dict[str, dict[str, Any]] = {}
    if mode == "none":
        return Plan(requests, fps, {r.case_id: existing[r.case_id] for r in requests if r.case_id in existing},
                    existing, order)
    specs: dict[int, tuple[Any, dict[str, AnswerSpec]]] = {}
    for req in requests:
        spec = per_questions(specs, req.questions, specs_of)
        fp = fps[req.case_id]
        if usable(journaled.get(req.case_id), fp, spec, strict=True):
            keep[req.case_id] = journaled[req.case_id]
        elif mode != "all" and usable(existing.get(req.case_id), fp, spec, strict=False):
            keep[req.case_id] = existing[req.case_id]
    return Plan(requests, fps, keep, existing, order)


class _Pacer:
    """Spaces request starts 60/rpm s apart across all workers (no bursts); a 429 pushes it back.

    Starts sit on a fixed grid, so small wake-up delays do not lower the rate; a start
    later than half a slot (a stalled loop) resets the grid instead of letting the
    overdue starts go out together.
    """

    def __init__(self, rpm: float | None) -> None:
        self.interval = 60.0 / rpm if rpm else 0.0
        self.next = float("-inf")
        self.lock = asyncio.Lock()

    async def wait(self) -> None:
        loop = asyncio.get_running_loop()
        if self.interval == 0 and loop.time() >= self.next:
            return
        async with self.lock:  # FIFO: one start is scheduled at a time
            start = max(loop.time(), self.next)
            if start > loop.time():
                await asyncio.sleep(start - loop.time())
            now = loop.time()
            self.next = (now if now - start > self.interval / 2 else start) + self.interval

    def hold(self, seconds: float) -> None:
        self.next = max(self.next, asyncio.get_running_loop().time() + seconds)


class _Billed:
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


class _Run:
    def __init__(self, backend: Backend, journal: Journal, *, concurrency: int, rpm: float | None,
                 max_attempts: int, timeout_s: float, backoff: tuple[float, float],
                 progress: Callable[[Progress], None] | None, total: int, reused: int,
                 max_retry_after_s: float) -> None:
        self.backend, self.journal = backend, journal
        self.sem = asyncio.Semaphore(concurrency)
        self.pacer = _Pacer(rpm)
        self.max_attempts, self.timeout_s, self.backoff = max_attempts, timeout_s, backoff
        self.max_retry_after_s = max_retry_after_s
        self.progress, self.total, self.reused = progress, total, reused
        self.base_url = getattr(backend, "base_url", None)
        self.version = plugin_version()
        self.done = self.errors = self.retries = 0
        self.t0 = time.perf_counter()
        self.results: dict[str, dict[str, Any]] = {}
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
        started, attempts = _now(), 0
        reasons: list[str] = []
        billed = _Billed()
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
        self.results[req.case_id] = line
        self._report(line)

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
        base, cap = self.backoff
        return float(min(cap, base * 2 ** (attempts - 1)) * (1 - 0.25 * random.random()))

    def _line(self, req: Request, fp: str, answer: Answer, attempts: int, reasons: list[str], started: str,
              failure: tuple[str, bool] | None, billed: _Billed) -> dict[str, Any]:
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
        line.update(requested_model=req.model, request_fingerprint=fp, rubric_fingerprint=rubric,
                    question_fingerprints=per_question)
        if req.option_order is not None:
            line["option_order"] = req.option_order
        line.update(attempts=attempts,
                    retry_reasons=reasons, http_status=answer.http_status, request_id=answer.request_id,
                    started_at=started, finished_at=_now(),
                    error_detail=_detail(answer, *failure) if failure else None, plugin_version=self.version)
        for key, value in (answer.extra or {}).items():
            line.setdefault(key, value)
        return line

    def _rubric(self, req: Request) -> tuple[str, dict[str, str]]:
        """The rubric and question fingerprints of a request's questions (once per questions object)."""
        return per_questions(self.rubrics, req.questions,
                             lambda q: (rubric_fingerprint(q), question_fingerprints(q)))

    def _report(self, line: Mapping[str, Any]) -> None:
        self.done += 1
        self.errors += bool(line.get("error"))
        if self.progress is None:
            return
        elapsed = time.perf_counter() - self.t0
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else None
        self.progress(Progress(self.done, self.total, self.errors, rate, eta, self.reused))


def _detail(answer: Answer, problem: str, retryable: bool) -> dict[str, Any]:
    detail = dict(answer.error_detail or {})
    kind = "misfit" if problem.startswith("misfit") else "malformed" if problem.startswith("malformed") else "error"
    detail.setdefault("type", kind)
    detail.setdefault("status", answer.http_status)
    detail.setdefault("retryable", retryable)
    detail.setdefault("message", problem[:500])
    detail.setdefault("body_excerpt", None)
    return detail


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise OptionError(f"unknown record mode '{mode}'", fix=f"use one of: {', '.join(MODES)}")


def _check_args(mode: str, concurrency: int, rpm: float | None, max_attempts: int, timeout_s: float) -> None:
    _check_mode(mode)
    if concurrency < 1 or max_attempts < 1 or timeout_s <= 0 or (rpm is not None and rpm <= 0):
        raise OptionError("concurrency and max_attempts must be >= 1; timeout and rpm must be > 0")


async def record_pack(pack: Pack, backend: Backend, out_path: Path, *, mode: str = "once", concurrency: int = 8,
                      rpm: float | None = None, model: str | None = None, max_attempts: int = MAX_ATTEMPTS,
                      timeout_s: float = TIMEOUT_S, progress: Callable[[Progress], None] | None = None,
                      shuffle_seed: int | None = None, backoff_base_s: float = BACKOFF_S[0],
                      backoff_max_s: float = BACKOFF_S[1], cases: Sequence[Case] | None = None,
                      max_retry_after_s: float = MAX_RETRY_AFTER_S) -> RecordSummary:
    """Record the chosen `cases` (default: all) of `pack` with `backend` into `out_path` (JSONL);
    see the module docstring for modes."""
    _check_args(mode, concurrency, rpm, max_attempts, timeout_s)
    out_path = Path(out_path)
    t0 = time.perf_counter()
    planned = plan(pack, backend.name, out_path, mode=mode, model=model, shuffle_seed=shuffle_seed, cases=cases)
    if mode == "none":
        return _summary_none(planned, out_path, time.perf_counter() - t0)
    journal = Journal(journal_path(out_path))
    recovered = journal.open()
    keep = {cid: recovered.get(cid, line) for cid, line in planned.keep.items()}
    try:
        todo = [(req, planned.fingerprints[req.case_id]) for req in planned.todo]
        run = _Run(backend, journal, concurrency=concurrency, rpm=rpm, max_attempts=max_attempts,
                   timeout_s=timeout_s, backoff=(backoff_base_s, backoff_max_s), progress=progress,
                   total=len(todo), reused=len(keep), max_retry_after_s=max_retry_after_s)
        t_calls = time.perf_counter()
        try:
            await run.run(todo)
        except AuthError as exc:
            raise AuthError(f"{exc} (run stopped: {len(run.results)} finished cases kept in {journal.path}; "
                            "rerun to resume)") from None
        calls_s = time.perf_counter() - t_calls
    except BaseException:
        await journal.close()
        if journal.path.stat().st_size == 0:  # nothing journaled: leave no empty file behind
            journal.remove()
        raise
    await journal.close()
    final, chunks = _final_lines(pack, planned, run, keep, mode)
    unchanged = not todo and final == [planned.existing[cid] for cid in planned.order]
    if not unchanged:  # nothing asked and nothing dropped: leave the file (and its mtime) alone
        write_lines(out_path, chunks)
    served = Counter(line["model"] for line in final if isinstance(line.get("model"), str))
    info = backend_json(out_path.parent)
    if not unchanged or not info.exists():
        write_backend_json(info, backend, served.most_common(1)[0][0] if served else None)
    journal.remove()
    return RecordSummary(out_path, len(planned.requests), len(todo), len(keep), run.errors, tuple(sorted(served)),
                         time.perf_counter() - t0, len(todo) / calls_s if calls_s > 0 else 0.0, mode, run.retries)


def _final_lines(pack: Pack, planned: Plan, run: _Run, keep: Mapping[str, dict[str, Any]], mode: str
                 ) -> tuple[list[dict[str, Any]], list[Mapping[str, Any] | bytes]]:
    """The recording after this run, in pack order: this run's lines, kept ones, and every other
    case's line as it was (cases not chosen are never dropped); new_episodes also keeps lines of
    cases the pack no longer has. Lines answered now go in as the journal wrote them."""
    final: list[dict[str, Any]] = []
    chunks: list[Mapping[str, Any] | bytes] = []
    for case in pack.cases:
        cid = case.id
        line = run.results.get(cid) or keep.get(cid) or planned.existing.get(cid)
        if line is None:
            continue
        final.append(line)
        chunks.append(run.encoded.get(cid) or line)
    if mode == "new_episodes":
        for cid in planned.order:
            if cid not in pack.case_ids:
                final.append(planned.existing[cid])
                chunks.append(planned.existing[cid])
    return final, chunks


def _summary_none(planned: Plan, out_path: Path, elapsed: float) -> RecordSummary:
    cache: dict[int, tuple[Any, Mapping[str, AnswerSpec]]] = {}
    good = sum(usable(planned.existing.get(r.case_id), planned.fingerprints[r.case_id],
                      per_questions(cache, r.questions, specs_of), strict=False) for r in planned.requests)
    models = {str(line["model"]) for line in planned.existing.values() if isinstance(line.get("model"), str)}
    return RecordSummary(out_path, len(planned.requests), 0, good, len(planned.requests) - good,
                         tuple(sorted(models)), elapsed, 0.0, "none")


def write_backend_json(path: Path, backend: Backend, served_model: str | None) -> dict[str, Any]:
    """backend.json beside the recording: describe() + id, created/updated dates, pricing. No secrets."""
    info: dict[str, Any] = {"id": backend.backend_id(served_model)}
    info.update(backend.describe())
    info["id"] = backend.backend_id(served_model)
    today = datetime.now(timezone.utc).date().isoformat()
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        old = {}
    info["created"] = old.get("created", today) if isinstance(old, dict) else today
    info["updated"] = today
    info["pricing"] = _pricing(info.get("pricing"))
    atomic_write(path, scrub(json.dumps(info, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return info


def _pricing(described: Any) -> dict[str, float | None]:
    """The price a backend describes itself with; unknown (null) when it names none (a model
    without a list price: every built-in backend that knows its price says so in describe())."""
    keys = ("input_usd_per_mtok", "output_usd_per_mtok")
    if isinstance(described, Mapping) and all(k in described for k in keys):
        return {k: described[k] for k in keys}
    return dict.fromkeys(keys)


def record_pack_sync(pack: Pack, backend: Backend, out_path: Path, *, close_backend: bool = True,
                     **kw: Any) -> RecordSummary:
    """record_pack in a fresh event loop. Closes the backend's async resources at the end
    (they belong to that loop) unless close_backend=False."""

    async def main() -> RecordSummary:
        try:
            return await record_pack(pack, backend, out_path, **kw)
        finally:
            if close_backend:
                await backend.aclose()

    return asyncio.run(main())
