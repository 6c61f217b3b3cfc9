"""Hostile input, as a table: each row spoils one file of one pack in one way. Whatever it is,
that pack fails one item with one line naming the file (and line, where there is one) and what
to do; the other pack still runs and passes; nothing hangs, explodes or prints a traceback."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import write_pack

Spoil = Callable[[Path, Path], None]  # (pack folder, its recording) -> None
DEEP = 100_000
BIG_INT = "1" + "0" * 400  # an integer Python reads, and no float can hold
HUGE_INT = "9" * 5000  # more digits than Python converts


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (old, path)
    path.write_text(text.replace(old, new, 1))


def replace_file(name: str, make: Callable[[Path], None]) -> Spoil:
    def spoil(folder: Path, rec: Path) -> None:
        path = rec if name == "RECORDING" else rec.parent / "backend.json" if name == "BACKEND" else folder / name
        if path.exists() or path.is_symlink():
            path.unlink()
        make(path)
    return spoil


def text(body: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(body)


def raw(body: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(body)


def folder_in_place(path: Path) -> None:
    path.mkdir()


def fifo_in_place(path: Path) -> None:
    os.mkfifo(path)


def dangling(path: Path) -> None:
    path.symlink_to(path.with_name("nowhere-at-all"))


def yaml_edit(old: str, new: str, file: str = "pack.yaml") -> Spoil:
    return lambda folder, rec: edit(folder / file, old, new)


def gates(body: str) -> Spoil:
    return lambda folder, rec: (folder / "gates.yaml").write_text(body)


def case_line(index: int, change: Callable[[dict], None]) -> Spoil:
    def spoil(folder: Path, rec: Path) -> None:
        rows = [json.loads(x) for x in (folder / "cases.jsonl").read_text().splitlines()]
        change(rows[index])
        (folder / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return spoil


def case_text(index: int, make: Callable[[str], str]) -> Spoil:
    def spoil(folder: Path, rec: Path) -> None:
        rows = (folder / "cases.jsonl").read_text().splitlines()
        rows[index] = make(rows[index])
        (folder / "cases.jsonl").write_text("\n".join(rows) + "\n")
    return spoil


def rec_text(index: int, make: Callable[[str], str]) -> Spoil:
    def spoil(folder: Path, rec: Path) -> None:
        rows = rec.read_text().splitlines()
        rows[index] = make(rows[index])
        rec.write_text("\n".join(rows) + "\n")
    return spoil


def rec_field(index: int, key: str, value_json: str) -> Spoil:
    """Set a top-level or usage key of one recording line to a raw JSON value."""
    def make(line: str) -> str:
        doc = json.loads(line)
        marker = "__SPOIL__"
        if key.startswith("usage."):
            doc["usage"][key.split(".", 1)[1]] = marker
        else:
            doc[key] = marker
        return json.dumps(doc).replace(f'"{marker}"', value_json)
    return rec_text(index, make)


def answer_value(index: int, path: tuple[str, ...], value_json: str) -> Spoil:
    def make(line: str) -> str:
        doc = json.loads(line)
        node = doc["answers"]
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = "__SPOIL__"
        return json.dumps(doc).replace('"__SPOIL__"', value_json)
    return rec_text(index, make)


def backend(body: str) -> Spoil:
    return lambda folder, rec: (rec.parent / "backend.json").write_text(body)


def alias_bomb(key: str) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    return "\n".join(lines) + f"\n{key}: *a8\n"


def permission_denied(name: str) -> str:
    """A conftest making `name` unreadable (as root, chmod 000 would not stop us reading it)."""
    return (f"import pathlib\n_read = pathlib.Path.read_bytes\n"
            f"def read(self):\n    if self.name == {name!r} and 'toy' in self.parts:\n"
            f"        raise PermissionError(13, 'Permission denied', str(self))\n    return _read(self)\n"
            f"pathlib.Path.read_bytes = read\n")


# (id, spoil, where the line points, what it says, run in a subprocess with a timeout)
ROWS: list[tuple[str, Spoil, str, str, bool]] = [
    # pack.yaml
    ("yaml-nested-900", replace_file("pack.yaml", text("spec: 0\nx: " + "[" * 900 + "]" * 900 + "\n")),
     "pack.yaml", "nested", False),
    ("yaml-recursive-alias", yaml_edit("license: CC0-1.0", "license: &l [*l]"), "pack.yaml", "alias", False),
    ("yaml-alias-bomb", replace_file("pack.yaml", text(alias_bomb("spec"))), "pack.yaml",
     "aliases (*name) are not allowed", False),
    ("yaml-duplicate-key", yaml_edit("license: CC0-1.0", "license: CC0-1.0\nlicense: MIT"), "pack.yaml:5",
     "duplicate key 'license' (first on line 4)", False),
    ("spec-float", yaml_edit("spec: 0", "spec: 0.0"), "pack.yaml:1", "spec must be the integer 0", False),
    ("spec-string", yaml_edit("spec: 0", "spec: '0'"), "pack.yaml:1", "spec", False),
    ("threshold-5000-digits", yaml_edit("true: 0.8, false: 0.8", f"true: {HUGE_INT}, false: 0.8"), "pack.yaml",
     "invalid YAML", False),
    ("threshold-nan", yaml_edit("true: 0.8, false: 0.8", "true: .nan, false: 0.8"), "pack.yaml",
     "is not a finite number", False),
    ("threshold-inf", yaml_edit("true: 0.8, false: 0.8", "true: .inf, false: 0.8"), "pack.yaml",
     "is not a finite number", False),
    ("threshold-10e400", yaml_edit("true: 0.8, false: 0.8", f"true: {BIG_INT}, false: 0.8"), "pack.yaml",
     "is not a finite number", False),
    ("threshold-boolean", yaml_edit("true: 0.8, false: 0.8", "true: yes, false: 0.8"), "pack.yaml:28",
     "is not of type 'number'", False),
    ("pack-yaml-empty", replace_file("pack.yaml", text("")), "pack.yaml:1", "top level must be a mapping", False),
    ("pack-yaml-list", replace_file("pack.yaml", text("- spec\n- id\n")), "pack.yaml:1",
     "top level must be a mapping", False),
    ("pack-yaml-not-utf8", replace_file("pack.yaml", raw(b"spec: 0\nid: \xff\xfe\n")), "pack.yaml",
     "not UTF-8 text", False),
    ("pack-yaml-nul", replace_file("pack.yaml", raw(b"spec: 0\x00\n")), "pack.yaml", "invalid YAML", False),
    ("pack-yaml-folder", replace_file("pack.yaml", folder_in_place), "pack.yaml", "is not a regular file", False),
    ("pack-yaml-dangling", replace_file("pack.yaml", dangling), "pack.yaml", "is not a regular file", False),
    ("pack-yaml-fifo", replace_file("pack.yaml", fifo_in_place), "pack.yaml", "is not a regular file", True),
    ("pack-yaml-misnamed", lambda f, r: (f / "pack.yaml").rename(f / "pack.yml"), "packs/toy",
     "rename pack.yml to pack.yaml", False),
    ("pack-yaml-missing", lambda f, r: (f / "pack.yaml").unlink(), "packs/toy", "no pack.yaml here", False),
    ("pack-yaml-unreadable", lambda f, r: (f.parents[1] / "conftest.py").write_text(permission_denied("pack.yaml")),
     "pack.yaml", "cannot be read (Permission denied)", True),
    # gates.yaml
    ("gates-duplicate", gates("min_accuracy: 0.99\nmin_accuracy: 0.01\n"), "gates.yaml:2",
     "duplicate key 'min_accuracy' (first on line 1)", False),
    ("gates-folder", replace_file("gates.yaml", folder_in_place), "gates.yaml", "is a folder, not a file", False),
    ("gates-dangling", replace_file("gates.yaml", dangling), "gates.yaml", "is a dangling link", False),
    ("gates-fifo", replace_file("gates.yaml", fifo_in_place), "gates.yaml", "is a FIFO, not a file", True),
    ("gates-5000-digits", gates(f"max_cost_per_case_usd: {HUGE_INT}\n"), "gates.yaml", "invalid YAML", False),
    ("gates-nan", gates("min_accuracy: .nan\n"), "gates.yaml:1", "is not a finite number", False),
    ("gates-10e400", gates(f"max_cost_per_case_usd: {BIG_INT}\n"), "gates.yaml:1", "is not a finite number", False),
    ("gates-negative-cost", gates("max_cost_per_case_usd: -1\n"), "gates.yaml:1", "less than the minimum of 0", False),
    ("gates-boolean", gates("min_accuracy: true\n"), "gates.yaml:1", "is not of type 'number'", False),
    ("gates-string", gates("min_accuracy: '0.9'\n"), "gates.yaml:1", "is not of type 'number'", False),
    ("gates-alias-bomb", gates(alias_bomb("min_accuracy")), "gates.yaml", "aliases (*name) are not allowed", False),
    ("gates-unknown-key", gates("min_acuracy: 0.9\n"), "gates.yaml:1", "unknown gate 'min_acuracy'", False),
    # cases.jsonl
    ("case-nested-100000", case_text(2, lambda line: line.replace('"message": ', '"message": ' + "[" * DEEP + "1"
                                                                  + "]" * DEEP + ', "x": ', 1)),
     "cases.jsonl:3", "nested too deeply", False),
    ("case-5000-digits", case_text(1, lambda line: line.replace('"message": ', f'"message": {HUGE_INT}, "x": ', 1)),
     "cases.jsonl:2", "not valid JSON", False),
    ("cases-folder", replace_file("cases.jsonl", folder_in_place), "cases.jsonl", "is a folder, not a file", False),
    ("cases-fifo", replace_file("cases.jsonl", fifo_in_place), "cases.jsonl", "is a FIFO, not a file", True),
    ("cases-dangling", replace_file("cases.jsonl", dangling), "cases.jsonl", "is a dangling link", False),
    ("cases-not-utf8", replace_file("cases.jsonl", raw(b'{"id": "\xff"}\n')), "cases.jsonl", "not UTF-8 text", False),
    ("cases-empty", replace_file("cases.jsonl", text("")), "cases.jsonl", "no cases", False),
    ("cases-unreadable", lambda f, r: (f.parents[1] / "conftest.py").write_text(permission_denied("cases.jsonl")),
     "cases.jsonl", "cannot be read (Permission denied)", True),
    ("case-noul-nan", case_text(0, lambda line: line.replace('"refund": false', '"refund": NaN')),
     "cases.jsonl:1", "expect.refund is NaN, not a JSON boolean", False),
    ("case-duplicate-key", case_text(3, lambda line: line.replace('"refund": ', '"refund": true, "refund": ', 1)),
     "cases.jsonl:4", "duplicate key \"refund\" in one JSON object (JSON keeps the last, silently)", False),
    ("case-duplicate-top-key", case_text(6, lambda line: line.replace('"id": ', '"id": "toy-9999", "id": ', 1)),
     "cases.jsonl:7", "duplicate key \"id\"", False),
    # the recording
    ("rec-nested-100000", rec_text(3, lambda line: line[:-1] + ', "deep": ' + "[" * DEEP + "]" * DEEP + "}"),
     "toy/predictions.jsonl:4", "nested too deeply", False),
    ("rec-5000-digits", rec_field(1, "latency_ms", HUGE_INT), "toy/predictions.jsonl:2", "not valid JSON", False),
    ("rec-latency-10e400", rec_field(1, "latency_ms", BIG_INT), "toy/predictions.jsonl:2",
     "is not a finite number >= 0", False),
    ("rec-latency-nan", rec_field(1, "latency_ms", "NaN"), "toy/predictions.jsonl:2", "is not a finite number", False),
    ("rec-latency-negative", rec_field(1, "latency_ms", "-3"), "toy/predictions.jsonl:2",
     "latency_ms -3 is not a finite number >= 0", False),
    ("rec-latency-boolean", rec_field(1, "latency_ms", "true"), "toy/predictions.jsonl:2", "latency_ms", False),
    ("rec-tokens-negative", rec_field(2, "usage.input_tokens", "-5"), "toy/predictions.jsonl:3",
     "usage.input_tokens -5 is not a whole number of tokens >= 0", False),
    ("rec-tokens-string", rec_field(2, "usage.input_tokens", '"12"'), "toy/predictions.jsonl:3",
     "usage.input_tokens '12'", False),
    ("rec-tokens-boolean", rec_field(2, "usage.output_tokens", "true"), "toy/predictions.jsonl:3",
     "usage.output_tokens True", False),
    ("rec-tokens-nan", rec_field(2, "usage.input_tokens", "NaN"), "toy/predictions.jsonl:3", "usage.input_tokens nan",
     False),
    ("rec-tokens-10e400", rec_field(2, "usage.input_tokens", BIG_INT), "toy/predictions.jsonl:3",
     "usage.input_tokens 1000", False),
    ("rec-noul-10e400", answer_value(4, ("refund", "noul"), BIG_INT), "toy/predictions.jsonl:5",
     "case toy-0005: refund: noul 1000", False),
    ("rec-noul-above-one", answer_value(4, ("refund", "noul"), "1.5"), "toy/predictions.jsonl:5",
     "case toy-0005: refund: noul 1.5 outside [0, 1]; re-record the case", False),
    ("rec-choice-infinity", answer_value(5, ("queue", "probabilities", "billing"), "Infinity"),
     "toy/predictions.jsonl:6", "case toy-0006: queue: probabilities must be numbers in [0, 1]", False),
    ("rec-duplicate-key", rec_text(2, lambda line: line.replace('"model": ', '"model": "other", "model": ', 1)),
     "toy/predictions.jsonl:3", "duplicate key \"model\" in one JSON object (JSON keeps the last, silently)",
     False),
    ("rec-duplicate-answer-key", rec_text(4, lambda line: line.replace('"noul": ', '"noul": 0.01, "noul": ', 1)),
     "toy/predictions.jsonl:5", "duplicate key \"noul\"", False),
    ("rec-choice-list", answer_value(5, ("queue", "choice"), '["billing"]'), "toy/predictions.jsonl:6",
     'case toy-0006: queue: choice ["billing"] is not a declared option', False),
    ("rec-choice-object", answer_value(5, ("queue", "choice"), '{"billing": 1}'), "toy/predictions.jsonl:6",
     'case toy-0006: queue: choice {"billing": 1} is not a declared option', False),
    ("rec-folder", replace_file("RECORDING", folder_in_place), "toy/predictions.jsonl", "is a folder, not a file",
     False),
    ("rec-fifo", replace_file("RECORDING", fifo_in_place), "toy/predictions.jsonl", "is a FIFO, not a file", True),
    ("rec-not-utf8", replace_file("RECORDING", raw(b'{"case_id": "\xff"}\n')), "toy/predictions.jsonl",
     "not UTF-8 text", False),
    # backend.json beside the recording
    ("backend-nested-100000", backend('{"pricing": ' + "[" * DEEP + "]" * DEEP + "}"), "backend.json",
     "nested too deeply", False),
    ("backend-negative-price", backend('{"pricing": {"input_usd_per_mtok": -1, "output_usd_per_mtok": 0}}'),
     "backend.json", "input_usd_per_mtok = -1 is not a number >= 0", False),
    ("backend-nan-price", backend('{"pricing": {"input_usd_per_mtok": NaN, "output_usd_per_mtok": 0}}'),
     "backend.json", "input_usd_per_mtok = nan is not a number >= 0", False),
    ("backend-boolean-price", backend('{"pricing": {"input_usd_per_mtok": true, "output_usd_per_mtok": 0}}'),
     "backend.json", "input_usd_per_mtok = True is not a number >= 0", False),
    ("backend-string-price", backend('{"pricing_usd_per_mtok": {"input": "0.04", "output": 0}}'),
     "backend.json", "input = '0.04' is not a number >= 0", False),
    ("backend-10e400-price", backend('{"pricing": {"input_usd_per_mtok": ' + BIG_INT + ', "output_usd_per_mtok": 0}}'),
     "backend.json", "is not a number >= 0", False),
    ("backend-folder", replace_file("BACKEND", folder_in_place), "backend.json", "is not a regular file", False),
    ("backend-list", backend("[1, 2]"), "backend.json", "must be a JSON object", False),
]


@pytest.mark.parametrize("name, spoil, where, says, apart", ROWS, ids=[row[0] for row in ROWS])
def test_hostile_input_is_one_line_for_that_pack_only(pytester: pytest.Pytester, name: str, spoil: Spoil,
                                                       where: str, says: str, apart: bool) -> None:
    # each pack's recording (and backend.json) in its own folder: the spec-v0 place, predictions.jsonl
    toy = write_pack(pytester.path, gates="min_accuracy: 0.5\nmax_ece: 0.5\nmax_cost_per_case_usd: 1\n",
                     recording="packs/toy")
    good = write_pack(pytester.path, pack_id="good", recording="packs/good")
    for folder in (toy, good):
        (folder / f"{folder.name}.predictions.jsonl").rename(folder / "predictions.jsonl")
    spoil(toy, toy / "predictions.jsonl")
    args = ["packs/toy", "packs/good", "-p", "no:cacheprovider", "-rfs"]
    result = pytester.runpytest_subprocess(*args, timeout=60) if apart else pytester.runpytest(*args)
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    good = [line for line in out.splitlines() if line.startswith("packs/good/pack.yaml ")]
    assert good and "F" not in good[0] and "E" not in good[0], out  # the other pack still runs, all green
    failed = [line for line in out.splitlines() if line.startswith("FAILED packs/toy")]
    assert failed, out
    reported = [line for line in out.splitlines() if says in line and where in line]
    assert reported, f"no line with {where!r} and {says!r}:\n{out}"
    assert any("; " in line for line in reported), reported  # what to do comes with what is wrong


def test_an_id_that_could_forge_a_line_is_printed_escaped(pytester: pytest.Pytester) -> None:
    toy = write_pack(pytester.path, wrong={1, 2})
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\njev_strict = true\n")
    rows = [json.loads(x) for x in (toy / "cases.jsonl").read_text().splitlines()]
    rec = pytester.path / "results/jev-1.13.0/toy.predictions.jsonl"
    lines = [json.loads(x) for x in rec.read_text().splitlines()]
    for i, new_id in ((0, "x\nFAILED packs/other::everything - forged"), (1, "y\x1b[2J\x1b[Hcleared")):
        rows[i]["id"] = lines[i]["case_id"] = new_id
    (toy / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rec.write_text("".join(json.dumps(r) + "\n" for r in lines))
    result = pytester.runpytest("packs", "-v")
    out = result.stdout.str()
    assert "\x1b[2J" not in out and "\nFAILED packs/other::everything" not in out
    assert "case[x\\nFAILED packs/other::everything - forged]" in out  # one line, escaped
    assert "case[y\\x1b[2J\\x1b[Hcleared]" in out
    assert result.parseoutcomes()["failed"] == 2


def test_python_files_in_a_pack_folder_are_warned_about(pytester: pytest.Pytester, toy: Path) -> None:
    (toy / "conftest.py").write_text("")
    result = pytester.runpytest("packs")
    result.stdout.fnmatch_lines(["*PackWarning: *packs/toy/conftest.py: a pack folder holds data only, but pytest "
                                 "imports and runs Python files it finds there*"])


def test_a_large_pack_yaml_parses_in_well_under_a_second(tmp_path: Path) -> None:
    """libyaml's C parser, one pass: a 50 MB pack.yaml took 25 s with two pure-Python passes."""
    import time

    from pytest_jev.packs.yamlfile import read_yaml

    path = tmp_path / "pack.yaml"
    path.write_text("description: '" + "x" * 20_000_000 + "'\nspec: 0\n")
    start = time.perf_counter()
    data, lines = read_yaml(path)
    assert data["spec"] == 0 and lines[("spec",)] == 2
    assert time.perf_counter() - start < 5  # generous on a shared machine; ~0.3 s measured


