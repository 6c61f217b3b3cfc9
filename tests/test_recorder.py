"""The recorder: modes, resume by fingerprint, journal recovery, pacing, concurrency, kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from packfiles import case_id, set_message, write_pack
from servers import LoopbackServer, ok_reply

from pytest_jev.backends.base import Answer, AuthError
from pytest_jev.backends.catalog import Catalog, backend_from
from pytest_jev.backends.mock import MockBackend
from pytest_jev.contract import answers_problems, specs_of
from pytest_jev.errors import OptionError
from pytest_jev.packs import load_pack
from pytest_jev.record.engine import record_pack_sync
from pytest_jev.record.journal import journal_path
from pytest_jev.record.plan import build_requests, plan
from pytest_jev.recording_file import load_recording
from pytest_jev.wire import Request

FAST = {"backoff_base_s": 0.001, "backoff_max_s": 0.01}
LINE_KEYS = ["case_id", "model", "latency_ms", "usage", "answers", "error", "record_version", "backend", "mode",
             "requested_model", "request_fingerprint", "state_fingerprint", "rubric_fingerprint",
             "question_fingerprints", "attempts", "retry_reasons", "http_status", "request_id",
             "started_at", "finished_at", "error_detail", "plugin_version"]


class Counting(MockBackend):
    """The mock oracle, remembering which cases it was asked (and when each attempt started)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.asked: list[str] = []
        self.starts: list[float] = []

    async def answer(self, request: Request) -> Answer:
        self.asked.append(request.case_id)
        self.starts.append(time.monotonic())
        return await super().answer(request)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def pack_dir(tmp_path: Path) -> Path:
    return write_pack(tmp_path / "packs", n=8)


def test_line_format_and_backend_json(pack_dir: Path, tmp_path: Path) -> None:
    pack = load_pack(pack_dir)
    out = tmp_path / "results" / "mock-7" / "tiny-pack.predictions.jsonl"
    summary = record_pack_sync(pack, MockBackend.from_pack(pack, seed=7), out)
    lines = lines_of(out)
    assert [line["case_id"] for line in lines] == [c.id for c in pack.cases]
    assert list(lines[0]) == LINE_KEYS  # mock has no base_url, so it is left out
    assert lines[0]["mode"] == "mock" and lines[0]["backend"] == "mock" and lines[0]["attempts"] == 1
    assert lines[0]["finished_at"].endswith("Z") and lines[0]["request_fingerprint"].startswith("sha256:")
    assert summary.n_called == 8 and summary.served_models == ("mock-7",)
    assert load_recording(out).models() == ["mock-7"]
    info = json.loads((out.parent / "backend.json").read_text())
    assert info["id"] == "mock-7" and info["pricing"] == {"input_usd_per_mtok": 0.0, "output_usd_per_mtok": 0.0}
    info["created"] = "2020-01-01"
    (out.parent / "backend.json").write_text(json.dumps(info))
    record_pack_sync(pack, MockBackend.from_pack(pack, seed=7), out, mode="all")
    again = json.loads((out.parent / "backend.json").read_text())
    assert again["created"] == "2020-01-01" and again["updated"] != "2020-01-01"
    assert not journal_path(out).exists()


