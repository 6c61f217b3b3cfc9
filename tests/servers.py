"""Loopback HTTP/1.1 servers speaking the System One format, for tests and benchmarks.

A small asyncio server (keep-alive, Content-Length bodies) running on its own event
loop in a thread, always bound to 127.0.0.1 on a free port. A handler decides each
reply; the server counts requests per case and the requests in flight.

Run as a script it serves well-formed answers with a delay and an optional
requests-per-minute limit (429 + Retry-After beyond it), printing ``PORT <n>``;
``GET /stats`` returns its counters as JSON. The benchmark runs it that way, in its
own process, so that the server does not share the client's GIL.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import math
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 408: "Request Timeout",
           422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error",
           503: "Service Unavailable", 529: "Overloaded"}


@dataclass
class Seen:
    t: float  # time.monotonic() when the request arrived
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # decoded JSON, or None
    case: str | None  # state["ref"] when the body has one
    n: int = 1  # this request's number for its case (1 = first)


@dataclass
class Reply:
    status: int = 200
    body: Any = b""  # bytes, str, or a JSON-able object
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False  # close the connection without answering


Handler = Callable[[Seen], Reply | Awaitable[Reply]]
Step = Callable[[Seen], Reply]


def per_case_script(scripts: Mapping[str, Sequence[Step]]) -> Step:
    """A handler that answers a case's n-th attempt with its n-th step (the last step repeats)."""

    def handle(seen: Seen) -> Reply:
        steps = scripts[seen.case or ""]
        return steps[min(seen.n, len(steps)) - 1](seen)

    return handle


def answers_for(questions: dict[str, Any], pick: int = 0) -> dict[str, Any]:
    """Well-formed System One answers to `questions`: the `pick`-th label gets most of the mass."""
    out: dict[str, Any] = {}
    for qid, q in questions.items():
        if q["type"] == "noul":
            out[qid] = {"type": "noul", "noul": 0.9 if pick % 2 == 0 else 0.1}
            continue
        labels = list(q["criteria"]) if q["type"] == "choice" else [str(i) for i in range(len(q["criteria"]))]
        top = pick % len(labels)
        probs = {lab: (0.9 if i == top else round(0.1 / (len(labels) - 1), 4)) for i, lab in enumerate(labels)}
        if q["type"] == "choice":
            out[qid] = {"type": "choice", "choice": labels[top], "confidence": 0.8, "probabilities": probs}
        else:
            score = sum(i * p for i, p in enumerate(probs.values()))
            out[qid] = {"type": "score", "score": round(score, 4), "confidence": 0.8,
                        "legend": {str(i): c for i, c in enumerate(q["criteria"])}, "probabilities": probs}
    return out


def ok_reply(seen: Seen, model: str = "jev-1.13.0", **kw: Any) -> Reply:
    body = {"model": model, "answers": answers_for(seen.body["questions"]),
            "usage": {"input_tokens": 100, "output_tokens": 10}}
    return Reply(200, body, {"x-typesafe-request-id": f"req-{seen.case}-{seen.n}"}, **kw)


class LoopbackServer:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.port = 0
        self.requests: list[Seen] = []
        self.per_case: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def __enter__(self) -> LoopbackServer:
        ready = threading.Event()

        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            self._server = self._loop.run_until_complete(asyncio.start_server(self._client, HOST, 0))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            try:
                self._loop.run_forever()
            finally:
                self._loop.run_until_complete(self._server.wait_closed())
                self._loop.close()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._thread is not None

        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            # every connection's task ends before the loop does: none is left pending and destroyed
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._loop.stop()  # type: ignore[union-attr]

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop)
        self._thread.join(5)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self._writers.add(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                seen = await self._parse(head, reader)
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    reply = self.handler(seen)
                    if inspect.isawaitable(reply):
                        reply = await reply
                    if reply.delay_s:
                        await asyncio.sleep(reply.delay_s)
                finally:
                    self.in_flight -= 1
                if reply.drop:
                    writer.transport.abort()
                    return
                writer.write(_encode(reply))
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _parse(self, head: bytes, reader: asyncio.StreamReader) -> Seen:
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        state = body.get("state") if isinstance(body, dict) else None
        case = str(state["ref"]) if isinstance(state, dict) and "ref" in state else None
        if case is not None:
            self.per_case[case] += 1
        seen = Seen(time.monotonic(), method, path, headers, body, case, self.per_case[case] if case else 1)
        self.requests.append(seen)
        return seen


def _encode(reply: Reply) -> bytes:
    body = reply.body
    if not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    data = body.encode("utf-8") if isinstance(body, str) else body
    headers = {"content-type": "application/json", **reply.headers, "content-length": str(len(data))}
    head = f"HTTP/1.1 {reply.status} {REASONS.get(reply.status, 'Status')}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return head.encode("latin-1") + b"\r\n" + data


class RateLimitedHandler:
    """Well-formed answers after `delay_s`; beyond `rpm` (token bucket of `burst`) a 429 + Retry-After."""

    def __init__(self, delay_s: float = 0.0, rpm: float | None = None, burst: float = 2.0) -> None:
        self.delay_s = delay_s
        self.rate = rpm / 60.0 if rpm else None
        self.burst = burst
        self.tokens = burst
        self.last = time.monotonic()
        self.n_ok = 0
        self.n_429 = 0
        self.cases: Counter[str] = Counter()

    def __call__(self, seen: Seen) -> Reply:
        if seen.path == "/stats":
            return Reply(200, {"ok": self.n_ok, "429": self.n_429, "max_requests_per_case":
                               max(self.cases.values(), default=0), "cases": len(self.cases)})
        if self.rate is not None:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
            self.last = now
            if self.tokens < 1:
                wait = (1 - self.tokens) / self.rate
                self.n_429 += 1
                return Reply(429, {"error": "rate limit exceeded"},
                             {"retry-after-ms": str(round(wait * 1000)), "retry-after": str(math.ceil(wait))})
            self.tokens -= 1
        self.n_ok += 1
        if seen.case:
            self.cases[seen.case] += 1
        return ok_reply(seen, delay_s=self.delay_s)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--rpm", type=float, default=None)
    parser.add_argument("--burst", type=float, default=2.0)
    args = parser.parse_args(argv)
    handler = RateLimitedHandler(args.delay_ms / 1000, args.rpm, args.burst)
    with LoopbackServer(handler) as server:
        print(f"PORT {server.port}", flush=True)
        sys.stdin.read()  # serve until the parent closes our stdin (or kills us)


if __name__ == "__main__":
    main()


SPARROW = shutil.which("sparrow-decider") or str(Path(sys.executable).with_name("sparrow-decider"))


@contextmanager
def sparrow_replica() -> Iterator[str]:
    """`sparrow-decider serve` on a free loopback port: a real Jev-compatible System One replica.
    Yields its base URL (with a trailing slash); skips when sparrow-decider is not installed."""
    import pytest

    if not Path(SPARROW).is_file():
        pytest.skip("sparrow-decider is not installed (pip install -e '.[local]'): "
                    "no System One replica to test against")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen([SPARROW, "serve", "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"sparrow-decider serve did not open port {port}")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        proc.wait(10)
