"""Record a pack against a backend: plan, run, journal, finalise (each in its own module here).

Modes follow vcrpy (modes.py): ``new_episodes`` (a bare --jev-record) calls only cases that
are missing, recorded with an error, recorded for a different request (fingerprint) or
recorded with an answer that breaks the answer contract; ``once`` calls nothing when the
recording exists and records like ``new_episodes`` when it does not; ``all`` records the
chosen cases afresh; ``none`` calls nothing and writes nothing. Lines of cases the pack no
longer has are dropped. Only the chosen cases are ever called (pytest's selection:
`-k`, node ids, `--deselect`); every other case keeps the line it has. The final
recording holds one line per case it has an answer or error for, in pack order, and
replaces the old file atomically only when the run completes (see journal.py for kill -9
safety).

plan.py works out what a run calls and keeps, pacing.py when requests start, driver.py asks
the backend (retries, billing, the recording line of each case), journal.py keeps finished
lines safe, finalise.py writes the recording and backend.json.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..backends.base import AuthError, Backend
from ..errors import OptionError
from ..fileio import write_lines
from ..packs.model import Case, Pack
from ..paths import backend_json
from .driver import MAX_ATTEMPTS, MAX_RETRY_AFTER_S, TIMEOUT_S, CaseRunner, Progress
from .finalise import RecordSummary, final_lines, summary_none, write_backend_json
from .journal import Journal, journal_path
from .modes import BARE
from .pacing import BACKOFF_S
from .plan import check_mode, plan


def _check_args(mode: str, concurrency: int, rpm: float | None, max_attempts: int, timeout_s: float) -> None:
    check_mode(mode)
    if concurrency < 1 or max_attempts < 1 or timeout_s <= 0 or (rpm is not None and rpm <= 0):
        raise OptionError("concurrency and max_attempts must be >= 1; timeout and rpm must be > 0")


async def record_pack(pack: Pack, backend: Backend, out_path: Path, *, mode: str = BARE, concurrency: int = 8,
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
    if not planned.calls:  # none; once where the recording exists
        return summary_none(planned, out_path, time.perf_counter() - t0, mode)
    journal = Journal(journal_path(out_path))
    recovered = journal.open()
    keep = {cid: recovered.get(cid, line) for cid, line in planned.keep.items()}
    try:
        todo = [(req, planned.fingerprints[req.case_id]) for req in planned.todo]
        run = CaseRunner(backend, journal, concurrency=concurrency, rpm=rpm, max_attempts=max_attempts,
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
    final, chunks = final_lines(pack, planned, run, keep)
    unchanged = not todo and [line.to_json() for line in final] == [planned.existing[cid].to_json()
                                                                     for cid in planned.order]
    if not unchanged:  # nothing asked and nothing dropped: leave the file (and its mtime) alone
        write_lines(out_path, chunks)
    served = Counter(model for line in final if (model := line.model) is not None)
    info = backend_json(out_path.parent)
    if not unchanged or not info.exists():
        write_backend_json(info, backend, served.most_common(1)[0][0] if served else None)
    journal.remove()
    return RecordSummary(out_path, len(planned.requests), len(todo), len(keep), run.errors, tuple(sorted(served)),
                         time.perf_counter() - t0, len(todo) / calls_s if calls_s > 0 else 0.0, mode, run.retries)


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
