"""Pacing and backoff: when the next request may start (--jev-rpm, a 429's Retry-After) and how
long to wait before retrying an attempt."""

from __future__ import annotations

import asyncio
import random

BACKOFF_S = (0.5, 8.0)  # exponential backoff: base and cap, seconds


class Pacer:
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


def backoff_delay(attempts: int, backoff: tuple[float, float] = BACKOFF_S) -> float:
    """Seconds before retry number `attempts`: exponential from the base up to the cap, with
    up to a quarter taken off at random so that workers do not retry in step."""
    base, cap = backoff
    return float(min(cap, base * 2 ** (attempts - 1)) * (1 - 0.25 * random.random()))
