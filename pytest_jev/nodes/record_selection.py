"""--jev-record and --jev-dry-run on the pytest side: record exactly what collection selected,
once, before any item runs.

Recording waits for collection, so `-k`, `-m`, node ids, `--deselect` and `--ignore` decide
what is called (and billed), and `--collect-only` calls nothing. Without xdist it runs in
pytest_collection_finish; under xdist the controller does it when the first worker reports
its collection, before any item is scheduled, so each case is asked once however many
workers grade afterwards. The recordings land in results/<backend-id>/ and the rest of the
run grades them exactly as replay would.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from .. import paths
from ..backends.base import Backend
from ..backends.kinds import BackendSpec
from ..errors import JevError, node_name_part
from ..fileio import is_regular
from ..options import Options
from ..packs import load_pack
from ..packs.model import Case, Pack
from ..record.engine import record_pack_sync
from ..record.journal import read_recording
from ..record.modes import BARE
from ..record.plan import plan
from ..recording_lookup import candidate_recordings
from ..stash import STABILITY_KEY
from .items import relative_to
from .packfile import PACK_FILE, split_pack_nodeid

WHOLE_SPLIT = None  # a selection entry meaning every case of a split (of the pack, for a pack without splits)

# pack folder -> split ("" for a pack without splits) -> the node names of its selected case items, or WHOLE_SPLIT;
# a pack whose items selected need its files only (check[spec]) has no split
Selection = dict[Path, dict[str, "set[str] | None"]]


def _add(selection: Selection, folder: Path, rest: str) -> None:
    """Record that the item `rest` (its node id after pack.yaml: `check[recording]`,
    `tune::case[x]`) of the pack in `folder` was selected. An item of one split selects the
    cases of that split only: `--jev-tune --jev-record` records the tune split, never the held-out one."""
    splits = selection.setdefault(folder, {})
    split, _, name = rest.rpartition("::")
    if name in ("check[spec]", "check[split]"):  # need the pack files only
        return
    if not name.startswith("case["):  # check[recording], gate[...], cases[bulk]: every case of the split
        splits[split] = WHOLE_SPLIT
        return
    chosen = splits.setdefault(split, set())
    if chosen is not WHOLE_SPLIT:
        chosen.add(name)


def selection_from_items(items: Iterable[pytest.Item]) -> tuple[Selection, dict[Path, Pack]]:
    """The packs, splits and cases the session selected, from its items (no xdist), and the packs
    those items loaded, so that recording does not load them again."""
    selection: Selection = {}
    packs: dict[Path, Pack] = {}
    for item in items:
        pack: Pack | None = getattr(item, "pack", None)
        if pack is None or item.path.name != PACK_FILE:
            continue
        found = split_pack_nodeid(item.nodeid)
        if found is not None:
            _add(selection, pack.path, found[1])
            packs[pack.path] = pack
    return selection, packs


def selection_from_nodeids(nodeids: Iterable[str], rootdir: Path) -> Selection:
    """The same, from the node ids an xdist worker collected (the controller has no items)."""
    selection: Selection = {}
    folders: dict[str, Path] = {}  # pack.yaml's path in the node id -> its folder, resolved once
    for nodeid in nodeids:
        found = split_pack_nodeid(nodeid)
        if found is not None:
            path, rest = found
            folder = folders.get(path)
            if folder is None:
                folder = folders[path] = (rootdir / path).parent.resolve()
            _add(selection, folder, rest)
    return selection


def chosen_cases(pack: Pack, splits: Mapping[str, set[str] | None]) -> list[Case] | None:
    """The cases a selection chose of `pack`, in pack order; None for all of them."""
    out: list[Case] = []
    for name, split in pack.splits.items():
        names = splits.get(name, set())
        if names is WHOLE_SPLIT:
            out.extend(split.cases)
        elif names:
            out.extend(case for case in split.cases if f"case[{node_name_part(case.id)}]" in names)
    return None if len(out) == len(pack.cases) else out


def record_selection(config: pytest.Config, options: Options, selection: Selection,
                     loaded: Mapping[Path, Pack] | None = None) -> None:
    """Record (or, with --jev-dry-run, estimate) every selected pack's selected cases; `loaded`
    holds the packs collection already loaded (the xdist controller has none)."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if options.backend is None:
        options.catalog.check_ready(None)  # --jev-record needs a backend
    spec = options.backend
    assert spec is not None
    todo: list[tuple[Pack, list[Case] | None, Backend | None, Path]] = []
    refused: list[str] = []
    for folder, splits in sorted(selection.items()):
        if not any(chosen is WHOLE_SPLIT or chosen for chosen in splits.values()):
            continue  # only check[spec] selected
        pack = (loaded or {}).get(folder)
        if pack is None:
            try:
                pack = load_pack(folder)
            except JevError:
                continue  # its check[spec] item reports the problem
        cases = chosen_cases(pack, splits)
        if cases == []:
            continue
        if options.dry_run:
            backend = None
            first = _start_path(options, spec, spec.folder, pack, spec.request_model or pack.record_model)
        else:
            backend = config.hook.pytest_jev_make_backend(spec=spec, options=options, pack=pack, config=config)
            first = _start_path(options, spec, paths.safe_name(backend.backend_id(None)), pack,
                                spec.request_model or pack.record_model, backend)
        refused.extend(_preflight(options, pack, cases, first, backend))
        todo.append((pack, cases, backend, first))
    if refused:  # decided before the first call: a refused run calls nothing and writes nothing
        head = (f"jev preflight: recording refused before any call, nothing was called or written "
                f"({len(refused)} refusal(s)):")
        raise pytest.UsageError("\n".join([head, *refused]))
    for pack, cases, backend, first in todo:
        if backend is None:
            _dry_run(tr, options, pack, cases, first)
        else:
            _record(config, tr, options, pack, cases, backend, first)


