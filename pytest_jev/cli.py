"""`jev-packs` (also `python -m pytest_jev`): thin subcommands, each calling a library function.

One rule for paths, in every subcommand: `--root DIR` (default: the current folder) is the
registry, and every relative path a command is given (a pack folder, a file, --out,
--results-dir) is taken from it, as `git -C DIR` would; an absolute path stays as it is.

Errors in user input print one line and exit 2; tracebacks are for bugs in our code.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import JevError
from .fileio import atomic_write
from .packs import load_pack
from .protocol.merge import merge
from .registry import index
from .registry.audit import agreement, read_ids, read_labels, report_lines, sample, write_blind
from .registry.datasets import build
from .registry.gates_files import derived_text, diff, evidence_folder
from .registry.refresh import refresh
from .registry.scoreboard import PAGE, stale_problem, write_scoreboard

ROOT_HELP = ("the registry (default: the current folder); every relative path this command is given (pack, "
             "files, --out, --results-dir) is taken from it, as with `git -C`")


def _difference(text: str) -> float:
    """--difference: an accuracy difference as a fraction (0.02 = 2 points), above 0 and below 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give a fraction (0.02 = 2 points)") from None
    if not 0 < abs(value) < 1:
        guess = f"; for {value:g} points give {value / 100:g}" if 1 <= abs(value) < 100 else ""
        raise argparse.ArgumentTypeError(f"{text} is not a fraction between 0 and 1 (0.02 = 2 points){guess}")
    return value


def _at(args: argparse.Namespace, path: str) -> Path:
    """A path given on the command line, taken from --root (an absolute one stays as it is)."""
    return Path(args.root) / path


def _audit_sample(args: argparse.Namespace) -> int:
    pack = load_pack(_at(args, args.pack))
    known = {case.id for case in pack.cases}
    excluded = set().union(*(read_ids(_at(args, file), known) for file in args.exclude))
    chosen = sample(pack.cases, args.fraction, args.seed, excluded)
    out = write_blind(pack, chosen, _at(args, args.out))
    drawn = f"the {len(pack.cases) - len(excluded)} not excluded" if excluded else f"{len(pack.cases)}"
    print(f"{len(chosen)} of {drawn} cases of {pack.id} (seed {args.seed}) written to {out / 'blind.jsonl'}")
    return 0


def _audit_kappa(args: argparse.Namespace) -> int:
    pack = load_pack(_at(args, args.pack))
    found = agreement(pack, read_labels(_at(args, args.labels)))
    if args.json:
        print(json.dumps([{"question": a.question, "n": a.n, "agreement": a.observed, "kappa": a.kappa,
                           "disagreements": [list(d) for d in a.disagreements]} for a in found], indent=2))
    else:
        print("\n".join(report_lines(pack, found)))
    return 0


def _merge(args: argparse.Namespace) -> int:
    comparison = merge([_at(args, p) for p in args.reports])
    out = comparison.write(_at(args, args.out))
    print(f"merged {len(args.reports)} reports of {comparison.pack} ({comparison.split}, {comparison.mode}) "
          f"into {out}")
    return 0


def _build(args: argparse.Namespace) -> int:
    built = build(args.name, _at(args, args.source), _at(args, args.out), seed=args.seed, size=args.size,
                  force=args.force)
    counts = (", ".join(f"{label} {n}" for label, n in built.sampled.items()) if len(built.sampled) <= 4
              else f"{sum(1 for n in built.sampled.values() if n)} labels")
    print(f"{sum(built.sampled.values())} cases of {args.name} (seed {args.seed}; {counts}; "
          f"{built.found.duplicates} duplicates skipped) written to {built.out}")
    return 0


def _harvest(args: argparse.Namespace) -> int:
    from .registry.harvest import KINDS, run  # grades recordings, so it imports numpy: only this subcommand pays

    done = run(_at(args, args.pack), results_dir=_at(args, args.results_dir),
               out=_at(args, args.out) if args.out else None,
               names=args.backend or (), include_mock=args.include_mock, limit=args.limit,
               kinds=KINDS if args.kind == "both" else (args.kind,))
    print(done.summary())
    return 0


def _check_or_write(args: argparse.Namespace, page: Path, stale: Callable[[Path], str | None],
                    write: Callable[[Path], Path]) -> int:
    """--check: exit 1 with the one-line reason when the generated file is stale; else write it."""
    root = Path(args.root)
    if args.check:
        problem = stale(root)
        print(problem or f"{root / page}: up to date", file=sys.stderr if problem else sys.stdout)
        return 1 if problem else 0
    print(f"written: {write(root)}")
    return 0


