"""check[results]: the registry's files of a run (results/<backend>/<pack>.json and .md, the
pack's evidence.md) agree with its recording; --jev-write-results writes them instead.

The registry's modules (results files, index, scoreboard, gates) are imported by runtest: every
pytest session imports this module, and only a registry's replay or --jev-write-results needs them.
"""

from __future__ import annotations

from pathlib import Path

from ..options import registry_results
from ..paths import SCOREBOARD_PAGE
from ..stash import WRITTEN_KEY
from .items import JevFailure, RunItem


class ResultsItem(RunItem):
    def runtest(self) -> None:
        from ..registry.gates_files import looser_problems
        from ..registry.index import entry_problem
        from ..registry.results_files import sync
        from ..registry.scoreboard import pack_stale_problem

        run = self.ready()
        result = run.result()
        options = run.options
        # other backends' files are checked once per pack: with the first split's run
        first = next(iter(self.pack.splits))
        written, problems = sync(self.pack, result.run, result.recording_path, options.results_dir, options.rootdir,
                                 write_files=options.write_results, siblings=run.split == first)
        if run.split == first and not options.write_results:
            problems.extend(looser_problems(self.pack, options.rootdir))
            if options.registry and options.results_dir == registry_results(options.rootdir):  # index.json's
                problems.extend(p for p in [entry_problem(self.pack, options.rootdir)] if p)
                if (options.rootdir / SCOREBOARD_PAGE).is_file():  # a registry may publish no page
                    problems.extend(p for p in [pack_stale_problem(options.rootdir, self.pack.id)] if p)
        if problems:
            raise JevFailure(problems)
        for path in written:
            self.add_report_section("call", "jev", f"written: {path}")
        self.user_properties.append((WRITTEN_KEY, [str(p) for p in written]))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, self.name

