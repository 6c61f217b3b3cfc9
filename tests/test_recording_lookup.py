"""Where recordings live: served model names become safe folder names, --jev-backend finds only
its own folders, and the loopback test server leaves nothing pending behind."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from packfiles import write_pack
from servers import LoopbackServer, ok_reply

from pytest_jev.backends.catalog import Catalog
from pytest_jev.errors import JevError
from pytest_jev.packs import load_pack
from pytest_jev.paths import safe_name
from pytest_jev.record.engine import record_pack_sync
from pytest_jev.recording_lookup import backend_folders, candidate_recordings, find_recording

SPECS = Catalog()  # --jev-backend values parsed as a run parses them


@pytest.mark.parametrize("name, folder", [
    ("jev-/../../escaped", "jev-escaped"), ("../../etc", "etc"), ("..", "backend"), ("", "backend"),
    ("qwen2.5:7b", "qwen2.5-7b"), (".hidden", "hidden"), ("a/b\\c", "a-b-c"), ("x" * 300, "x" * 120),
    ("jev-1.13.0", "jev-1.13.0")])
def test_safe_name(name: str, folder: str) -> None:
    assert safe_name(name) == folder


def test_a_served_model_name_never_becomes_a_path(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "tsk-test-layout")
    write_pack(pytester.path / "packs", n=3)
    with LoopbackServer(lambda seen: ok_reply(seen, model="jev-/../../escaped")) as server:
        result = pytester.runpytest_subprocess("packs", "--jev-record", "--jev-backend=jev",
                                               f"--jev-base-url={server.base_url}", "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"passed": 4, "mismatched": 3}
    recordings = sorted(str(p.relative_to(pytester.path)) for p in pytester.path.rglob("*.predictions.jsonl"))
    assert recordings == ["results/jev-escaped/tiny-pack.predictions.jsonl"]
    assert not (pytester.path.parent / "escaped").exists()


def folder(results: Path, name: str, backend: str, model: str, pack: str = "p") -> Path:
    path = results / name
    path.mkdir(parents=True)
    (path / "backend.json").write_text(json.dumps({"backend": backend, "model": model}))
    (path / f"{pack}.predictions.jsonl").write_text("")
    return path


def test_a_backend_finds_only_its_own_folders(tmp_path: Path) -> None:
    results = tmp_path / "results"
    minilm = folder(results, "minilm-l6-int8-zeroshot-1.0.0", "minilm", "minilm-l6-int8-zeroshot-1.0.0")
    mi = folder(results, "mi-openai", "openai", "mi")
    qwen = folder(results, "qwen2.5-7b-openai", "openai", "qwen2.5:7b")
    jev = folder(results, "jev-1.13.0", "jev", "jev-1.13.0")
    theirs = results / "claude-sonnet-5"  # written by jevassert: `provider`, no `backend`
    theirs.mkdir()
    (theirs / "backend.json").write_text(json.dumps({"provider": "anthropic", "model": "claude-sonnet-5"}))
    assert backend_folders(results, SPECS.parse("openai:mi")) == [mi]  # never minilm-... by a shared prefix
    assert backend_folders(results, SPECS.parse("openai:qwen2.5:7b")) == [qwen]
    assert backend_folders(results, SPECS.parse("minilm")) == [minilm]
    assert backend_folders(results, SPECS.parse("jev")) == [jev]
    assert backend_folders(results, SPECS.parse("sonnet")) == [theirs]
    assert backend_folders(results, SPECS.parse("openai:llama3")) == []
    found = list(candidate_recordings(tmp_path, "p", explicit=None, backend=SPECS.parse("openai:mi"),
                                      results_dir=results))
    assert found == [results / "openai-mi" / "p.predictions.jsonl", mi / "p.predictions.jsonl"]


def test_replay_with_a_backend_spec_grades_its_own_recording(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path / "packs", n=3)
    pack = load_pack(pytester.path / "packs" / "tiny-pack")
    from pytest_jev.backends.mock import MockBackend

    out = pytester.path / "results/minilm-l6/tiny-pack.predictions.jsonl"
    record_pack_sync(pack, MockBackend.from_pack(pack), out)
    json_path = out.parent / "backend.json"
    json_path.write_text(json.dumps({"backend": "minilm", "model": "minilm-l6"}))
    result = pytester.runpytest("packs", "--jev-backend=openai:mi")
    result.assert_outcomes(passed=1, failed=1, skipped=5)  # no openai:mi recording: not minilm's
    result.stdout.fnmatch_lines(["*no recording for pack 'tiny-pack'*backend 'openai:mi'*"])
    outcomes = pytester.runpytest("packs", "--jev-backend=minilm").parseoutcomes()
    assert "failed" not in outcomes and "skipped" not in outcomes  # its own recording, found by kind


LEAK_PROBE = textwrap.dedent("""
    import gc, sys, threading, time
    sys.path.insert(0, sys.argv[1])
    import httpx
    from servers import LoopbackServer, Reply

    def ask(url):
        try:
            httpx.get(url, timeout=3)
        except httpx.HTTPError:
            pass

    with LoopbackServer(lambda seen: Reply(200, {"ok": True}, delay_s=2)) as server:
        asking = threading.Thread(target=ask, args=(server.base_url + "/slow",))
        asking.start()
        time.sleep(0.3)  # the server stops while this request is still being answered
    asking.join()
    gc.collect()
""")


def test_the_loopback_server_leaves_no_task_pending() -> None:
    done = subprocess.run([sys.executable, "-c", LEAK_PROBE, str(Path(__file__).parent)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "Task was destroyed but it is pending" not in done.stderr, done.stderr


def test_the_pinned_models_recording_in_the_pack_folder_is_found_by_that_model(tmp_path: Path) -> None:
    """jevassert keeps the recording of a pack's `tested` model in the pack folder, and its results
    under results/<model>/ (whose backend.json may name no backend kind)."""
    results, pack_dir = tmp_path / "results", tmp_path / "packs" / "p"
    theirs = results / "jev-1.13.0"
    theirs.mkdir(parents=True)
    (theirs / "backend.json").write_text(json.dumps({"provider": "typesafe", "model": "jev-1.13.0"}))
    pack_dir.mkdir(parents=True)
    (pack_dir / "predictions.jsonl").write_text("")
    for backend in ("jev-1.13.0", "jev"):
        assert find_recording(pack_dir, "p", explicit=None, backend=SPECS.parse(backend), results_dir=results,
                              tested="jev-1.13.0") == pack_dir / "predictions.jsonl"
    # another model, or a pack that pins none, never grades the pack folder's recording
    for backend, tested in (("sparrow", "jev-1.13.0"), ("jev-1.13.0", None), ("jev-1.12.0", "jev-1.13.0")):
        with pytest.raises(JevError, match="no recording for pack 'p'"):
            find_recording(pack_dir, "p", explicit=None, backend=SPECS.parse(backend), results_dir=results,
                           tested=tested)
