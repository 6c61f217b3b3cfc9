"""Answers per second of the embedded backends on a 3-question pack, single process.

    python benchmarks/bench_local.py [--cases 600] [--concurrency 8]

Mimics the recorder: every case is one Request with the pack's three questions,
answered through Backend.answer() with a bounded number in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from pytest_jev.backends.local import make_minilm, make_sparrow
from pytest_jev.wire import Request

QUESTIONS = {
    "refund": {"type": "noul", "instructions": "The customer asks for money back."},
    "queue": {"type": "choice", "instructions": "Which team should handle `message`?",
              "criteria": {"billing": "payments, charges, refunds and invoices",
                           "technical": "bugs, crashes and errors in the app", "unknown": "cannot tell"}},
    "urgency": {"type": "score", "instructions": "How urgent is `message`?",
                "criteria": ["can wait", "needs attention soon", "something is broken right now"]},
}
TEXTS = ["I was charged twice, please refund me", "The app crashes every time I open it",
         "What are your opening hours?", "Production server is down!", "No rush, next month is fine"]


async def run(backend, cases: int, concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            state = {"message": f"{TEXTS[i % len(TEXTS)]} (ticket {i})"}  # unique states: no state caching
            answer = await backend.answer(Request(f"c{i}", state, QUESTIONS, "local"))
            assert answer.error is None, answer.error

    await one(-1)  # warm-up: option embeddings, lazy tables
    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(cases)))
    return cases / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    for make in (make_sparrow, make_minilm):
        start = time.perf_counter()
        backend = make()
        loaded = time.perf_counter() - start
        rate = asyncio.run(run(backend, args.cases, args.concurrency))
        asyncio.run(backend.aclose())
        print(f"{backend.backend_id(None)}: load {loaded:.2f} s, {rate:.0f} cases/s "
              f"({args.cases} cases x 3 questions, concurrency {args.concurrency})")


if __name__ == "__main__":
    main()
