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
        if options.dry_run:
            d = dry_run(pack, options.backend, options.model)
            cost = f"${d.est_cost_usd:.4f}" if d.est_cost_usd is not None else "unknown cost"
            _say(tr, f"jev dry run {pack.id}: {d.n_calls} calls, ~{d.est_input_tokens} input tokens, ~{cost} "
                     f"with --jev-backend={options.backend} (nothing sent)")
            continue
        gold = {c.id: dict(c.expect) for c in pack.cases}
        backend = make_backend(options.backend, base_url=options.base_url, model=options.model, gold=gold)
        folder_id = backend.backend_id(None)
        out = options.results_dir / folder_id / f"{pack.id}.predictions.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        progress = None if quiet else _progress_writer(tr, pack.id)
        summary = record_pack_sync(pack, backend, out, mode=options.record_mode, concurrency=options.concurrency,
                                   rpm=options.rpm, progress=progress, shuffle_seed=options.shuffle_seed,
                                   model=options.model if backend.name == "jev" else None)
        served = summary.served_models[0] if len(summary.served_models) == 1 else None
        out = _settle(out, backend.backend_id(served) if served else folder_id)
        if tr is not None and progress is not None:
            tr.write("\n")
        _say(tr, f"jev recorded {pack.id}: {summary.n_called} called, {summary.n_reused} reused, "
                 f"{summary.n_errors} errors, {summary.calls_per_s:.1f} calls/s -> {out}")


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
    return target


def _say(tr: Any, line: str) -> None:
    if tr is not None:
        tr.write_line(line)
    else:
        print(line)
