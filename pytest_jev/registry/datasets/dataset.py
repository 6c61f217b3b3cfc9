"""What every dataset builder shares: a row read from the upstream file, the dataset's
description (taxonomy, pack.yaml, attribution), and the error bad input raises."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import JevError


class BuildError(JevError):
    """The upstream file, or the build's arguments, cannot make the pack."""


@dataclass(frozen=True, slots=True)
class Row:
    """One upstream record: its state values (in the pack's field order) and its pack label."""

    values: tuple[str, ...]
    label: str


@dataclass(frozen=True, slots=True)
class License:
    """The terms a built pack keeps from its upstream data."""

    spdx: str  # the pack's `license:` field
    name: str
    url: str  # the deed; its legal code is at url + "legalcode"
    share_alike: bool = False


CC_BY_4_0 = License("CC-BY-4.0", "Creative Commons Attribution 4.0 International (CC BY 4.0)",
                    "https://creativecommons.org/licenses/by/4.0/")
CC_BY_SA_3_0 = License("CC-BY-SA-3.0", "Creative Commons Attribution-ShareAlike 3.0 Unported (CC BY-SA 3.0)",
                       "https://creativecommons.org/licenses/by-sa/3.0/", share_alike=True)


@dataclass(frozen=True, slots=True)
class Upstream:
    """Where the data comes from and under which terms, for README.md and LICENSE."""

    title: str  # e.g. "SMS Spam Collection v.1"
    get: str  # which file to pass as --source and where it is published (Markdown)
    citation: str  # Markdown, authors first
    license: License


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str  # the pack id, and the name `jev-packs build` takes
    prefix: str  # case ids are <prefix>-NNNN, numbered in the shuffled sample's order
    fields: tuple[str, ...]  # state fields, in pack.yaml's order
    question: str
    labels: tuple[str, ...]  # the taxonomy: pack labels, in the order sampling walks them
    upstream_names: Mapping[str, str]  # pack label -> the label as the upstream file spells it
    read: Callable[[Path, str], list[Row]]  # the upstream file's text -> rows, BuildError on bad input
    pack_yaml: str
    summary: str  # README's opening paragraph
    notes: str  # README's dataset-specific notes (Markdown), may be empty
    upstream: Upstream

    def gold(self, label: str) -> Any:
        """The `expect` value of a label: a JSON boolean for a noul pack, the label otherwise."""
        if self.labels == ("true", "false"):
            return label == "true"
        return label


def normalise(text: str) -> str:
    """Runs of whitespace (line breaks, tabs, NBSP) become one space, as the jev-packs builds do."""
    return " ".join(text.split())


def text_lines(text: str) -> list[str]:
    """Lines split on \\n alone (a trailing \\r dropped): str.splitlines would also break on
    U+2028 and the other separators a message may hold, and shift every line number after it."""
    return [line.removesuffix("\r") for line in text.split("\n")]