def _scoreboard(args: argparse.Namespace) -> int:
    return _check_or_write(args, PAGE, stale_problem, write_scoreboard)


def _derive_gates(args: argparse.Namespace) -> int:
    pack = load_pack(_at(args, args.pack))
    root = Path(args.root)
    folder = evidence_folder(pack, _at(args, args.results_dir), args.backend)
    new, old, left_out = derived_text(pack, folder, root)
    changes = diff(old, new, str(pack.gates_file))
    print(changes or f"{pack.gates_file}: already what the evidence in {folder} gives", end="" if changes else "\n")
    for gate, why in left_out.items():  # gates a re-record of this backend would not pass
        print(f"left out {gate}: {why}")
    if changes and args.write:
        atomic_write(pack.gates_file, new.encode("utf-8"))
        print(f"written: {pack.gates_file}")
    elif changes:
        print("(not written: pass --write)")
    return 0


def _index(args: argparse.Namespace) -> int:
    return _check_or_write(args, Path(index.INDEX), index.stale_problem, index.write)


def _refresh(args: argparse.Namespace) -> int:
    return refresh(Path(args.root), check=args.check)


def _flips(args: argparse.Namespace) -> int:
    from .registry.flip_files import compare  # grades recordings (numpy, scipy): only this subcommand pays
    from .report.flip_text import markdown

    root = Path(args.root)
    reports = compare(load_pack(_at(args, args.pack)), args.current, args.baseline, root=root,
                      results_dir=_at(args, args.results_dir), here=root, split=args.split, resamples=args.bootstrap,
                      seed=args.seed)
    text = "\n".join(markdown(report, limit=args.limit) for report in reports)
    if args.json:
        path = _at(args, args.json)
        for report in reports:
            out = path if len(reports) == 1 else path.with_name(f"{path.stem}.{report.split}{path.suffix}")
            report.write(out)
    if args.out:
        out = _at(args, args.out)
        atomic_write(out, text.encode("utf-8"))
        print(f"written: {out}")
    else:
        print(text, end="")
    return 0


