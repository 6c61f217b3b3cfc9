"""--jev-record: record the packs of this run once, on the controller, before any item runs.

Recording happens in pytest_sessionstart (before xdist starts its workers), so each
case is asked once however many workers grade afterwards. The recordings land in
results/<backend-id>/ and the rest of the run grades them exactly as replay would.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .errors import JevError
from .options import Options
from .nodes import STABILITY_KEY
from .stability import round_path, stability


def pack_folders(config: pytest.Config) -> list[Path]:
    """Pack folders under the run's arguments (or the rootdir / testpaths when none)."""
    found: list[Path] = []
    for arg in config.args or [str(config.rootpath)]:
        path = Path(arg.split("::")[0])
        if not path.is_absolute():
            path = Path(config.invocation_params.dir, path)
        if (path / "pack.yaml").is_file():
            found.append(path.resolve())
        elif path.is_dir():
            found.extend(p.parent.resolve() for p in sorted(path.rglob("pack.yaml"))
                         if not any(part.startswith(".") for part in p.parts))
    return sorted(set(found))


def _progress_writer(tr: Any, pack_id: str) -> Any:
    if tr is None or not sys.stdout.isatty():
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


def record_run(config: pytest.Config, options: Options) -> None:
    """Record every pack of the run; replay then finds each recording under results/<backend-id>/."""
    from .backends.registry import make_backend
    from .packs import load_pack
    from .recorder import dry_run, record_pack_sync

    tr = config.pluginmanager.get_plugin("terminalreporter")
    quiet = (config.getoption("verbose") or 0) < 0
    if not options.backend:
        raise JevError("--jev-record needs a backend", fix="pass --jev-backend=jev|sparrow|minilm|sonnet|"
                                                         "anthropic:<model>|openai:<model>|mock")
    for folder in pack_folders(config):
        try:
            pack = load_pack(folder)
        except JevError:
            continue  # its check[spec] item reports the problem
        repeat = options.repeat
        if options.dry_run:
            d = dry_run(pack, options.backend, options.model)
            cost = (f"${d.est_cost_usd * repeat:.4f}" if d.est_cost_usd is not None else "unknown cost")
            rounds = f" ({repeat} rounds)" if repeat > 1 else ""
            _say(tr, f"jev dry run {pack.id}: {d.n_calls * repeat} calls{rounds}, "
                     f"~{d.est_input_tokens * repeat} input tokens, ~{cost} "
                     f"with --jev-backend={options.backend} (nothing sent)")
            continue
        gold = {c.id: dict(c.expect) for c in pack.cases}
        backend = make_backend(options.backend, base_url=options.base_url, model=options.model, gold=gold)
        folder_id = backend.backend_id(None)
        model = options.model if backend.name == "jev" else None  # other backends name their model in the spec
        requested = model or pack.record_model
        first = _start_path(options, backend, folder, pack.id, requested)
        first.parent.mkdir(parents=True, exist_ok=True)
        for k in range(1, repeat + 1):
            label = pack.id if repeat == 1 else f"{pack.id} round {k}/{repeat}"
            out = round_path(first, k)
            progress = None if quiet else _progress_writer(tr, label)
            summary = record_pack_sync(pack, backend, out, mode=options.record_mode,
                                       concurrency=options.concurrency, rpm=options.rpm, progress=progress,
                                       shuffle_seed=options.shuffle_seed, model=model)
            served = summary.served_models[0] if len(summary.served_models) == 1 else None
            out = _settle(out, backend.backend_id(served) if served else folder_id)
            if tr is not None and progress is not None:
                tr.write("\n")
            _say(tr, f"jev recorded {label}: {summary.n_called} called, {summary.n_reused} reused, "
                     f"{summary.n_errors} errors, {summary.calls_per_s:.1f} calls/s -> {out}")
            if k == 1:
                first = out  # later rounds are compared with the file where round 1 settled
        if repeat > 1:
            result = stability(pack, first, repeat)
            config.stash.setdefault(STABILITY_KEY, []).append(result)
            _say(tr, result.line())


def _start_path(options: Options, backend: Any, folder: Path, pack_id: str, requested: str) -> Path:
    """The recording this run continues (or, with mode all, replaces), else a new one.

    A recording settles in the folder named by the model actually served (jev-1.13.0),
    not by the one requested (jev-latest). A later run finds it where replay would
    (--jev-backend's newest folder) and continues it, so nothing answered is asked again,
    provided its lines were recorded by this backend, endpoint and requested model.
    """
    from .journal import read_recording
    from .recording import candidate_paths

    fresh = options.results_dir / backend.backend_id(None) / f"{pack_id}.predictions.jsonl"
    if fresh.is_file():
        return fresh
    base_url = getattr(backend, "base_url", None)
    for path in candidate_paths(folder, pack_id, explicit=None, backend=options.backend,
                                results_dir=options.results_dir):
        if not path.is_file():
            continue
        try:
            lines = read_recording(path)[0].values()
        except JevError:
            continue
        if lines and all(line.get("backend") == backend.name and line.get("requested_model") == requested
                         and line.get("base_url") == base_url for line in lines):
            return path
    return fresh


def _settle(out: Path, final_id: str) -> Path:
    """Move a recording to the folder named by the model actually served, never over another."""
    target_dir = out.parent.parent / final_id
    if target_dir == out.parent:
        return out
    target = target_dir / out.name
    if target.exists():
        return out  # keep both; the user decides
    target_dir.mkdir(parents=True, exist_ok=True)
    shutil.move(str(out), target)
    backend_json = out.parent / "backend.json"
    if backend_json.exists() and not (target_dir / "backend.json").exists():
        shutil.copy2(backend_json, target_dir / "backend.json")
    if backend_json.exists() and [p.name for p in out.parent.iterdir()] == ["backend.json"]:
        backend_json.unlink()  # the folder of the requested alias held only this recording
        out.parent.rmdir()
    return target


def _say(tr: Any, line: str) -> None:
    if tr is not None:
        tr.write_line(line)
    else:
        print(line)
