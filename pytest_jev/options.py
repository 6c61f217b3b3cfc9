"""Every --jev-* flag, its ini twin, and the frozen Options they are parsed into, once per run.

The command line wins over the ini file, as in pytest's own logging plugin. `options_of(config)`
is the one place that reads them (config.getoption, config.getini): it parses on the first call
(whichever plugin's pytest_configure comes first) and keeps the result in config.stash. Modes and
roles become enums, numbers numbers, and --jev-backend a BackendSpec parsed against the catalog
of backend kinds (installed ones and those the pytest_jev_backend_kinds hook adds). Below this
module no code sees a raw flag or spec string.

Kept as one module because it is the one place a flag is declared, read and checked: the FLAGS
table, the Options it fills and each value's check (pytest-jev's three flags included) read best
side by side, and splitting them would put a flag's help and its check in two files.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Literal

import pytest

from .backends.catalog import Catalog
from .backends.kinds import BackendSpec
from .errors import JevError, OptionError
from .record.modes import BARE, RecordMode
from .stash import OPTIONS_KEY
from .verdicts import check_threshold

CASE_ITEMS_MAX = 20_000  # above this many cases a pack is graded in bulk unless told otherwise
DEFAULT_THRESHOLD = 0.8  # the jev fixture's claim threshold
ANSWERS_DIR = "jev_answers"  # the jev fixture's recorded answers, beside each test module


class OptionWord(str, Enum):
    """An option's value, one of a set of words; printed as the word (`all`, not `CaseItems.ALL`)."""

    def __str__(self) -> str:
        return str(self.value)


class CaseItems(OptionWord):
    """--jev-case-items: one item per case, one bulk item per pack, or per case up to a size."""

    AUTO = "auto"
    ALL = "all"
    NONE = "none"


class Provider(OptionWord):
    """pytest-jev's --jev-provider: the service its requests went to (provider_backend: ours)."""

    TYPESAFE = "typesafe"
    OPENROUTER = "openrouter"
    AUTO = "auto"


PROVIDER_KINDS = {Provider.TYPESAFE: "jev", Provider.OPENROUTER: "openrouter"}  # the backend kind of each
AUTO_KEYS = (("OPENROUTER_API_KEY", Provider.OPENROUTER), ("TYPESAFE_API_KEY", Provider.TYPESAFE))  # auto's order


class Source(OptionWord):
    """Where a flag's value came from (the command line wins over the ini file)."""

    COMMAND_LINE = "command line"
    INI = "ini"


class ProtocolRole(OptionWord):
    """The protocol run --jev-tune or --jev-heldout asks for."""

    TUNE = "tune"
    HELDOUT = "heldout"


