"""Replay speed and memory: per-case items against pytest's own per-item cost, bulk mode against jevassert.

    python benchmarks/bench_replay.py [--cases 100000] [--pairs 4] [--bulk 10000,100000] [--jevassert PATH]

1. baseline: pytest collecting N trivial items from a minimal non-Python collector
   (a conftest that yields N items whose runtest does nothing);
2. ours: `pytest packs/bench-N --jev-case-items=all` on a 3-question pack of N cases
   (--pairs runs 1 and 2 alternately N times and prints the aggregate, median and best ratios);
3. bulk: `pytest packs/bench-N --jev-case-items=none`, and `jevassert check` on the same files
   when --jevassert points at its executable.
Wall time and peak RSS of each process are printed as a table, and for the per-case pairs also
the time to the end of the session (pytest_unconfigure, before the interpreter's own teardown:
its final garbage collections walk everything the session built, which is not per-item work).
Every pytest run has plugin
autoloading off (PYTEST_DISABLE_PLUGIN_AUTOLOAD=1; ours is loaded with -p), so other plugins in
the environment, such as hypothesis (0.7 s of start-up), weigh on neither side.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from make_pack import main as make_pack

BASELINE_CONFTEST = '''
import pytest
N = {n}
class Trivial(pytest.Item):
    def runtest(self):
        pass
class Many(pytest.File):
    def collect(self):
        for i in range(N):
            yield Trivial.from_parent(self, name=f"case[{{i}}]")
def pytest_collect_file(file_path, parent):
    if file_path.name == "items.txt":
        return Many.from_parent(parent, path=file_path)
'''


END_CLOCK = '''
import os, time
def pytest_unconfigure(config):
    with open(os.environ["BENCH_END_FILE"], "w") as out:
        out.write(repr(time.time()))
'''


def timed(cmd: list[str], cwd: Path, end_file: Path | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one command, read from its own rusage."""
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")  # no third-party plugins in either run
    if end_file is not None:
        env.update(BENCH_END_FILE=str(end_file), PYTHONPATH=str(end_file.parent))
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, _, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - t, usage.ru_maxrss / 1024


def to_session_end(cmd: list[str], cwd: Path, clock: Path) -> tuple[float, float, float]:
    """(wall seconds, seconds to the end of the session, peak MB) of a pytest run."""
    end_file = clock / "end.txt"
    start = time.time()
    wall, peak = timed([*cmd, "-p", "bench_end_clock"], cwd, end_file)
    return wall, float(end_file.read_text()) - start, peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--pairs", type=int, default=1,
                    help="baseline/per-case runs, interleaved (this machine is shared: use several)")
    ap.add_argument("--bulk", default="10000,100000")
    ap.add_argument("--jevassert", default=None, help="jevassert executable to compare bulk runs with")
    ap.add_argument("--jevassert-max", type=int, default=20_000,
                    help="largest pack jevassert is run on (it takes 15+ minutes at 100,000 cases)")
    args = ap.parse_args()
    py = sys.executable
    common = ["-q", "-p", "no:cacheprovider"]
    jev = [*common, "-p", "pytest_jev.plugin"]  # plugin autoload is off: load ours explicitly
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = root / "baseline"
        base.mkdir()
        (base / "conftest.py").write_text(BASELINE_CONFTEST.format(n=args.cases))
        (base / "items.txt").write_text("")
        (base / "pytest.ini").write_text("[pytest]\n")
        (root / "pytest.ini").write_text("[pytest]\njev_backend = bench\n")
        make_pack(root, args.cases)
        clock = root / "clock"
        clock.mkdir()
        (clock / "bench_end_clock.py").write_text(END_CLOCK)
        pairs, ends = [], []
        for _ in range(args.pairs):  # interleaved, so both sides see the same machine load
            t_base, e_base, m_base = to_session_end([py, "-m", "pytest", "items.txt", *common], base, clock)
            t_ours, e_ours, m_ours = to_session_end([py, "-m", "pytest", f"packs/bench-{args.cases}",
                                                     "--jev-case-items=all", *jev], root, clock)
            pairs.append((t_base, t_ours))
            ends.append((e_base, e_ours))
            rows.append((f"baseline: {args.cases} trivial items", t_base, m_base, f"session end {e_base:.1f} s"))
            rows.append((f"jev: {args.cases} case items", t_ours, m_ours,
                         f"{t_ours / t_base:.2f}x baseline; session end {e_ours:.1f} s, {e_ours / e_base:.2f}x"))
        if args.pairs > 1:
            for label, runs in (("whole process", pairs), ("to session end", ends)):
                bases, ours = [b for b, _ in runs], [o for _, o in runs]
                summary = (f"{args.pairs} pairs: {sum(ours) / sum(bases):.2f}x aggregate, "
                           f"{statistics.median(o / b for b, o in runs):.2f}x median pair, "
                           f"{min(ours) / min(bases):.2f}x best against best")
                rows.append((f"per-case items, {label}", sum(ours) / len(ours), 0.0, summary))
        for n in [int(x) for x in args.bulk.split(",") if x]:
            if n != args.cases:
                make_pack(root, n)
            t_bulk, m_bulk = timed([py, "-m", "pytest", f"packs/bench-{n}", "--jev-case-items=none", *jev],
                                   root)
            note = ""
            if args.jevassert and n <= args.jevassert_max:
                t_ja, m_ja = timed([args.jevassert, "check", f"packs/bench-{n}", "-p",
                                    f"results/bench/bench-{n}.predictions.jsonl"], root)
                rows.append((f"jevassert check: {n} cases", t_ja, m_ja, ""))
                note = f"{t_ja / t_bulk:.1f}x faster than jevassert"
            rows.append((f"jev bulk: {n} cases", t_bulk, m_bulk, note))
    print(f"{'run':<36} {'seconds':>9} {'peak MB':>9}  note")
    for name, t, m, note in rows:
        print(f"{name:<36} {t:>9.2f} {m:>9.0f}  {note}")


if __name__ == "__main__":
    main()
