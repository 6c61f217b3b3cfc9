"""The `jev` fixture recorded with the `jev` backend against a real Jev-compatible replica
(`sparrow-decider serve`), then replayed with the network blocked and no key."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fixture_helpers import NO_NETWORK, outcomes
from fixture_suite import SUITE
from servers import sparrow_replica

pytestmark = pytest.mark.slow

KEY = "tsk-test-SECRET-fixture-0123456789"


@pytest.fixture(scope="module")
def replica() -> Iterator[str]:
    with sparrow_replica() as url:
        yield url.rstrip("/")


def test_record_against_the_replica_then_replay_offline(pytester: pytest.Pytester, replica: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    tests = pytester.mkdir("tests")
    (tests / "test_suite.py").write_text(SUITE)
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    recorded = pytester.runpytest("-p", "no:cacheprovider", "-rA", "tests", "--jev-record", "--jev-backend=jev",
                                  f"--jev-base-url={replica}")
    recorded.stdout.fnmatch_lines(["jev: 48 questions · * requests * · $* · * s in jev · sparrow-nano-general-v1.1",
                                   "jev: wrote tests/jev_answers/test_suite.jsonl: * new, 0 re-recorded"])
    expected = outcomes(recorded.stdout.str())
    assert len(expected) == 49
    written = (tests / "jev_answers" / "test_suite.jsonl").read_text()
    everything = "\n".join(p.read_text(errors="replace") for p in pytester.path.rglob("*") if p.is_file())
    assert KEY not in everything and replica not in written and '"backend": "jev"' in written

    monkeypatch.delenv("TYPESAFE_API_KEY")
    (tests / "conftest.py").write_text(NO_NETWORK)
    for args in (["--jev-backend=jev"], []):
        replayed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-rA", "tests", *args)
        assert outcomes(replayed.stdout.str()) == expected
        replayed.stdout.fnmatch_lines(["jev: 48 questions · 0 requests + * replayed · 0 input tokens · $0 · 0.00 s in "
                                       "jev · sparrow-nano-general-v1.1"])
    # the same answers under sparrow are other requests (another backend): not recorded, so they fail
    (tests / "test_new.py").write_text("def test_new(jev):\n    assert jev.holds('a new reply', 'is new')\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "tests/test_new.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["jev: no recorded answer for tests/test_new.py::test_new: holds 'is new' (any "
                                 "backend, tests/jev_answers/test_new.jsonl); record it with `pytest "
                                 "tests/test_new.py::test_new --jev-record=new_episodes --jev-backend=jev`"])