@dataclass(frozen=True)
class Flag:
    name: str  # without the leading --
    help: str
    default: Any = None
    kind: str = "string"  # string | bool | int | float | path | record
    ini: bool = True
    metavar: str | None = None
    ini_help: str | None = None  # the ini twin's help, when it is not `help`

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
    Flag("jev-target-precision", "suggest the highest-coverage threshold reaching this precision (protocol: the "
         "target a tune run fits, default 0.9; a held-out run takes the frozen one)", None, "float", metavar="P"),
    Flag("jev-no-gates", "compute metrics only; gate items are skipped", False, "bool"),
    Flag("jev-json", "write every run's metrics as JSON: {\"runs\": [...]}", None, "path", ini=False,
         metavar="PATH"),
    Flag("jev-case-items", "one item per case (all), one bulk item per pack (none), or all up to "
         "jev_case_items_max cases (auto)", "auto", metavar="auto|all|none"),
    Flag("jev-case-items-max", f"largest pack that gets per-case items under auto (default {CASE_ITEMS_MAX})",
         CASE_ITEMS_MAX, "int", metavar="N"),
    Flag("jev-record", "call the backend, then grade: new_episodes (bare: what the recording lacks), once (only "
         "where there is no recording yet), all (everything again), none (replay)", None, "record", ini=False,
         metavar="MODE"),
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
    Flag("jev-min-covered", "protocol: fewest decided samples a tuned threshold needs (default 10; a held-out run "
         "takes the frozen one)", None, "int", metavar="N"),
    Flag("jev-baseline", "compare with a baseline, item by item (regressed, fixed, paired interval, McNemar): a "
         "backend or results folder name as --jev-backend takes, or a recording file or folder; for the jev "
         "fixture, an answers file or folder", None, metavar="NAME|PATH", ini=False),
    # the jev fixture's own
    Flag("jev-threshold", f"probability a claim needs for jev.holds (default {DEFAULT_THRESHOLD}); jev.lacks needs at "
         "most 1 minus this; score comparisons need this much mass", DEFAULT_THRESHOLD, "float", metavar="P",
         ini_help=f"default claim threshold of the jev fixture ({DEFAULT_THRESHOLD})"),
    Flag("jev-answers-dir", f"folder, beside each test module, of the jev fixture's recorded answers (default "
         f"{ANSWERS_DIR})", ANSWERS_DIR, metavar="DIR",
         ini_help=f"folder of recorded answers beside each test module ({ANSWERS_DIR})"),
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
    # the registry's checks: on only when asked (an index.json at the rootdir does not switch them on)
    Flag("jev-registry", "registry checks: each pack gets check[results], which holds results/<backend>/ files, "
         "index.json and the scoreboard to the recordings (only for the registry's own results/ folder)", False,
         "bool"),
)


@dataclass(frozen=True)
class Options:
    replay: bool
    recording: str | None
    backend: BackendSpec | None  # --jev-backend, parsed once
    results_dir: Path
    strict: bool
    bootstrap: int
    seed: int
    price_input: float | None
    price_output: float | None
    target_precision: float | None
    no_gates: bool
    json_path: Path | None
    case_items: CaseItems
    case_items_max: int
    mismatches: int
    rootdir: Path
    verbose: int
    record_mode: RecordMode | None = None  # None: nothing is recorded (replay, or --jev-record=none)
    base_url: str | None = None
    model: str | None = None
    concurrency: int = 8
    rpm: float | None = None
    dry_run: bool = False
    shuffle_seed: int | None = None
    repeat: int = 1
    split: str | None = None
    protocol: ProtocolRole | None = None  # a protocol run (--jev-tune, --jev-heldout)
    min_covered: int | None = None  # --jev-min-covered; None: not given (tune: 10, held-out: the frozen one)
    write_results: bool = False  # --jev-write-results: refresh the registry's results files
    registry: bool = False  # --jev-registry / jev_registry, on results/ under the rootdir: check[results] items
    threshold: float = DEFAULT_THRESHOLD  # the jev fixture's claim threshold
    answers_dir: str = ANSWERS_DIR  # the jev fixture's answers folder
    provider: Provider | None = None  # pytest-jev's --jev-provider (the backend it names is in `backend`)
    no_cache: bool = False  # pytest-jev's --jev-no-cache: an overridden jev_client's cache is not read
    require: bool = False  # pytest-jev's --jev-require: accepted; an unrecorded answer fails anyway
    given: tuple[tuple[str, str], ...] = ()  # (flag, value) of the --jev-* flags given on the command line
    sources: tuple[tuple[str, Source], ...] = ()  # (flag, where it was set) of every --jev-* flag this run set
    catalog: Catalog = field(default_factory=Catalog, compare=False, repr=False)  # the run's backend kinds
    baseline: BackendSpec | None = None  # --jev-baseline naming a backend or results folder, parsed once
    baseline_path: Path | None = None  # --jev-baseline naming a file or folder (a recording, or answers)

    @property
    def baseline_given(self) -> bool:
        return self.baseline is not None or self.baseline_path is not None

    def given_flag(self, name: str) -> str | None:
        """The value of --<name> as given on the command line (for hints that repeat it); None."""
        return next((value for flag, value in self.given if flag == name), None)

    def source(self, name: str) -> Source | None:
        """Where --<name> was set: on the command line, in the ini file, or (None) nowhere."""
        return next((where for flag, where in self.sources if flag == name), None)