def test_modes(pack_dir: Path, tmp_path: Path) -> None:
    pack = load_pack(pack_dir)
    out = tmp_path / "rec.jsonl"
    ids = [c.id for c in pack.cases]

    backend = Counting.from_pack(pack)
    record_pack_sync(pack, backend, out, close_backend=False)
    assert backend.asked == ids
    first = out.read_bytes()

    mtime = out.stat().st_mtime_ns
    backend = Counting.from_pack(pack)
    summary = record_pack_sync(pack, backend, out, close_backend=False)
    assert backend.asked == [] and summary.n_reused == 8 and out.read_bytes() == first
    assert out.stat().st_mtime_ns == mtime  # nothing to do: the file is not even rewritten

    # an error line, a missing line and an orphan (a case the pack no longer has)
    lines = lines_of(out)
    lines[1].update(answers=None, model=None, error="HTTP 500: boom")
    orphan = dict(lines[0], case_id="gone-001")
    kept = [line for i, line in enumerate(lines) if i != 2] + [orphan]
    out.write_text("".join(json.dumps(x) + "\n" for x in kept))
    backend = Counting.from_pack(pack)
    record_pack_sync(pack, backend, out, close_backend=False)
    assert sorted(backend.asked) == [ids[1], ids[2]]
    assert [x["case_id"] for x in lines_of(out)] == ids  # new_episodes (bare): exactly the pack's cases, in order

    # once: a recording exists, so nothing is called and nothing written, whatever it lacks
    lines = lines_of(out)
    lines[4].update(answers=None, model=None, error="HTTP 500: boom")
    out.write_text("".join(json.dumps(x) + "\n" for x in lines[:-1]))
    before = out.read_bytes()
    backend = Counting.from_pack(pack)
    summary = record_pack_sync(pack, backend, out, mode="once", close_backend=False)
    assert backend.asked == [] and out.read_bytes() == before
    assert (summary.mode, summary.n_called, summary.n_reused, summary.n_errors) == ("once", 0, 6, 2)
    # ... and where there is none, once records every case
    fresh = tmp_path / "fresh.jsonl"
    record_pack_sync(pack, backend, fresh, mode="once", close_backend=False)
    assert backend.asked == ids and [x["case_id"] for x in lines_of(fresh)] == ids

    # new_episodes: a changed request is asked again; lines of cases the pack no longer has go
    out.write_text(out.read_text() + json.dumps(orphan) + "\n")
    set_message(pack_dir, ids[3], "Totally different message about my invoice.")
    pack = load_pack(pack_dir)
    backend = Counting.from_pack(pack)
    record_pack_sync(pack, backend, out, mode="new_episodes", close_backend=False)
    assert sorted(backend.asked) == sorted([ids[3], ids[4], ids[7]])
    assert [x["case_id"] for x in lines_of(out)] == ids

    # none: nothing called, nothing written
    before = out.read_bytes()
    backend = Counting.from_pack(pack)
    summary = record_pack_sync(pack, backend, out, mode="none")
    assert backend.asked == [] and out.read_bytes() == before and summary.n_reused == 8

    # all: everything again, into a fresh file
    backend = Counting.from_pack(pack)
    record_pack_sync(pack, backend, out, mode="all")
    assert backend.asked == ids and [x["case_id"] for x in lines_of(out)] == ids

    with pytest.raises(OptionError, match="unknown record mode"):
        record_pack_sync(pack, backend, out, mode="sometimes")


@pytest.mark.parametrize("end", ["\r\n", "\r", "\u00a0\n"])
def test_resume_reads_a_recording_as_replay_does(pack_dir: Path, tmp_path: Path, end: str) -> None:
    """A recording replay accepts (CRLF, bare CR, trailing NBSP) is resumed, not refused or redone."""
    pack = load_pack(pack_dir)
    out = tmp_path / "rec.jsonl"
    record_pack_sync(pack, Counting.from_pack(pack), out, close_backend=False)
    lines = lines_of(out)
    out.write_text("".join(json.dumps(x) + end for x in lines[:-1]), encoding="utf-8", newline="")
    backend = Counting.from_pack(pack)
    summary = record_pack_sync(pack, backend, out, close_backend=False)
    assert backend.asked == [lines[-1]["case_id"]] and summary.n_reused == 7
    assert lines_of(out)[:7] == lines[:7]  # the reused lines, untouched
    assert [(x["case_id"], x["answers"]) for x in lines_of(out)] == [(x["case_id"], x["answers"]) for x in lines]


def test_resume_by_fingerprint_and_shuffle(pack_dir: Path, tmp_path: Path) -> None:
    pack = load_pack(pack_dir)
    out = tmp_path / "rec.jsonl"
    record_pack_sync(pack, Counting.from_pack(pack), out)

    changed = write_pack(tmp_path / "other", n=8, queue_instructions="Which team owns `message`?")
    backend = Counting.from_pack(load_pack(changed))
    record_pack_sync(load_pack(changed), backend, out)
    assert len(backend.asked) == 8  # reworded question: every fingerprint differs

    a = build_requests(pack, "jev-latest", shuffle_seed=1)
    b = build_requests(pack, "jev-latest", shuffle_seed=1)
    plain = build_requests(pack, "jev-latest")
    assert [r.questions for r in a] == [r.questions for r in b]
    orders = {tuple(r.questions["queue"]["criteria"]) for r in a}
    assert len(orders) > 1  # permuted per case
    assert all(r.questions["urgency"] == plain[0].questions["urgency"] for r in a)  # levels never
    backend = Counting.from_pack(pack)
    record_pack_sync(pack, backend, out, shuffle_seed=1)
    assert len(backend.asked) == 8
    backend = Counting.from_pack(pack)
    record_pack_sync(pack, backend, out, shuffle_seed=1)
    assert backend.asked == []