def _preflight(options: Options, pack: Pack, cases: list[Case] | None, first: Path, backend: Backend | None
               ) -> list[str]:
    """Every refusal of recording `pack` that needs no answer (protocol/preflight.py), each round."""
    from ..protocol.preflight import Recorder, refusals  # the recorder's side: imported when a run records

    spec = options.backend
    assert spec is not None
    recorder = Recorder(spec.kind, backend.mode if backend is not None else ("mock" if spec.kind == "mock" else "live"),
                        str(options.record_mode or BARE), spec.request_model, options.shuffle_seed)
    role = str(options.protocol) if options.protocol is not None else None
    out: list[str] = []
    for k in range(1, options.repeat + 1):
        out.extend(refusals(pack, paths.round_path(first, k), recorder, cases=cases, role=role,
                            target_precision=options.target_precision, min_covered=options.min_covered))
    return list(dict.fromkeys(out))


def _dry_run(tr: Any, options: Options, pack: Pack, cases: list[Case] | None, first: Path) -> None:
    """What recording would call and cost: the very calls the run would make (nothing for
    cases already answered), tokens estimated from the bodies that would be sent."""
    spec = options.backend
    assert spec is not None
    calls = tokens_in = tokens_out = 0
    for k in range(1, options.repeat + 1):
        planned = plan(pack, spec.kind, paths.round_path(first, k), mode=options.record_mode or BARE,
                       model=spec.request_model, shuffle_seed=options.shuffle_seed, cases=cases)
        for request in planned.todo:
            calls += 1
            est_in, est_out = spec.estimate_tokens(request)
            tokens_in += est_in
            tokens_out += est_out
    price = spec.list_price
    cost = (f"~${(tokens_in * price[0] + tokens_out * price[1]) / 1e6:.4f}" if price else "unknown cost")
    rounds = f" over {options.repeat} rounds" if options.repeat > 1 else ""
    _say(tr, f"jev dry run {pack.id}: {calls} calls{rounds}, ~{tokens_in} input + ~{tokens_out} output tokens, "
             f"{cost} with --jev-backend={spec.text} (nothing sent)")