def registry_results(rootdir: Path) -> Path:
    """The registry's results folder: `jev-packs refresh`, index.json and the scoreboard read this one."""
    return rootdir / "results"


def registry_header(options: Options, inifile: str | None) -> str | None:
    """The header line that says whether registry checks run, and why (None: nothing to say)."""
    where = options.source("jev-registry")  # None: not switched on (unset, or false)
    if where is None:
        if (options.rootdir / "index.json").is_file():
            return ("jev: index.json is at the rootdir, but registry checks are off: set jev_registry = true in the "
                    "ini file (or pass --jev-registry) to check results/ and index.json against the recordings")
        return None
    shown = options.given_flag("jev-results-dir") or str(options.results_dir)
    if not options.registry:
        return (f"jev: registry checks off for this run: --jev-results-dir {shown} is not the registry's results/ "
                "(--jev-registry checks it too)")
    named = "--jev-registry" if where is Source.COMMAND_LINE else f"jev_registry in {inifile or 'the ini file'}"
    if options.results_dir != registry_results(options.rootdir):
        return f"jev: registry checks on ({named}): check[results] holds {shown}/ to the recordings"
    return f"jev: registry checks on ({named}): check[results] holds results/ and index.json to the recordings"


def options_of(config: pytest.Config) -> Options:
    """The run's Options, parsed on the first call and kept in config.stash; a bad value is a
    one-line UsageError."""
    options = config.stash.get(OPTIONS_KEY, None)
    if options is None:
        try:
            options = config.stash[OPTIONS_KEY] = parse(config)
        except JevError as exc:
            raise pytest.UsageError(exc.one_line()) from None
    return options


def dry_run_requested(config: pytest.Config) -> bool:
    """--jev-dry-run, read before configure (pytest_cmdline_main decides whether xdist starts)."""
    return bool(getattr(config.option, "jev_dry_run", None))


def addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jev", "typed-decision question packs (pytest_jev)")
    for flag in FLAGS:
        help_text = flag.help + (f" (ini: {flag.dest})" if flag.ini else "")
        if flag.kind == "record":
            group.addoption(f"--{flag.name}", nargs="?", const=BARE.value, default=None, dest=flag.dest,
                            metavar=flag.metavar, help=help_text)
        elif flag.kind == "bool":
            group.addoption(f"--{flag.name}", action="store_true", default=None, dest=flag.dest, help=help_text)
        else:
            group.addoption(f"--{flag.name}", default=None, dest=flag.dest, metavar=flag.metavar, help=help_text)
        if flag.ini:
            kind: Literal["bool", "string"] = "bool" if flag.kind == "bool" else "string"
            parser.addini(flag.dest, help=flag.ini_help or flag.help, default=None, type=kind)