def test_torn_and_stale_journal_lines_are_redone(pack_dir: Path, tmp_path: Path) -> None:
    pack = load_pack(pack_dir)
    done = tmp_path / "done.jsonl"
    record_pack_sync(pack, MockBackend.from_pack(pack), done)
    lines = done.read_text().splitlines(keepends=True)
    out = tmp_path / "rec.jsonl"
    stale = json.loads(lines[3])
    stale["request_fingerprint"] = "sha256:0000"
    journal_path(out).write_text(lines[0] + lines[1] + json.dumps(stale) + "\n" + lines[2][: len(lines[2]) // 2])
    backend = Counting.from_pack(pack)
    summary = record_pack_sync(pack, backend, out)
    ids = [c.id for c in pack.cases]
    assert sorted(backend.asked) == ids[2:]  # the torn line's case and the stale one are asked again
    assert summary.n_reused == 2 and summary.n_called == 6
    final = out.read_text().splitlines(keepends=True)
    assert final[:2] == lines[:2]  # journaled answers kept byte for byte
    assert not journal_path(out).exists()


def test_retries_and_error_lines_with_injected_faults(pack_dir: Path, tmp_path: Path) -> None:
    pack = load_pack(write_pack(tmp_path / "big", n=60))
    out = tmp_path / "rec.jsonl"
    backend = Counting.from_pack(pack, seed=5, fail_rate=0.3, malformed_rate=0.3)
    summary = record_pack_sync(pack, backend, out, max_attempts=3, **FAST)
    lines = lines_of(out)
    assert len(lines) == 60 and len(backend.asked) == sum(x["attempts"] for x in lines)
    errors = [x for x in lines if x["error"]]
    assert summary.n_errors == len(errors) > 0
    # an HTTP 500 is retried (up to 3 attempts); an answer breaking the contract is not transient:
    # it ends the case at once as an error line, which the next run asks again
    gave_up = [x for x in errors if x["error"].startswith("HTTP 500")]
    misfits = [x for x in errors if x["error"].startswith("misfit")]
    assert gave_up and misfits and len(gave_up) + len(misfits) == len(errors)
    assert all(x["attempts"] == 3 and x["error_detail"]["retryable"] for x in gave_up)
    assert all(not x["error_detail"]["retryable"] and x["answers"] is None for x in misfits)
    assert all(r.startswith("HTTP 500") for x in lines for r in x["retry_reasons"])
    specs = specs_of(build_requests(pack, "m")[0].questions)
    assert all(answers_problems(specs, x["answers"]) == [] for x in lines if not x["error"])
    backend2 = Counting.from_pack(pack, seed=5)
    record_pack_sync(pack, backend2, out, **FAST)
    assert sorted(backend2.asked) == sorted(x["case_id"] for x in errors)  # errors are redone by `once`


def test_rpm_spaces_request_starts(pack_dir: Path, tmp_path: Path) -> None:
    pack = load_pack(pack_dir)
    backend = Counting.from_pack(pack)
    record_pack_sync(pack, backend, tmp_path / "rec.jsonl", rpm=600, concurrency=8)
    gaps = [b - a for a, b in zip(backend.starts, backend.starts[1:])]
    # starts sit on a 100 ms grid: a gap is short only by the previous start's wake-up lateness
    assert len(gaps) == 7 and min(gaps) >= 0.08, gaps
    assert 0.69 <= backend.starts[-1] - backend.starts[0] < 1.2, gaps


def test_concurrency_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "tsk-test-concurrency")
    pack = load_pack(write_pack(tmp_path / "p", n=12))
    with LoopbackServer(lambda seen: ok_reply(seen, delay_s=0.1)) as server:
        summary = record_pack_sync(pack, backend_from("jev", base_url=server.base_url), tmp_path / "r.jsonl",
                                   concurrency=3)
    assert server.max_in_flight == 3 and summary.n_errors == 0 and len(server.requests) == 12


def test_auth_error_stops_run_and_keeps_journal(pack_dir: Path, tmp_path: Path) -> None:
    pack = load_pack(pack_dir)

    class Revoked(Counting):
        async def answer(self, request: Request) -> Answer:
            if len(self.asked) == 3:
                raise AuthError("HTTP 401: key revoked; check TYPESAFE_API_KEY")
            return await super().answer(request)

    out = tmp_path / "rec.jsonl"
    with pytest.raises(AuthError, match="TYPESAFE_API_KEY.*3 finished cases kept"):
        record_pack_sync(pack, Revoked.from_pack(pack), out, concurrency=1)
    assert not out.exists() and len(journal_path(out).read_text().splitlines()) == 3
    backend = Counting.from_pack(pack)
    record_pack_sync(pack, backend, out)
    assert len(backend.asked) == 5 and len(lines_of(out)) == 8


def test_plan_counts_only_the_calls_a_run_makes(pack_dir: Path, tmp_path: Path) -> None:
    pack = load_pack(pack_dir)
    out = tmp_path / "rec.jsonl"
    assert len(plan(pack, "mock", out).todo) == 8
    record_pack_sync(pack, MockBackend.from_pack(pack), out)
    assert plan(pack, "mock", out).todo == []  # complete: nothing to ask
    assert len(plan(pack, "mock", out, mode="all").todo) == 8
    assert len(plan(pack, "jev", out).todo) == 8  # another backend's fingerprints
    assert len(plan(pack, "mock", out, cases=pack.cases[:3], mode="all").todo) == 3
    lines = lines_of(out)
    lines[2]["answers"]["refund"]["noul"] = 1.5  # a line replay would refuse is asked again
    lines[5]["error"] = "HTTP 500: boom"
    out.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert [r.case_id for r in plan(pack, "mock", out).todo] == [case_id(3), case_id(6)]


def test_token_estimates_come_from_the_bodies_sent(pack_dir: Path) -> None:
    pack = load_pack(pack_dir)
    request = build_requests(pack, "jev-latest")[0]
    body = json.dumps({"model": "jev-latest", "state": request.state, "questions": request.questions},
                      ensure_ascii=False)
    catalog = Catalog()
    assert catalog.parse("jev").estimate_tokens(request) == (len(body) // 4 + 1, 0)
    llm_in, llm_out = catalog.parse("sonnet").estimate_tokens(request)
    assert llm_in > len(body) // 4 + 200  # system prompt and schema travel with every LLM call
    assert 20 < llm_out < 200  # a probability for each of 1 + 3 + 3 answer keys


def test_catalog_names_and_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(OptionError, match="unknown backend 'gpt'.*jev, mock, sparrow"):
        backend_from("gpt")
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    with pytest.raises(AuthError, match="TYPESAFE_API_KEY"):
        backend_from("jev")
    assert backend_from("mock", gold={}, seed=4).backend_id(None) == "mock-4"


KILL_SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from pytest_jev.packs import load_pack
    from pytest_jev.backends.typesafe import TypeSafeBackend
    from pytest_jev.record.engine import record_pack_sync
    record_pack_sync(load_pack(sys.argv[1]), TypeSafeBackend(base_url=sys.argv[2]), Path(sys.argv[3]),
                     concurrency=4)
""")


@pytest.mark.slow
def test_kill_9_and_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "tsk-test-kill-resume")
    folder = write_pack(tmp_path / "p", n=60)
    out = tmp_path / "results" / "rec.jsonl"
    journal = journal_path(out)
    with LoopbackServer(lambda seen: ok_reply(seen, delay_s=0.05)) as server:
        proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(folder), server.base_url, str(out)],
                                env=dict(os.environ))
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and proc.poll() is None:
                if journal.exists() and journal.read_bytes().count(b"\n") >= 12:
                    break
                time.sleep(0.01)
            assert proc.poll() is None, "the recording finished before it could be killed"
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(10)
        assert not out.exists()
        journaled = {json.loads(x)["case_id"] for x in journal.read_text().splitlines() if x.endswith("}")}
        assert 12 <= len(journaled) < 60
        summary = record_pack_sync(load_pack(folder), backend_from("jev", base_url=server.base_url), out)
    recording = load_recording(out)  # refuses duplicate case ids
    assert list(recording.lines) == [case_id(i) for i in range(1, 61)]
    assert all(server.per_case[c] == 1 for c in journaled), "a journaled case was asked again"
    assert summary.n_reused >= len(journaled) and not journal.exists()


def test_per_questions_cache_never_serves_another_object_with_a_reused_id() -> None:
    from pytest_jev.record.plan import per_questions

    first, second = {"q": {"type": "noul"}}, {"q": {"type": "choice"}}
    cache: dict[int, tuple[Any, str]] = {id(second): (first, "made for first")}  # as if `first` died
    assert per_questions(cache, second, lambda q: f"made for {q['q']['type']}") == "made for choice"
    assert per_questions(cache, second, lambda q: "recomputed") == "made for choice"  # a real hit
