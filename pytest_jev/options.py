"""Every --jev-* flag, its ini twin, and the frozen Options they are parsed into once.

The command line wins over the ini file, as in pytest's own logging plugin.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from .errors import OptionError

CASE_ITEMS_MAX = 20_000  # above this many cases a pack is graded in bulk unless told otherwise
RECORD_MODES = ("once", "new_episodes", "all", "none")


@dataclass(frozen=True)
class Flag:
    name: str  # without the leading --
    help: str
    default: Any = None
    kind: str = "string"  # string | bool | int | float | path
    ini: bool = True
    metavar: str | None = None

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


FLAGS = (
    Flag("jev-replay", "grade committed recordings, offline (the default mode)", False, "bool", ini=False),
    Flag("jev-recording", "recording to grade: a predictions.jsonl file, or a folder of <pack>.predictions.jsonl",
         metavar="PATH", kind="path", ini=False),
    Flag("jev-backend", "backend id whose recordings to use: results/<backend>/<pack>.predictions.jsonl",
         metavar="NAME"),
    Flag("jev-results-dir", "folder of per-backend recordings, relative to the rootdir", "results",
         metavar="DIR"),
    Flag("jev-strict", "a valid answer that disagrees with the gold label fails its case item", False, "bool"),
    Flag("jev-bootstrap", "bootstrap resamples for the accuracy and ECE intervals (0 turns them off)", 1000,
         "int", metavar="N"),
    Flag("jev-seed", "seed of the bootstrap resamples", 0, "int", metavar="N"),
    Flag("jev-price-input", "USD per million input tokens (default: backend.json pricing, else Jev's 0.042)",
         None, "float", metavar="USD"),
    Flag("jev-price-output", "USD per million output tokens (default: backend.json pricing, else 0)",
         None, "float", metavar="USD"),
    Flag("jev-target-precision", "suggest the highest-coverage threshold reaching this precision", None,
         "float", metavar="P"),
    Flag("jev-no-gates", "compute metrics only; gate items are skipped", False, "bool"),
    Flag("jev-json", "write every run's metrics as JSON: {\"runs\": [...]}", None, "path", ini=False,
         metavar="PATH"),
    Flag("jev-case-items", "one item per case (all), one bulk item per pack (none), or all up to "
         "jev_case_items_max cases (auto)", "auto", metavar="auto|all|none"),
    Flag("jev-case-items-max", f"largest pack that gets per-case items under auto (default {CASE_ITEMS_MAX})",
         CASE_ITEMS_MAX, "int", metavar="N"),
    Flag("jev-record", "call the backend for cases the recording lacks, then grade: once (default), "
         "new_episodes, all, none", None, "record", ini=False, metavar="MODE"),
    Flag("jev-base-url", "base URL of the backend (a Jev-compatible replica, a gateway, an OpenAI-compatible "
         "server)", None, metavar="URL"),
    Flag("jev-model", "model to request (jev: default the pack's tested version or jev-latest; sonnet, "
         "openrouter: instead of their default; a spec naming its model wins)", None, metavar="NAME"),
    Flag("jev-concurrency", "requests in flight while recording", 8, "int", metavar="N"),
    Flag("jev-rpm", "pace recording at most N requests per minute", None, "float", metavar="N"),
    Flag("jev-dry-run", "print calls, estimated tokens and cost of recording; call nothing", False, "bool",
         ini=False),
    Flag("jev-shuffle-options", "record with choice options permuted by this seed (levels keep order)", None,
         "int", metavar="SEED", ini=False),
    Flag("jev-repeat", "record N rounds (round k in <pack>.predictions-r<k>.jsonl) and report how many "
         "decisions flip between rounds", 1, "int", metavar="N", ini=False),
    Flag("jev-mismatches", "how many mismatches the summary lists per pack (-v lists all)", 20, "int",
         metavar="N"),
    Flag("jev-split", "run only this split of packs that declare splits (e.g. tune, heldout)", None,
         metavar="NAME"),
    Flag("jev-tune", "protocol: on the tune split, fit thresholds per question and locale and freeze them in "
         "<pack>.thresholds.json beside the recording", False, "bool", ini=False),
    Flag("jev-heldout", "protocol: on the held-out split, check the frozen thresholds and report the selective "
         "metrics at them", False, "bool", ini=False),
    Flag("jev-write-results", "registry: write results/<backend>/<pack>.json and .md (and evidence.md for the "
         "pinned model) from this run, instead of checking them", False, "bool", ini=False),
    Flag("jev-min-covered", "protocol: fewest decided samples a tuned threshold needs (default 10)", 10, "int",
         metavar="N"),
    # pytest-jev 0.1.0's flags, accepted so its CI lines run unchanged; each has its nearest meaning here, and
    # the fixture's summary says in one line what it did (fixture/migration.py)
    Flag("jev-provider", "pytest-jev's: which backend --jev-record uses when --jev-backend is not given: "
         "typesafe (jev), openrouter, auto (openrouter if OPENROUTER_API_KEY is set, else jev if TYPESAFE_API_KEY "
         "is); replay is unchanged", None, metavar="auto|openrouter|typesafe"),
    Flag("jev-no-cache", "pytest-jev's: an overridden jev_client is asked again, not answered from "
         ".pytest_cache; recorded answers still replay (--jev-record=all asks those again)", False, "bool",
         ini=False),
    Flag("jev-require", "pytest-jev's: nothing more to require here, an answer that is not recorded always "
         "fails its test", False, "bool"),
)
PROVIDERS = {"typesafe": "jev", "openrouter": "openrouter", "auto": None}  # pytest-jev's provider -> backend


@dataclass(frozen=True)
class Options:
    replay: bool
    recording: str | None
    backend: str | None
    results_dir: Path
    strict: bool
    bootstrap: int
    seed: int
    price_input: float | None
    price_output: float | None
    target_precision: float | None
    no_gates: bool
    json_path: Path | None
    case_items: str
    case_items_max: int
    mismatches: int
    rootdir: Path
    verbose: int
    record_mode: str | None = None
    base_url: str | None = None
    model: str | None = None
    concurrency: int = 8
    rpm: float | None = None
    dry_run: bool = False
    shuffle_seed: int | None = None
    repeat: int = 1
    split: str | None = None
    protocol: str | None = None  # "tune" or "heldout": a protocol run (--jev-tune, --jev-heldout)
    min_covered: int = 10
    write_results: bool = False  # --jev-write-results: refresh the registry's results files
    registry: bool = False  # the rootdir holds index.json: results files are checked (check[results])
    provider: str | None = None  # pytest-jev's --jev-provider: the backend --jev-record uses when none is named
    no_cache: bool = False  # pytest-jev's --jev-no-cache: an overridden jev_client's cache is not read
    require: bool = False  # pytest-jev's --jev-require: accepted; an unrecorded answer fails anyway


def addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jev", "typed-decision question packs (pytest_jev)")
    for flag in FLAGS:
        help_text = flag.help + (f" (ini: {flag.dest})" if flag.ini else "")
        if flag.kind == "record":
            group.addoption(f"--{flag.name}", nargs="?", const="once", default=None, dest=flag.dest,
                            metavar=flag.metavar, help=help_text)
        elif flag.kind == "bool":
            group.addoption(f"--{flag.name}", action="store_true", default=None, dest=flag.dest, help=help_text)
        else:
            group.addoption(f"--{flag.name}", default=None, dest=flag.dest, metavar=flag.metavar, help=help_text)
        if flag.ini:
            kind: Literal["bool", "string"] = "bool" if flag.kind == "bool" else "string"
            parser.addini(flag.dest, help=flag.help, default=None, type=kind)


def _raw(config: pytest.Config, flag: Flag) -> Any:
    value = config.getoption(flag.dest)
    if value is None and flag.ini:
        value = config.getini(flag.dest)
        if value in ("", None, []):
            value = None
    return flag.default if value is None else value


def _number(flag: Flag, value: Any, convert: Callable[[Any], Any], check: Callable[[Any], bool], wanted: str) -> Any:
    if value is None:
        return None
    try:
        number = convert(value)
    except (TypeError, ValueError):
        number = None
    if number is None or (isinstance(number, float) and not math.isfinite(number)) or not check(number):
        raise OptionError(f"--{flag.name}={value!r} is not {wanted}", fix=f"pass --{flag.name}=<{wanted}>")
    return number


def parse(config: pytest.Config) -> Options:
    by_name = {f.name: f for f in FLAGS}

    def get(name: str) -> Any:
        return _raw(config, by_name[name])

    def num(name: str, convert: Callable[[Any], Any], check: Callable[[Any], bool], wanted: str) -> Any:
        return _number(by_name[name], get(name), convert, check, wanted)

    case_items = str(get("jev-case-items")).strip().lower()
    if case_items not in ("auto", "all", "none"):
        raise OptionError(f"--jev-case-items={case_items!r} is not auto, all or none",
                          fix="pass --jev-case-items=auto|all|none")
    json_path = get("jev-json")
    record_mode = get("jev-record")
    if record_mode is not None and record_mode not in RECORD_MODES:
        raise OptionError(f"--jev-record={record_mode!r} is not a record mode",
                          fix=f"pass --jev-record or --jev-record={'|'.join(RECORD_MODES)}")
    if record_mode is not None and get("jev-replay"):
        raise OptionError(f"--jev-replay and --jev-record={record_mode} contradict each other: replay never "
                          "calls a backend", fix="drop one of the two flags")
    if record_mode == "none":
        record_mode = None
    provider = (get("jev-provider") or "").strip().lower() or None
    if provider is not None and provider not in PROVIDERS:
        raise OptionError(f"--jev-provider={provider!r} is not one of: {', '.join(PROVIDERS)} (pytest-jev's "
                          "providers)", fix="pass --jev-provider=typesafe|openrouter|auto, or --jev-backend=NAME")
    backend = get("jev-backend") or None
    if backend is None and provider is not None and (record_mode is not None or get("jev-dry-run")):
        backend = provider_backend(provider)
    protocol, split = _protocol(bool(get("jev-tune")), bool(get("jev-heldout")), (get("jev-split") or "").strip())
    repeat = num("jev-repeat", int, lambda n: n >= 1, "a whole number >= 1")
    if repeat > 1 and record_mode is None and not get("jev-dry-run"):
        raise OptionError(f"--jev-repeat={repeat} repeats a recording, but nothing is recorded",
                          fix="add --jev-record (once resumes unfinished rounds, all redoes them)")
    return Options(
        replay=bool(get("jev-replay")),
        recording=get("jev-recording"),
        backend=backend,
        results_dir=Path(config.rootpath, get("jev-results-dir")),
        strict=bool(get("jev-strict")),
        bootstrap=num("jev-bootstrap", int, lambda n: n >= 0, "a whole number >= 0"),
        seed=num("jev-seed", int, lambda n: n >= 0, "a whole number >= 0"),
        price_input=num("jev-price-input", float, lambda x: x >= 0, "a price >= 0"),
        price_output=num("jev-price-output", float, lambda x: x >= 0, "a price >= 0"),
        target_precision=num("jev-target-precision", float, lambda x: 0 < x <= 1, "a precision in (0, 1]"),
        no_gates=bool(get("jev-no-gates")),
        json_path=Path(json_path) if json_path else None,
        case_items=case_items,
        case_items_max=num("jev-case-items-max", int, lambda n: n >= 0, "a whole number >= 0"),
        mismatches=num("jev-mismatches", int, lambda n: n >= 0, "a whole number >= 0"),
        rootdir=config.rootpath,
        verbose=config.getoption("verbose") or 0,
        record_mode=record_mode,
        base_url=get("jev-base-url") or None,
        model=get("jev-model") or None,
        concurrency=num("jev-concurrency", int, lambda n: n >= 1, "a whole number >= 1"),
        rpm=num("jev-rpm", float, lambda x: x > 0, "a rate > 0"),
        dry_run=bool(get("jev-dry-run")),
        shuffle_seed=num("jev-shuffle-options", int, lambda n: n >= 0, "a seed >= 0"),
        repeat=repeat,
        split=split,
        protocol=protocol,
        min_covered=num("jev-min-covered", int, lambda n: n >= 1, "a whole number >= 1"),
        write_results=bool(get("jev-write-results")),
        registry=Path(config.rootpath, "index.json").is_file(),
        provider=provider,
        no_cache=bool(get("jev-no-cache")),
        require=bool(get("jev-require")),
    )


def provider_backend(provider: str, env: Mapping[str, str] | None = None) -> str:
    """The backend that records for pytest-jev's `--jev-provider`: typesafe is jev, openrouter is
    openrouter (Jev through OpenRouter); auto is openrouter when OPENROUTER_API_KEY is set, else jev
    when TYPESAFE_API_KEY is, as pytest-jev chooses. OptionError (in pytest-jev's words) without a key."""
    backend = PROVIDERS[provider]
    if backend is not None:
        return backend
    env = os.environ if env is None else env
    for variable, kind in (("OPENROUTER_API_KEY", "openrouter"), ("TYPESAFE_API_KEY", "jev")):
        if env.get(variable, "").strip():
            return kind
    raise OptionError("pytest-jev: no API key found, set TYPESAFE_API_KEY or OPENROUTER_API_KEY (--jev-provider=auto "
                      "records with the backend whose key is set)",
                      fix="set one, or name the backend with --jev-backend (sparrow records offline, without a key)")


def _protocol(tune: bool, heldout: bool, split: str) -> tuple[str | None, str | None]:
    """(protocol role, split): --jev-tune runs the tune split, --jev-heldout the held-out one."""
    if tune and heldout:
        raise OptionError("--jev-tune and --jev-heldout are two runs: tune first, then held-out",
                          fix="run pytest once with --jev-tune, then once with --jev-heldout")
    role = "tune" if tune else "heldout" if heldout else None
    if role is not None and split and split != role:
        raise OptionError(f"--jev-{role} runs the {role} split, but --jev-split names '{split}'",
                          fix=f"drop --jev-split, or pass --jev-split {role}")
    return role, (role or split or None)