def _read(config: pytest.Config, flag: Flag) -> tuple[Any, Source | None]:
    """A flag's value (the command line's, else the ini file's, else its default) and where it
    was set (None: nowhere, the default)."""
    value = config.getoption(flag.dest)
    if value is not None:
        return value, Source.COMMAND_LINE
    if flag.ini:
        value = config.getini(flag.dest)
        if value not in ("", None, [], False):
            return value, Source.INI
        if value is False:  # an unset ini bool reads as False
            return False, None
    return flag.default, None


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
    read = {flag.name: _read(config, flag) for flag in FLAGS}

    def get(name: str) -> Any:
        return read[name][0]

    def num(name: str, convert: Callable[[Any], Any], check: Callable[[Any], bool], wanted: str) -> Any:
        return _number(by_name[name], get(name), convert, check, wanted)

    case_items = str(get("jev-case-items")).strip().lower()
    if case_items not in tuple(c.value for c in CaseItems):
        raise OptionError(f"--jev-case-items={case_items!r} is not auto, all or none",
                          fix="pass --jev-case-items=auto|all|none")
    json_path = get("jev-json")
    record_mode = _record_mode(get("jev-record"), bool(get("jev-replay")))
    provider = _provider(get("jev-provider"))
    protocol, split = _protocol(bool(get("jev-tune")), bool(get("jev-heldout")), (get("jev-split") or "").strip())
    repeat = num("jev-repeat", int, lambda n: n >= 1, "a whole number >= 1")
    if repeat > 1 and record_mode is None and not get("jev-dry-run"):
        raise OptionError(f"--jev-repeat={repeat} repeats a recording, but nothing is recorded",
                          fix="add --jev-record (new_episodes resumes unfinished rounds, all redoes them)")
    threshold = _threshold(get("jev-threshold"))
    model, base_url = get("jev-model") or None, get("jev-base-url") or None
    catalog = Catalog(kind for kinds in config.hook.pytest_jev_backend_kinds(config=config) for kind in kinds)
    text = get("jev-backend") or None
    if text is None and provider is not None and (record_mode is not None or get("jev-dry-run")):
        text = provider_backend(provider)  # pytest-jev's provider names the backend that records
    results_dir = Path(config.rootpath, get("jev-results-dir"))
    baseline, baseline_path = _baseline(get("jev-baseline"), catalog, config.invocation_params.dir, results_dir)
    backend = catalog.parse(text, model=model, base_url=base_url) if text else None
    if backend is not None and backend.known is None and record_mode is None and not get("jev-dry-run"):
        from .recording_lookup import refuse_unknown  # a name no kind knows: a results folder, or a typo

        refuse_unknown(backend, catalog, results_dir)  # a recording run refuses it in its own words
    return Options(
        replay=bool(get("jev-replay")),
        recording=get("jev-recording"),
        backend=backend,
        results_dir=results_dir,
        strict=bool(get("jev-strict")),
        bootstrap=num("jev-bootstrap", int, lambda n: n >= 0, "a whole number >= 0"),
        seed=num("jev-seed", int, lambda n: n >= 0, "a whole number >= 0"),
        price_input=num("jev-price-input", float, lambda x: x >= 0, "a price >= 0"),
        price_output=num("jev-price-output", float, lambda x: x >= 0, "a price >= 0"),
        target_precision=num("jev-target-precision", float, lambda x: 0 < x <= 1, "a precision in (0, 1]"),
        no_gates=bool(get("jev-no-gates")),
        json_path=Path(json_path) if json_path else None,
        case_items=CaseItems(case_items),
        case_items_max=num("jev-case-items-max", int, lambda n: n >= 0, "a whole number >= 0"),
        mismatches=num("jev-mismatches", int, lambda n: n >= 0, "a whole number >= 0"),
        rootdir=config.rootpath,
        verbose=config.getoption("verbose") or 0,
        record_mode=record_mode,
        base_url=base_url,
        model=model,
        concurrency=num("jev-concurrency", int, lambda n: n >= 1, "a whole number >= 1"),
        rpm=num("jev-rpm", float, lambda x: x > 0, "a rate > 0"),
        dry_run=bool(get("jev-dry-run")),
        shuffle_seed=num("jev-shuffle-options", int, lambda n: n >= 0, "a seed >= 0"),
        repeat=repeat,
        split=split,
        protocol=protocol,
        min_covered=num("jev-min-covered", int, lambda n: n >= 1, "a whole number >= 1"),
        write_results=bool(get("jev-write-results")),
        # the ini's jev_registry means the registry's results/; --jev-registry asks for this run's folder too
        registry=bool(get("jev-registry"))
        and (Path(config.rootpath, get("jev-results-dir")) == registry_results(config.rootpath)
             or read["jev-registry"][1] is Source.COMMAND_LINE),
        threshold=threshold,
        answers_dir=str(get("jev-answers-dir")),
        provider=provider,
        no_cache=bool(get("jev-no-cache")),
        require=bool(get("jev-require")),
        given=tuple((name, str(value)) for name, (value, where) in read.items()
                    if where is Source.COMMAND_LINE and by_name[name].kind != "bool"),
        sources=tuple((name, where) for name, (_value, where) in read.items() if where is not None),
        catalog=catalog,
        baseline=baseline,
        baseline_path=baseline_path,
    )


