"""`jev_pack_result`: a pack's graded result in this run, as the --jev-json run object, also under -n 2."""

from __future__ import annotations

import json

import pytest
from packfiles import write_split_pack

from conftest import write_pack

CHECKS = '''
import json

def test_own_assertions(jev_pack_result):
    run = jev_pack_result("toy")
    assert run["pack"] == "toy" and run["n_cases"] == 12
    assert run["accuracy"] == 10 / 12
    run["accuracy"] = 0  # a copy: the next caller still sees the graded value
    assert jev_pack_result("toy")["accuracy"] == 10 / 12
    with open("seen.json", "w") as f:
        json.dump(jev_pack_result("toy"), f)
'''


@pytest.fixture
def toy_project(pytester: pytest.Pytester) -> pytest.Pytester:
    write_pack(pytester.path, wrong={2, 5})
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    pytester.makepyfile(test_checks=CHECKS)
    return pytester


def no_failures(result: pytest.RunResult) -> None:
    """The fixture's test passed and no pack item failed (how many items a pack has is the packs' business)."""
    counts = result.parseoutcomes()
    assert counts.get("passed", 0) >= 1 and not counts.get("failed") and not counts.get("errors"), counts
    result.stdout.fnmatch_lines(["PASSED test_checks.py::test_own_assertions"])


def graded(pytester: pytest.Pytester) -> dict[str, object]:
    seen: dict[str, object] = json.loads((pytester.path / "seen.json").read_text())
    return seen


@pytest.mark.parametrize("args", [["packs", "test_checks.py"], ["test_checks.py", "packs"]])
def test_is_the_run_object_of_jev_json(toy_project: pytest.Pytester, args: list[str]) -> None:
    result = toy_project.runpytest("-p", "no:cacheprovider", "-rA", *args, "--jev-json=out.json")
    no_failures(result)  # before or after the pack's own items: graded once, the same
    runs = json.loads((toy_project.path / "out.json").read_text())["runs"]
    assert [run["pack"] for run in runs] == ["toy"] and graded(toy_project) == runs[0]


def test_a_pack_not_collected_or_deselected_is_graded_from_its_recording(toy_project: pytest.Pytester) -> None:
    toy_project.runpytest("-p", "no:cacheprovider", "packs", "--jev-json=out.json")
    expected = json.loads((toy_project.path / "out.json").read_text())["runs"][0]
    result = toy_project.runpytest("-p", "no:cacheprovider", "test_checks.py", "--jev-json=alone.json")
    result.assert_outcomes(passed=1)
    assert graded(toy_project) == expected
    assert not (toy_project.path / "alone.json").exists()  # graded for the fixture only: not a run of the summary
    result = toy_project.runpytest("-p", "no:cacheprovider", "-rA", "packs", "test_checks.py", "-k", "own_assertions")
    no_failures(result)
    assert result.parseoutcomes()["passed"] == 1
    assert graded(toy_project) == expected


def test_under_xdist(toy_project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    toy_project.runpytest("-p", "no:cacheprovider", "packs", "--jev-json=out.json")
    expected = json.loads((toy_project.path / "out.json").read_text())["runs"][0]
    result = toy_project.runpytest_subprocess("-p", "no:cacheprovider", "-rA", "-n", "2", "packs", "test_checks.py",
                                              "--jev-json=xdist.json")
    no_failures(result)
    assert graded(toy_project) == expected
    assert json.loads((toy_project.path / "xdist.json").read_text())["runs"] == [expected]  # reported once


def test_missing_pack_or_recording_fails_with_one_line(pytester: pytest.Pytester) -> None:
    write_pack(pytester.path, recording=None)
    pytester.makepyfile(test_missing='''
def test_no_such_pack(jev_pack_result):
    jev_pack_result("nope")
def test_no_recording(jev_pack_result):
    jev_pack_result("toy")
''')
    result = pytester.runpytest("-p", "no:cacheprovider", "test_missing.py")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "jev_pack_result: pack 'nope' is not collected in this run and */packs/nope has no pack.yaml; collect it "
        "(pytest packs/ tests/) or pass path= to its folder",
        "jev_pack_result: no recording for pack 'toy': *"])
    assert "Traceback" not in result.stdout.str()


def test_a_broken_pack_fails_with_its_one_line_once(pytester: pytest.Pytester) -> None:
    bad = pytester.path / "elsewhere" / "bad"
    bad.mkdir(parents=True)
    (bad / "pack.yaml").write_text("id: [bad\n", encoding="utf-8")
    pytester.makepyfile(test_bad='''
def test_bad(jev_pack_result):
    jev_pack_result("bad", path="elsewhere/bad")
''')
    result = pytester.runpytest("-p", "no:cacheprovider", "test_bad.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["jev_pack_result: */elsewhere/bad/pack.yaml*"])
    out = result.stdout.str()
    assert "During handling of the above exception" not in out and "Traceback" not in out
    assert not [line for line in result.stdout.lines if line.startswith(str(bad))]  # the PackError chained before


@pytest.mark.parametrize("collected", [True, False])
def test_a_refused_run_fails_with_one_line(pytester: pytest.Pytester, collected: bool) -> None:
    folder = write_split_pack(pytester.path / "packs")
    pytester.makeini("[pytest]\njev_backend = mock\n")
    assert pytester.runpytest("packs", "--jev-record", "-p", "no:cacheprovider").ret in (0, 1)
    held = folder / "heldout.jsonl"
    held.write_text(held.read_text(encoding="utf-8").replace("[en 37]", "[en 37!]"), encoding="utf-8")
    pytester.makepyfile(test_refused='''
def test_refused(jev_pack_result):
    jev_pack_result("split-pack", split="heldout")
''')
    result = pytester.runpytest("-p", "no:cacheprovider", *(["packs"] if collected else []), "test_refused.py")
    assert result.parseoutcomes().get("failed", 0) >= 1
    assert ("jev_pack_result: pack 'split-pack' has no numbers to give: the frozen split changed (its check[split] "
            "item says what to do)") in result.stdout.lines
    assert "AssertionError" not in result.stdout.str() and "Traceback" not in result.stdout.str()