@pytest.mark.parametrize("which", ["cases", "recording"])
def test_a_1_gb_sparse_file_is_refused_unread(pytester: pytest.Pytester, which: str) -> None:
    """A 1 GB file of zero bytes costs no disk (truncate makes it sparse), but reading and
    decoding it took 2.1 GB of memory: it is refused by its size, in one line, before a byte is
    read, and the other pack still runs."""
    toy = write_pack(pytester.path, recording="packs/toy")
    write_pack(pytester.path, pack_id="good", recording="packs/good")
    for folder in (toy, pytester.path / "packs/good"):
        (folder / f"{folder.name}.predictions.jsonl").rename(folder / "predictions.jsonl")
    big = toy / ("cases.jsonl" if which == "cases" else "predictions.jsonl")
    with big.open("r+b") as handle:
        handle.truncate(2**30)
    assert big.stat().st_size == 2**30
    pytester.makeconftest("import resource, pathlib\n"
                          "def pytest_unconfigure(config):\n"
                          "    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
                          "    pathlib.Path(str(config.rootpath), 'rss.txt').write_text(str(rss))\n")
    result = pytester.runpytest_subprocess("packs/toy", "packs/good", "-p", "no:cacheprovider", timeout=120)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED and "Traceback" not in out, out
    limit = "256 MB a case file" if which == "cases" else "512 MB a recording"
    expected = (f"packs/toy/{big.name}: is 1,024 MB, more than the {limit} may be; split it, or check that it is "
                "the file you meant")
    assert expected in out.splitlines(), out
    good = [line for line in out.splitlines() if line.startswith("packs/good/pack.yaml ")]
    assert good and "F" not in good[0], out
    peak_mb = int((pytester.path / "rss.txt").read_text()) / 1024
    assert peak_mb < 600, f"peak RSS {peak_mb:.0f} MB"
