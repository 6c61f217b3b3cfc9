"""Recording speed of the embedded sparrow backend through the whole recorder path.

    python benchmarks/bench_record_local.py [--pack packs/support-triage] [--cases N]
                                            [--repeats 3] [--concurrency 8] [--profile FILE]

Loads a pack (default: packs/support-triage; with --cases N a synthetic N-case pack made
by make_pack.py instead), builds the sparrow backend once, then records the pack with
record_pack_sync(mode="all") into a temporary folder --repeats times: request building,
fingerprints, asyncio with the semaphore and pacer, the crash-safe journal (one write
per finished case), the atomic final recording and backend.json. For each run it prints
the recorder's own calls/s (RecordSummary.calls_per_s, the calls only) and the wall-clock
cases/s of the whole record_pack_sync call; first it prints the backend alone on the same
requests (Backend.answer() under a semaphore, as bench_local.py does), the ceiling the
recorder can approach. Every run starts with the backend's text caches emptied
(SparrowBackend.clear_cache()), as cold as a fresh `pytest --jev-record` process.
Target (issue): >= 200 cases/s on a 2-core machine.
--profile FILE writes a cProfile of one more recording run to FILE (read it with pstats).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from make_pack import main as make_pack

from pytest_jev.backends.local import make_sparrow
from pytest_jev.packs import load_pack
from pytest_jev.record.engine import record_pack_sync
from pytest_jev.record.plan import build_requests


def forget(backend) -> None:
    """Drop the backend's text caches (a backend without clear_cache() has none of its own to drop)."""
    getattr(backend, "clear_cache", lambda: None)()


async def backend_alone(backend, requests, concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one(request) -> None:
        async with gate:
            answer = await backend.answer(request)
            assert answer.error is None, answer.error

    forget(backend)  # a fresh process has pooled no text yet
    start = time.perf_counter()
    await asyncio.gather(*(one(r) for r in requests))
    return len(requests) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pack", type=Path, default=ROOT / "packs" / "support-triage")
    parser.add_argument("--cases", type=int, default=0, help="record a synthetic pack of N cases instead")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--profile", type=Path, default=None, help="cProfile one more run into this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_pack(Path(tmp), args.cases) if args.cases else args.pack
        start = time.perf_counter()
        pack = load_pack(folder)
        pack_s = time.perf_counter() - start
        start = time.perf_counter()
        backend = make_sparrow()
        load_s = time.perf_counter() - start
        n = len(pack.cases)
        print(f"{pack.id}: {n} cases x {len(pack.questions)} questions; pack load {pack_s:.2f} s, "
              f"{backend.backend_id(None)} load {load_s:.2f} s, concurrency {args.concurrency}")
        requests = build_requests(pack, pack.record_model)
        alone = [asyncio.run(backend_alone(backend, requests, args.concurrency)) for _ in range(args.repeats)]
        print(f"backend alone (answer() on the pack's requests, cold caches): "
              f"{' '.join(f'{x:.0f}' for x in alone)} cases/s")
        for i in range(args.repeats + bool(args.profile)):
            out = Path(tmp) / f"run{i}" / f"{pack.id}.predictions.jsonl"
            profiler = cProfile.Profile() if i == args.repeats else None
            forget(backend)  # each run starts as cold as a fresh `pytest --jev-record` would
            start = time.perf_counter()
            if profiler:
                profiler.enable()
            summary = record_pack_sync(pack, backend, out, mode="all", concurrency=args.concurrency,
                                       close_backend=False)
            wall = time.perf_counter() - start
            if profiler:
                profiler.disable()
                profiler.dump_stats(str(args.profile))
                print(f"profile of one run written to {args.profile}")
                continue
            lines = out.read_bytes().count(b"\n")
            assert lines == n and summary.n_errors == 0, (lines, summary)
            print(f"run {i + 1}: recorder {summary.calls_per_s:.0f} calls/s, end to end {n / wall:.0f} cases/s "
                  f"({wall:.3f} s wall for {n} cases)")
        asyncio.run(backend.aclose())


if __name__ == "__main__":
    main()
