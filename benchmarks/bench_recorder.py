"""Recorder throughput against a loopback System One server (run: python benchmarks/bench_recorder.py).

Two scenarios, each with the server in its own process (tests/servers.py) so it does
not share the recorder's GIL:

1. rate-limited: the server answers in 50 ms and allows 1,200 requests/minute (a token
   bucket of 2; beyond it a 429 with Retry-After). The recorder runs with --rpm 1200.
   Target: >= 95% of the allowed rate (19 cases/s), zero lost cases.
2. unlimited: the server answers at once; the recorder runs with concurrency 32 and no
   rpm. Target: >= 300 cases/s.

Both go through the whole path: httpx, answer validation, the fsynced journal and the
atomic rewrite of the recording.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from packfiles import write_pack  # tests/ is put on sys.path above

from pytest_jev.backends.typesafe import TypeSafeBackend
from pytest_jev.packs import load_pack
from pytest_jev.record.engine import record_pack_sync


class Server:
    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "servers.py"), *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def stats(self) -> dict[str, int]:
        return httpx.get(f"{self.url}/stats").json()

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        self.proc.wait(10)


def run(name: str, server_args: list[str], n: int, allowed: float | None, target: float, **kw: object) -> dict:
    server = Server(*server_args)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            pack = load_pack(write_pack(Path(tmp) / "packs", n=n, pack_id=f"bench-{n}"))
            out = Path(tmp) / "results" / "bench.predictions.jsonl"
            summary = record_pack_sync(pack, TypeSafeBackend(base_url=server.url), out, **kw)
            lines = [json.loads(x) for x in out.read_text().splitlines()]
        stats = server.stats()
    finally:
        server.close()
    lost = n - sum(1 for x in lines if not x["error"])
    rate = summary.calls_per_s
    goal = target * allowed if allowed else target
    return {"scenario": name, "cases": n, "seconds": summary.elapsed_s, "cases/s": rate,
            "target": f">= {goal:.0f}/s" + (f" ({target:.0%} of {allowed:.0f})" if allowed else ""),
            "429s": stats["429"], "retries": summary.n_retries,
            "max req/case": stats["max_requests_per_case"], "lost": lost,
            "ok": rate >= goal and lost == 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0, help="length of the rate-limited run")
    parser.add_argument("--rpm", type=float, default=1200.0)
    parser.add_argument("--fast-cases", type=int, default=3000)
    args = parser.parse_args()
    os.environ.setdefault("TYPESAFE_API_KEY", "bench-not-a-real-key")
    per_s = args.rpm / 60
    rows = [
        run(f"rpm {args.rpm:.0f}, server 50 ms", ["--delay-ms", "50", "--rpm", str(args.rpm)],
            int(args.seconds * per_s), per_s, 0.95, rpm=args.rpm, concurrency=8),
        run("no limit, c=32, server 0 ms", [], args.fast_cases, None, 300.0, concurrency=32),
    ]
    cols = ["scenario", "cases", "seconds", "cases/s", "target", "429s", "retries", "max req/case", "lost", "ok"]
    cells = [[f"{r[c]:.1f}" if isinstance(r[c], float) else str(r[c]) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))
    sys.exit(0 if all(r["ok"] for r in rows) else 1)


if __name__ == "__main__":
    main()
