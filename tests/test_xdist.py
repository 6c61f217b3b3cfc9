"""The same outcomes, summary and --jev-json without xdist, with -n0 and with -n2."""

from __future__ import annotations

import json
import re

import pytest

from conftest import write_pack

pytest.importorskip("xdist")

MODES = [[], ["-n", "0"], ["-n", "2"], ["-n", "2", "--dist", "loadfile"]]


def _summary(out: str) -> str:
    """The jev summary and mismatch list, without the timed final line or the JSON file name."""
    text = out[out.index("=== jev: "):]
    lines = [line for line in text.splitlines() if not re.match(r"^=+ .* in [0-9.]+s", line)]
    return re.sub(r"run[0-9].json", "", "\n".join(lines))


@pytest.mark.slow
def test_same_results_with_and_without_xdist(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, pack_id="alpha", wrong={3, 7}, gates="min_accuracy: 0.95\nmax_ece: 0.5\n")
    write_pack(pytester.path, pack_id="beta", n=30, wrong={1})
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    seen = []
    for i, extra in enumerate(MODES):
        result = pytester.runpytest_subprocess("packs", f"--jev-json=run{i}.json", "-p", "no:cacheprovider", *extra)
        outcomes = result.parseoutcomes()
        lines = result.stdout.str()
        assert lines.count("jev: alpha v0.1.0") == 1, lines
        seen.append((outcomes, _summary(lines), (pytester.path / f"run{i}.json").read_text()))
    first = seen[0]
    assert first[0] == {"passed": 46, "failed": 1, "skipped": 2, "mismatched": 3}
    for other in seen[1:]:
        assert other[0] == first[0]
        assert other[1] == first[1]
        assert other[2] == first[2]
    runs = json.loads(first[2])["runs"]
    assert [r["pack"] for r in runs] == ["alpha", "beta"]
