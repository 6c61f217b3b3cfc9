"""--jev-repeat N: N recorded rounds beside each other and the flip rate between them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packfiles import write_pack
from servers import LoopbackServer, Reply, Seen, answers_for, ok_reply

from pytest_jev import load_pack
from pytest_jev.paths import round_path
from pytest_jev.stability import stability

ROUNDS_FLIPPING = {"c-002": {2, 3}, "c-004": {3}}  # case -> rounds whose answers differ from round 1


def drifting(seen: Seen) -> Reply:
    """Every answer of c-002 changes from round 2 on, every answer of c-004 in round 3 only."""
    reply = ok_reply(seen)
    if seen.n in ROUNDS_FLIPPING.get(seen.case or "", ()):
        reply.body["answers"] = answers_for(seen.body["questions"], pick=1)
    return reply


def expected_discordant(folder: Path) -> int:
    """jevassert's count, worked out by hand from the gold labels: pick 0 decides
    (refund true, billing, low), pick 1 (refund false, technical, high)."""
    pick = [{"refund": True, "queue": "billing", "urgency": "low"},
            {"refund": False, "queue": "technical", "urgency": "high"}]
    total = 0
    for case in load_pack(folder).cases:
        for _round in ROUNDS_FLIPPING.get(case.id, ()):
            total += sum((pick[0][q] == gold) != (pick[1][q] == gold) for q, gold in case.expect.items())
    return total


def test_repeat_records_rounds_and_reports_the_flip_rate(pytester: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "test-key")
    folder = write_pack(pytester.path / "packs", n=5)
    with LoopbackServer(drifting) as server:
        args = ["packs", "--jev-record", "--jev-backend=jev", "--jev-base-url", server.base_url,
                "--jev-repeat", "3", "--jev-json", "out.json"]
        result = pytester.runpytest(*args)
        assert dict(server.per_case) == {f"c-00{i}": 3 for i in range(1, 6)}  # each case asked once a round
        result.assert_outcomes(passed=4)  # 3 checks and the gate; the 5 cases mismatch their gold labels
        first = pytester.path / "results" / "jev-1.13.0" / "tiny-pack.predictions.jsonl"
        assert [p.name for p in sorted(first.parent.glob("*.jsonl"))] == [
            "tiny-pack.predictions-r2.jsonl", "tiny-pack.predictions-r3.jsonl", "tiny-pack.predictions.jsonl"]
        discordant = expected_discordant(folder)
        result.stdout.fnmatch_lines([
            "jev recorded tiny-pack round 1/3: 5 called*", "jev recorded tiny-pack round 3/3: 5 called*",
            "jev stability tiny-pack: 3 rounds, 15 decisions compared, 6 flipped (flip rate 0.400; "
            f"queue 0.400, refund 0.400, urgency 0.400); {discordant} discordant correct/wrong pairs*"])
        assert sorted(p.name for p in (pytester.path / "results").iterdir()) == ["jev-1.13.0"]
        report = json.loads((pytester.path / "out.json").read_text())
        assert len(report["runs"]) == 1 and report["runs"][0]["recording"].endswith("tiny-pack.predictions.jsonl")
        (stable,) = report["stability"]
        assert (stable["rounds"], stable["items"], stable["flipped"], stable["flip_rate"]) == (3, 15, 6, 0.4)
        assert stable["flipped_cases"] == ["c-002", "c-004"]
        assert stable["by_question"]["refund"] == {"items": 5, "flipped": 2, "flip_rate": 0.4}

        # a second run finds every round complete: nothing is asked again, the figures hold
        again = pytester.runpytest(*args[:-2])
        assert sum(server.per_case.values()) == 15
        assert sorted(p.name for p in (pytester.path / "results").iterdir()) == ["jev-1.13.0"]
        again.stdout.fnmatch_lines(["jev recorded tiny-pack round 2/3: 0 called, 5 reused*",
                                    "jev stability tiny-pack: 3 rounds, 15 decisions compared, 6 flipped*"])


def test_stability_skips_missing_rounds_and_undecided_items(tmp_path: Path) -> None:
    folder = write_pack(tmp_path / "packs", n=2)
    pack = load_pack(folder)
    first = tmp_path / "tiny-pack.predictions.jsonl"
    questions = pack.questions_as_sent()

    def line(cid: str, pick: int, error: str | None = None) -> str:
        answers = None if error else answers_for(questions, pick)
        return json.dumps({"case_id": cid, "model": "m", "answers": answers, "error": error})

    first.write_text(line("c-001", 0) + "\n" + line("c-002", 0) + "\n")
    round_path(first, 3).write_text(line("c-001", 1) + "\n" + line("c-002", 0, error="HTTP 500") + "\n")
    result = stability(pack, first, 3)  # round 2 was never recorded; c-002 failed in round 3
    assert (result.rounds, result.items, result.flipped, result.flipped_cases) == (2, 3, 3, ("c-001",))
    assert stability(pack, first, 1).line() == (
        "jev stability tiny-pack: 1 round(s), no decision answered in two rounds")


def test_repeat_needs_a_recording_run_and_multiplies_the_dry_run(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path / "packs", n=4)
    refused = pytester.runpytest("packs", "--jev-repeat", "2")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*--jev-repeat=2 repeats a recording, but nothing is recorded*--jev-record*"])
    zero = pytester.runpytest("packs", "--jev-record", "--jev-backend=mock", "--jev-repeat", "0")
    zero.stderr.fnmatch_lines(["*--jev-repeat='0' is not a whole number >= 1*"])
    dry = pytester.runpytest("packs", "--jev-dry-run", "--jev-backend=jev", "--jev-repeat", "3")
    dry.stdout.fnmatch_lines(["jev dry run tiny-pack: 12 calls over 3 rounds, ~* input + ~0 output tokens*"])
    assert not (pytester.path / "results").exists()
