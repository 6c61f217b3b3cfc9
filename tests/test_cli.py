"""`jev-packs`: one rule for paths in every sub-command. Each takes `--root DIR` (default: the current
folder) and reads every relative path it is given (a pack folder, a file, --out, --results-dir) from
there, as `git -C` does; run black-box, from another working folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from packfiles import write_pack
from test_harvest import gold_answers, noul, write_backend

from pytest_jev.cli import parser

SUBCOMMANDS = [["audit", "sample"], ["audit", "kappa"], ["merge"], ["build"], ["harvest"], ["derive-gates"],
               ["index"], ["scoreboard"], ["flips"], ["power"], ["refresh"]]


def jev_packs(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_jev", *map(str, args)], capture_output=True, text=True,
                          check=False, timeout=120, cwd=cwd)


def _subparser(words: list[str]) -> object:
    """The argparse parser of a sub-command (`audit sample` is two words)."""
    import argparse

    current: argparse.ArgumentParser = parser()
    for word in words:
        [group] = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        current = group.choices[word]
    return current


def test_every_subcommand_lists_the_cli_s_subcommands_here() -> None:
    """SUBCOMMANDS is every leaf sub-command of the parser (a new one must join the tests below)."""
    import argparse

    def leaves(p: argparse.ArgumentParser, prefix: list[str]) -> list[list[str]]:
        groups = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not groups:
            return [prefix]
        return [leaf for name, sub in groups[0].choices.items() for leaf in leaves(sub, [*prefix, name])]

    assert sorted(leaves(parser(), [])) == sorted(SUBCOMMANDS)


def test_the_help_lists_every_subcommand() -> None:
    """`jev-packs --help` prints (argparse reads % in a help text as a format: `80% power` broke it)."""
    done = jev_packs("--help", cwd=Path.cwd())
    assert done.returncode == 0, done.stderr
    assert all(f"    {words[0]} " in done.stdout for words in SUBCOMMANDS), done.stdout
    assert "(80% power, two-sided 0.05)" in " ".join(done.stdout.split())


@pytest.mark.parametrize("words", SUBCOMMANDS, ids=" ".join)
def test_every_subcommand_takes_root_and_says_what_it_means(words: list[str]) -> None:
    help_text = " ".join(_subparser(words).format_help().split())  # type: ignore[attr-defined]
    assert "--root DIR" in help_text
    assert "every relative path" in help_text


def test_results_dir_and_the_pack_are_read_from_root_in_every_subcommand(tmp_path: Path) -> None:
    """harvest and derive-gates read --results-dir from --root (harvest read it from the current
    folder, derive-gates from --root); the pack folder and --out too."""
    registry, elsewhere = tmp_path / "registry", tmp_path / "elsewhere"
    packs = registry / "packs"
    write_pack(packs)
    answers = gold_answers()
    answers["c-001"]["refund"] = noul(0.2)
    write_backend(registry / "results", "alpha-1", "sparrow", answers)
    write_backend(registry / "results", "beta-2", "minilm", gold_answers())
    elsewhere.mkdir()
    (elsewhere / "results").mkdir()  # a results folder beside the working folder must not be read

    done = jev_packs("harvest", "packs/tiny-pack", "--root", "../registry", "--results-dir", "results",
                     cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert (registry / "results" / "harvest" / "tiny-pack.harvest.jsonl").is_file()
    assert not (elsewhere / "results" / "harvest").exists()

    done = jev_packs("harvest", "packs/tiny-pack", "--root", "../registry", "--out", "review", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert (registry / "review" / "tiny-pack.harvest.md").is_file()

    sampled = jev_packs("audit", "sample", "packs/tiny-pack", "--fraction", "0.4", "--root", "../registry",
                        "--out", "audit-round", cwd=elsewhere)
    assert sampled.returncode == 0, sampled.stderr
    blind = registry / "audit-round" / "blind.jsonl"
    assert len(blind.read_text(encoding="utf-8").splitlines()) == 2
    labels = registry / "audit-round" / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": json.loads(line)["id"], "labels": {"refund": True}}) + "\n"
                              for line in blind.read_text(encoding="utf-8").splitlines()), encoding="utf-8")
    kappa = jev_packs("audit", "kappa", "packs/tiny-pack", "audit-round/labels.jsonl", "--root", "../registry",
                      cwd=elsewhere)
    assert kappa.returncode == 0, kappa.stderr
    assert "refund" in kappa.stdout


def test_flips_and_power_read_the_pack_recordings_and_outputs_from_root(tmp_path: Path) -> None:
    """flips took its pack, recordings given as paths, --out and --json from the working folder, and
    power its pack, while both read results/ from --root."""
    registry, elsewhere = tmp_path / "registry", tmp_path / "elsewhere"
    write_pack(registry / "packs")
    answers = gold_answers()
    answers["c-001"]["refund"] = noul(0.2)
    write_backend(registry / "results", "alpha-1", "sparrow", answers)
    write_backend(registry / "results", "beta-2", "minilm", gold_answers())
    elsewhere.mkdir()

    done = jev_packs("flips", "results/alpha-1", "beta-2", "--pack", "packs/tiny-pack", "--root", "../registry",
                     "--out", "flips.md", "--json", "flips.json", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert "jev flips tiny-pack vs beta-2" in (registry / "flips.md").read_text(encoding="utf-8")
    assert json.loads((registry / "flips.json").read_text(encoding="utf-8"))["regressed"] == 1
    assert not (elsewhere / "flips.md").exists() and not (elsewhere / "flips.json").exists()

    power = jev_packs("power", "packs/tiny-pack", "--root", "../registry", cwd=elsewhere)
    assert power.returncode == 0, power.stderr
    assert power.stdout.startswith("tiny-pack: ")


def test_derive_gates_reads_the_pack_and_results_from_root(tmp_path: Path) -> None:
    registry, elsewhere = tmp_path / "registry", tmp_path / "elsewhere"
    write_pack(registry / "packs")
    elsewhere.mkdir()
    done = jev_packs("derive-gates", "packs/tiny-pack", "--root", "../registry", "--backend", "alpha-1",
                     cwd=elsewhere)
    # the pack loaded from --root (its folder was read from the working folder), then its evidence
    # folder was looked for under --root's results/
    assert done.returncode == 2
    assert f"no results folder {Path('../registry/results/alpha-1')}" in done.stderr, done.stderr


def test_derive_gates_without_a_results_file_names_it_once_and_how_to_write_it(tmp_path: Path) -> None:
    write_pack(tmp_path / "packs")
    (tmp_path / "results" / "alpha-1").mkdir(parents=True)
    done = jev_packs("derive-gates", "packs/tiny-pack", "--backend", "alpha-1", cwd=tmp_path)
    assert done.returncode == 2
    line = done.stderr.strip()
    assert line.count("alpha-1/tiny-pack.json") == 1, line
    assert line.endswith("no results file to derive gates from; write it: pytest packs/tiny-pack --jev-replay "
                         "--jev-backend=alpha-1 --jev-write-results"), line