def _record(config: pytest.Config, tr: Any, options: Options, pack: Pack, cases: list[Case] | None,
            backend: Backend, first: Path) -> None:
    from ..stability import stability  # grades, so imports numpy: only for --jev-repeat

    spec = options.backend
    assert spec is not None
    quiet = config.get_verbosity() < 0
    folder_id = paths.safe_name(backend.backend_id(None))
    model = spec.request_model
    first.parent.mkdir(parents=True, exist_ok=True)
    repeat = options.repeat
    for k in range(1, repeat + 1):
        label = pack.id if repeat == 1 else f"{pack.id} round {k}/{repeat}"
        progress = None if quiet else _progress_writer(tr, label)
        summary = record_pack_sync(pack, backend, paths.round_path(first, k), mode=options.record_mode or BARE,
                                   concurrency=options.concurrency, rpm=options.rpm, progress=progress,
                                   shuffle_seed=options.shuffle_seed, model=model, cases=cases)
        served = summary.served_models[0] if len(summary.served_models) == 1 else None
        out = _settle(options.results_dir, summary.path,
                      paths.safe_name(backend.backend_id(served)) if served else folder_id)
        if progress is not None:
            tr.write("\n")
        subset = f" ({len(cases)} selected cases)" if cases is not None else ""
        _say(tr, f"jev recorded {label}{subset}: {summary.n_called} called, {summary.n_reused} reused, "
                 f"{summary.n_errors} errors, {summary.calls_per_s:.1f} calls/s -> "
                 f"{relative_to(str(out), config.invocation_params.dir)}")
        if k == 1:
            first = out  # later rounds are compared with the file where round 1 settled
    if repeat > 1:
        result = stability(pack, first, repeat)
        config.stash.setdefault(STABILITY_KEY, []).append(result)
        _say(tr, result.line())


def _start_path(options: Options, spec: BackendSpec, folder_id: str | None, pack: Pack, requested: str,
                backend: Backend | None = None) -> Path:
    """The recording this run continues (or, with mode all, replaces), else a new one.

    A recording settles in the folder named by the model actually served (jev-1.13.0),
    not by the one requested (jev-latest). A later run finds it where replay would
    (--jev-backend's folders) and continues it, so nothing answered is asked again,
    provided its lines were recorded by this backend, endpoint and requested model.
    """
    fresh = paths.recording_file(options.results_dir, folder_id or paths.safe_name(spec.text), pack.id)
    if is_regular(fresh):
        return fresh
    base_url = getattr(backend, "base_url", None) if backend is not None else None
    for path in candidate_recordings(pack.path, pack.id, explicit=None, backend=spec,
                                     results_dir=options.results_dir):
        if not is_regular(path):
            continue
        try:
            lines = list(read_recording(path)[0].values())
        except JevError:
            continue
        if lines and all(line.backend == spec.kind and line.requested_model == requested
                         and (backend is None or line.base_url == base_url) for line in lines):
            return path
    return fresh


def _settle(results_dir: Path, out: Path, final_id: str) -> Path:
    """Move a recording to the folder named by the model actually served, never over another
    and never outside the results folder."""
    target_dir = out.parent.parent / final_id
    if target_dir == out.parent or not paths.inside(target_dir, results_dir):
        return out
    target = target_dir / out.name
    if target.exists():
        return out  # keep both; the user decides
    target_dir.mkdir(parents=True, exist_ok=True)
    shutil.move(str(out), target)
    backend_json = paths.backend_json(out.parent)
    if backend_json.exists() and not paths.backend_json(target_dir).exists():
        shutil.copy2(backend_json, paths.backend_json(target_dir))
    if backend_json.exists() and [p.name for p in out.parent.iterdir()] == [paths.BACKEND_JSON]:
        backend_json.unlink()  # the folder of the requested alias held only this recording
        out.parent.rmdir()
    return target


def _progress_writer(tr: Any, pack_id: str) -> Any:
    """A `\\r`-updated progress line, only on a terminal (tr.isatty) and never under -q."""
    if tr is None or not getattr(tr, "isatty", False):
        return None
    last = [0.0]

    def show(p: Any) -> None:
        now = time.monotonic()
        if now - last[0] < 0.2 and p.done != p.total:
            return
        last[0] = now
        eta = f", ETA {p.eta_s:.0f}s" if p.eta_s is not None else ""
        tr.write(f"\rjev record {pack_id}: {p.done}/{p.total} cases, {p.rate_per_s:.1f}/s, "
                 f"{p.errors} errors{eta}   ", flush=True)
    return show


def _say(tr: Any, line: str) -> None:
    """Every line of ours goes through the terminal reporter (none without one: -p no:terminal)."""
    if tr is not None:
        tr.write_line(line)