def _power(args: argparse.Namespace) -> int:
    from .registry.power import report_lines  # reads the results files and computes (scipy)

    pack = load_pack(_at(args, args.pack))
    print("\n".join(report_lines(pack, Path(args.root), args.difference)))
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="jev-packs", description="jev-packs registry tools. Every subcommand takes "
                                  "--root DIR (default: the current folder): every relative path it is given "
                                  "(pack, files, --out, --results-dir) is taken from there, as with `git -C`.")
    commands = top.add_subparsers(dest="command", required=True)
    audit = commands.add_parser("audit", help="blind label audits of a pack")
    steps = audit.add_subparsers(dest="step", required=True)
    s = steps.add_parser("sample", help="write a seeded blind sample (states only) for an annotator")
    s.add_argument("pack")
    s.add_argument("--fraction", type=float, default=0.2)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--exclude", action="append", default=[], metavar="FILE",
                   help="a labels.jsonl or blind.jsonl of an earlier round: its cases are left out of the draw, "
                        "the sample keeps the size --fraction gives for the whole pack (repeatable)")
    s.add_argument("--out", required=True)
    s.set_defaults(run=_audit_sample)
    k = steps.add_parser("kappa", help="Cohen's kappa per question against the annotator's labels")
    k.add_argument("pack")
    k.add_argument("labels", help='JSONL: {"id": ..., "labels": {question: label}} per line')
    k.add_argument("--json", action="store_true")
    k.set_defaults(run=_audit_kappa)
    m = commands.add_parser("merge", help="held-out reports of several backends side by side (same pack, split, "
                                          "data, rubric, protocol and seed; mock and live never merge)")
    m.add_argument("reports", nargs="+", help="report.<split>.json files written by --jev-heldout runs")
    m.add_argument("--out", required=True, help="where to write the comparison (JSON)")
    m.set_defaults(run=_merge)
    b = commands.add_parser("build", help="build a dataset-derived pack from its upstream file (never committed)")
    b.add_argument("name", choices=["sms-spam", "boolq-yes-no", "banking-intent"])
    b.add_argument("--source", required=True, help="the upstream file as published (see the pack's README)")
    b.add_argument("--out", required=True, help="the pack folder to write, named like the pack")
    b.add_argument("--seed", type=int, default=42)
    b.add_argument("--size", type=int, default=150, help="number of cases (stratified by label)")
    b.add_argument("--force", action="store_true", help="replace an existing pack folder")
    b.set_defaults(run=_build)
    h = commands.add_parser("harvest", help="cases where backends disagree with each other or all with the gold "
                                            "label, as a review file (Markdown and JSONL) for label fixes")
    h.add_argument("pack", help="the pack folder")
    h.add_argument("--results-dir", default="results", help="the folder of backend folders (default: results, "
                                                            "under --root)")
    h.add_argument("--backend", action="append", metavar="NAME",
                   help="a backend folder (or backend kind) to compare; repeat it; default: every folder "
                        "with a recording of the pack, mock ones left out")
    h.add_argument("--include-mock", action="store_true", help="compare mock backends too (they answer from the "
                                                               "gold labels, so they say nothing about them)")
    h.add_argument("--out", help="output folder (default: <results-dir>/harvest)")
    h.add_argument("--limit", type=int, help="rows per Markdown table (the JSONL holds every row)")
    h.add_argument("--kind", choices=["all-wrong", "split", "both"], default="both")
    h.set_defaults(run=_harvest)
    g = commands.add_parser("derive-gates", help="derive a pack's gates.yaml from its recorded evidence")
    g.add_argument("pack")
    g.add_argument("--backend", help="results folder whose evidence sets the gates (default: the pinned model's)")
    g.add_argument("--results-dir", default="results", help="the folder of backend folders (default: results, "
                                                            "under --root)")
    g.add_argument("--write", action="store_true", help="write gates.yaml (default: print the diff only)")
    g.set_defaults(run=_derive_gates)
    x = commands.add_parser("index", help="write index.json (the registry's packs) from packs/ and results/")
    x.add_argument("--check", action="store_true", help="exit 1 if index.json is stale; write nothing")
    x.set_defaults(run=_index)
    sb = commands.add_parser("scoreboard", help="write docs/index.html (the scoreboard) from packs/ and results/")
    sb.add_argument("--check", action="store_true", help="exit 1 if docs/index.html is stale; write nothing")
    sb.set_defaults(run=_scoreboard)
    f = commands.add_parser("flips", help="compare two recordings of a pack item by item (regressed, fixed, the "
                                          "paired interval, McNemar, power) as Markdown for a pull-request comment")
    f.add_argument("current", metavar="A", help="the current recording: a backend or results folder name (as "
                                                "--jev-backend takes), or a recording file or folder")
    f.add_argument("baseline", metavar="B", help="the baseline, named the same ways")
    f.add_argument("--pack", required=True, help="the pack folder")
    f.add_argument("--split", help="only this split of a pack that declares splits (default: each)")
    f.add_argument("--results-dir", default="results", help="relative to --root (default: results)")
    f.add_argument("--out", help="write the Markdown here (default: print it)")
    f.add_argument("--json", help="also write the report as JSON (flips.schema.json; one file per split: "
                                  "<stem>.<split>.json)")
    f.add_argument("--limit", type=int, default=50, help="regressed and fixed items listed (default 50; the JSON "
                                                         "holds all)")
    f.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    f.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    f.set_defaults(run=_flips)
    pw = commands.add_parser("power", help="the smallest accuracy difference a pack can tell at its size (80%% "
                                           "power, two-sided 0.05), and the cases a given difference needs")
    pw.add_argument("pack", help="the pack folder")
    pw.add_argument("--difference", type=_difference,
                    help="an accuracy difference to detect (0.02 = 2 points): how many cases it needs")
    pw.set_defaults(run=_power)
    r = commands.add_parser("refresh", help="regenerate results files, reports, evidence, flip reports, index.json "
                            "and the scoreboard from the committed recordings")
    r.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything is stale")
    r.set_defaults(run=_refresh)
    for command in (s, k, m, b, h, g, x, sb, f, pw, r):  # every subcommand: one rule for paths
        command.add_argument("--root", default=".", metavar="DIR", help=ROOT_HELP)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except JevError as exc:
        print(f"jev-packs: {exc.one_line()}", file=sys.stderr)
        return 1 if exc.refusal else 2
    except BrokenPipeError:  # `jev-packs ... | head`: the reader left, which is fine
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