def _baseline(value: Any, catalog: Catalog, here: Path, results_dir: Path) -> tuple[BackendSpec | None, Path | None]:
    """--jev-baseline: a backend spec or a path (recording_lookup.parse_target)."""
    if value is None:
        return None, None
    from .recording_lookup import parse_target  # reads no file: only when the flag is given

    return parse_target(str(value), catalog, here, results_dir=results_dir)


def _record_mode(value: Any, replay: bool) -> RecordMode | None:
    """--jev-record's mode; None when nothing is recorded (no flag, or `none`: replay only)."""
    if value is None:
        return None
    try:
        mode = RecordMode(value)
    except ValueError:
        raise OptionError(f"--jev-record={value!r} is not a record mode",
                          fix=f"pass --jev-record or --jev-record={'|'.join(m.value for m in RecordMode)}") from None
    if replay:
        raise OptionError(f"--jev-replay and --jev-record={mode} contradict each other: replay never "
                          "calls a backend", fix="drop one of the two flags")
    return None if mode is RecordMode.NONE else mode


def _threshold(value: Any) -> float:
    """The fixture's claim threshold: 0.5 to 1 (below 0.5 a claim could pass holds and lacks at
    once). Out of range, pytest-jev's words come first: CI logs are grepped for them."""
    fix = "pass --jev-threshold=<0.5..1> (or set jev_threshold)"
    try:
        threshold = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"--jev-threshold={str(value)!r} is not a number", fix=fix) from None
    try:
        return check_threshold(threshold)
    except ValueError as exc:
        raise OptionError(str(exc), fix=fix) from None


def _provider(value: Any) -> Provider | None:
    """pytest-jev's --jev-provider, as a Provider; None when not set."""
    text = str(value or "").strip().lower()
    if not text:
        return None
    try:
        return Provider(text)
    except ValueError:
        raise OptionError(f"--jev-provider={text!r} is not one of: {', '.join(p.value for p in Provider)} "
                          "(pytest-jev's providers)",
                          fix="pass --jev-provider=typesafe|openrouter|auto, or --jev-backend=NAME") from None


def provider_backend(provider: Provider | str, env: Mapping[str, str] | None = None) -> str:
    """The backend kind that records for pytest-jev's `--jev-provider` (parsed into a BackendSpec
    by the catalog, as a --jev-backend of that name would be): typesafe is `jev`, openrouter is
    `openrouter` (Jev through OpenRouter); auto is openrouter when OPENROUTER_API_KEY is set, else
    jev when TYPESAFE_API_KEY is, as pytest-jev chooses. OptionError (in pytest-jev's words)
    without a key."""
    provider = Provider(provider)
    if provider is not Provider.AUTO:
        return PROVIDER_KINDS[provider]
    env = os.environ if env is None else env
    for variable, chosen in AUTO_KEYS:
        if env.get(variable, "").strip():
            return PROVIDER_KINDS[chosen]
    raise OptionError("pytest-jev: no API key found, set TYPESAFE_API_KEY or OPENROUTER_API_KEY (--jev-provider=auto "
                      "records with the backend whose key is set)",
                      fix="set one, or name the backend with --jev-backend (sparrow records offline, without a key)")


def _protocol(tune: bool, heldout: bool, split: str) -> tuple[ProtocolRole | None, str | None]:
    """(protocol role, split): --jev-tune runs the tune split, --jev-heldout the held-out one."""
    if tune and heldout:
        raise OptionError("--jev-tune and --jev-heldout are two runs: tune first, then held-out",
                          fix="run pytest once with --jev-tune, then once with --jev-heldout")
    role = ProtocolRole.TUNE if tune else ProtocolRole.HELDOUT if heldout else None
    if role is not None and split and split != role.value:
        raise OptionError(f"--jev-{role} runs the {role} split, but --jev-split names '{split}'",
                          fix=f"drop --jev-split, or pass --jev-split {role}")
    return role, (role.value if role is not None else split or None)
