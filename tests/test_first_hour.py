"""A new user's first hour (issue 19): what a run says at its ends. A dry run ends cleanly; a run
in a registry says the registry checks are on, and why."""

from __future__ import annotations

import pytest
from packfiles import write_pack


def test_a_dry_run_ends_cleanly_with_exit_code_0(pytester: pytest.Pytester) -> None:
    """No `!!! _pytest.outcomes.Exit` banner (pytest.exit's), nothing run, exit code 0."""
    write_pack(pytester.path / "packs")
    result = pytester.runpytest_subprocess("packs", "--jev-dry-run", "--jev-backend=mock")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["jev dry run tiny-pack: 5 calls, *(nothing sent)", "*no tests ran in *"])
    text = result.stdout.str() + result.stderr.str()
    assert "Exit" not in text and "!!!" not in text, text
    assert not (pytester.path / "results").exists()  # nothing was recorded
