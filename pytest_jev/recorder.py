"""Record a pack against a backend: async calls, pacing, retries, a crash-safe journal, resume.

Modes follow vcrpy: ``once`` calls only cases that are missing, recorded with an
error, or recorded for a different request (fingerprint); ``new_episodes`` does the
same but also keeps lines for case ids the pack no longer has; ``all`` records
everything afresh; ``none`` calls nothing and writes nothing. Whatever the mode, the
final recording holds exactly one line per case, in pack order, and replaces the
old file atomically only when the run completes (see journal.py for kill -9 safety).
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .backends.base import RECORD_VERSION, Answer, AuthError, Backend, Request, fingerprints, plugin_version
from .errors import OptionError
from .journal import Journal, atomic_write, journal_path, misfit, read_recording, scrub, write_lines
from .packs.model import Pack

MODES = ("once", "new_episodes", "all", "none")


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
class DryRun:
    n_calls: int
    est_input_tokens: int
    est_cost_usd: float | None  # None when the backend's list price is unknown


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def build_requests(pack: Pack, model: str, shuffle_seed: int | None = None) -> list[Request]:
    """One Request per case in pack order; choice options permuted per case when shuffle_seed is set.

    The permutation is seeded with (shuffle_seed, case id) rather than one stream over the pack,
    so a case's request, and hence its fingerprint, does not change when other cases are added.
    """
    sent = pack.questions_as_sent()
    out = []
    for case in pack.cases:
        questions = sent
        if shuffle_seed is not None:
            rng = random.Random(f"{shuffle_seed}:{case.id}")
            questions = {qid: _shuffled(q, rng) for qid, q in sent.items()}
        out.append(Request(case.id, dict(case.state), questions, model))
    return out


def _shuffled(question: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    if question["type"] != "choice":  # score levels are ordered: never permuted
        return question
    items = list(question["criteria"].items())
    rng.shuffle(items)
    return {**question, "criteria": dict(items)}


def _good(line: Mapping[str, Any] | None, fingerprint: str, *, strict: bool) -> bool:
    """A line worth keeping: no error, answers present, recorded for this very request.

    strict=False accepts a line without a fingerprint (a jevassert recording we cannot check).
    """
    if not line or line.get("error") or not isinstance(line.get("answers"), dict):
        return False
    recorded = line.get("request_fingerprint")
    return recorded == fingerprint or (not strict and recorded is None)


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


class _Run:
    def __init__(self, backend: Backend, journal: Journal, *, concurrency: int, rpm: float | None,
                 max_attempts: int, timeout_s: float, backoff: tuple[float, float],
                 progress: Callable[[Progress], None] | None, total: int, reused: int) -> None:
        self.backend, self.journal = backend, journal
        self.sem = asyncio.Semaphore(concurrency)
        self.pacer = _Pacer(rpm)
        self.max_attempts, self.timeout_s, self.backoff = max_attempts, timeout_s, backoff
        self.progress, self.total, self.reused = progress, total, reused
        self.base_url = getattr(backend, "base_url", None)
        self.version = plugin_version()
        self.done = self.errors = self.retries = 0
        self.t0 = time.perf_counter()
        self.results: dict[str, dict[str, Any]] = {}
        self.encoded: dict[str, bytes] = {}  # the journal's bytes of each result line, reused for the final file

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
        while True:
            async with self.sem:
                await self.pacer.wait()
                answer = await self._attempt(req if req.attempt == attempts else replace(req, attempt=attempts))
                attempts += 1
            problem, retryable = self._problem(req, answer)
            if problem is None:
                line = self._line(req, fp, answer, attempts, reasons, started, None)
                break
            if not retryable or attempts >= self.max_attempts:
                line = self._line(req, fp, answer, attempts, reasons, started, (problem, retryable))
                break
            reasons.append(problem[:120])
            self.retries += 1
            await asyncio.sleep(self._delay(answer, attempts))
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

    @staticmethod
    def _problem(req: Request, answer: Answer) -> tuple[str | None, bool]:
        if answer.error:
            return str(answer.error), bool(answer.retryable)
        if answer.answers is None:
            return "malformed: no answers", True
        wrong = misfit(req.questions, answer.answers)
        return (f"misfit: {wrong}", True) if wrong else (None, False)

    def _delay(self, answer: Answer, attempts: int) -> float:
        if answer.retry_after_s is not None:  # the server said how long: wait at least that
            if answer.http_status == 429:
                self.pacer.hold(answer.retry_after_s)
            return answer.retry_after_s
        base, cap = self.backoff
        return float(min(cap, base * 2 ** (attempts - 1)) * (1 - 0.25 * random.random()))

    def _line(self, req: Request, fp: str, answer: Answer, attempts: int, reasons: list[str], started: str,
              failure: tuple[str, bool] | None) -> dict[str, Any]:
        ok = failure is None
        line: dict[str, Any] = {
            "case_id": req.case_id, "model": answer.model if ok else None,
            "latency_ms": answer.latency_ms if ok else None, "usage": answer.usage if ok else None,
            "answers": answer.answers if ok else None, "error": failure[0][:200] if failure else None,
            "record_version": RECORD_VERSION, "backend": self.backend.name, "mode": self.backend.mode}
        if self.base_url:
            line["base_url"] = self.base_url
        line.update(requested_model=req.model, request_fingerprint=fp, attempts=attempts,
                    retry_reasons=reasons, http_status=answer.http_status, request_id=answer.request_id,
                    started_at=started, finished_at=_now(),
                    error_detail=_detail(answer, *failure) if failure else None, plugin_version=self.version)
        for key, value in (answer.extra or {}).items():
            line.setdefault(key, value)
        return line

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


def _check_args(mode: str, concurrency: int, rpm: float | None, max_attempts: int, timeout_s: float) -> None:
    if mode not in MODES:
        raise OptionError(f"unknown record mode '{mode}'", fix=f"use one of: {', '.join(MODES)}")
    if concurrency < 1 or max_attempts < 1 or timeout_s <= 0 or (rpm is not None and rpm <= 0):
        raise OptionError("concurrency and max_attempts must be >= 1; timeout and rpm must be > 0")


async def record_pack(pack: Pack, backend: Backend, out_path: Path, *, mode: str = "once", concurrency: int = 8,
                      rpm: float | None = None, model: str | None = None, max_attempts: int = 4,
                      timeout_s: float = 30.0, progress: Callable[[Progress], None] | None = None,
                      shuffle_seed: int | None = None, backoff_base_s: float = 0.5,
                      backoff_max_s: float = 8.0) -> RecordSummary:
    """Record `pack` with `backend` into `out_path` (JSONL); see the module docstring for modes."""
    _check_args(mode, concurrency, rpm, max_attempts, timeout_s)
    out_path = Path(out_path)
    t0 = time.perf_counter()
    requests = build_requests(pack, model or pack.record_model, shuffle_seed)
    fps = dict(zip((req.case_id for req in requests), fingerprints(requests, backend.name)))
    existing, order = read_recording(out_path) if mode != "all" else ({}, [])
    if mode == "none":
        return _summary_none(out_path, requests, fps, existing, time.perf_counter() - t0)
    journal = Journal(journal_path(out_path))
    recovered = journal.open()
    try:
        keep: dict[str, dict[str, Any]] = {}
        for req in requests:
            fp = fps[req.case_id]
            if _good(recovered.get(req.case_id), fp, strict=True):
                keep[req.case_id] = recovered[req.case_id]
            elif mode != "all" and _good(existing.get(req.case_id), fp, strict=False):
                keep[req.case_id] = existing[req.case_id]
        todo = [(req, fps[req.case_id]) for req in requests if req.case_id not in keep]
        run = _Run(backend, journal, concurrency=concurrency, rpm=rpm, max_attempts=max_attempts,
                   timeout_s=timeout_s, backoff=(backoff_base_s, backoff_max_s), progress=progress,
                   total=len(todo), reused=len(keep))
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
    final = [run.results.get(req.case_id) or keep[req.case_id] for req in requests]
    if mode == "new_episodes":  # keep lines of cases the pack no longer has
        final += [existing[cid] for cid in order if cid not in fps]
    unchanged = not todo and final == [existing[cid] for cid in order]
    if not unchanged:  # nothing asked and nothing dropped: leave the file (and its mtime) alone
        # lines answered in this run go in as the journal wrote them (same dict, same encoding)
        chunks: list[Mapping[str, Any] | bytes] = [run.encoded.get(req.case_id) or line
                                                  for req, line in zip(requests, final)]
        chunks.extend(final[len(requests):])  # new_episodes: lines of cases the pack no longer has
        write_lines(out_path, chunks)
    served = Counter(line["model"] for line in final if isinstance(line.get("model"), str))
    backend_json = out_path.parent / "backend.json"
    if not unchanged or not backend_json.exists():
        write_backend_json(backend_json, backend, served.most_common(1)[0][0] if served else None)
    journal.remove()
    return RecordSummary(out_path, len(requests), len(todo), len(keep), run.errors, tuple(sorted(served)),
                         time.perf_counter() - t0, len(todo) / calls_s if calls_s > 0 else 0.0, mode, run.retries)


def _summary_none(out_path: Path, requests: list[Request], fps: Mapping[str, str],
                  existing: Mapping[str, Mapping[str, Any]], elapsed: float) -> RecordSummary:
    good = sum(_good(existing.get(r.case_id), fps[r.case_id], strict=False) for r in requests)
    models = {str(line["model"]) for line in existing.values() if isinstance(line.get("model"), str)}
    return RecordSummary(out_path, len(requests), 0, good, len(requests) - good, tuple(sorted(models)),
                         elapsed, 0.0, "none")


def write_backend_json(path: Path, backend: Backend, served_model: str | None) -> dict[str, Any]:
    """backend.json beside the recording: describe() + id, created/updated dates, pricing. No secrets."""
    info: dict[str, Any] = {"id": backend.backend_id(served_model)}
    info.update(backend.describe())
    info["id"] = backend.backend_id(served_model)
    today = datetime.now(timezone.utc).date().isoformat()
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = {}
    info["created"] = old.get("created", today) if isinstance(old, dict) else today
    info["updated"] = today
    info["pricing"] = _pricing(backend, info.get("pricing"))
    atomic_write(path, scrub(json.dumps(info, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return info


def _pricing(backend: Backend, described: Any) -> dict[str, float | None]:
    keys = ("input_usd_per_mtok", "output_usd_per_mtok")
    if isinstance(described, Mapping) and all(k in described for k in keys):
        return {k: described[k] for k in keys}
    from .backends.registry import list_price

    price = list_price(backend.name, getattr(backend, "model", None))
    return dict(zip(keys, price)) if price else dict.fromkeys(keys)


def dry_run(pack: Pack, backend_name: str, model: str | None = None, *, out_path: Path | None = None,
            mode: str = "once") -> DryRun:
    """What recording would cost: calls, input tokens (~4 characters each) and USD at list price.

    With out_path, cases that already have an answer (no error) there are not counted
    (modes once/new_episodes; fingerprints are not checked here).
    """
    from .backends.registry import list_price

    _check_args(mode, 1, None, 1, 1.0)
    questions = pack.questions_as_sent()
    existing = read_recording(Path(out_path))[0] if out_path is not None and mode != "all" else {}
    answered = {cid for cid, line in existing.items() if not line.get("error") and isinstance(line.get("answers"), dict)}
    todo = [] if mode == "none" else [c for c in pack.cases if c.id not in answered]
    q_text = json.dumps(questions)
    tokens = sum(len(json.dumps(dict(c.state)) + q_text) // 4 + 1 for c in todo)
    price = list_price(backend_name, model)
    return DryRun(len(todo), tokens, tokens * price[0] / 1e6 if price else None)


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
