"""Shared fixtures: a small but complete pack written into any folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# pytester's in-process runs drop modules first imported inside a run; numpy cannot be
# imported twice in one process, so the heavy modules the plugin imports lazily load here.
import jsonschema  # noqa: F401
import numpy  # noqa: F401
import yaml  # noqa: F401

import pytest_jev.evaluate  # noqa: F401
import pytest_jev.packs.loader  # noqa: F401
import pytest_jev.report.json  # noqa: F401
import pytest_jev.report.terminal  # noqa: F401
import pytest_jev.session  # noqa: F401

COMPAT = Path(__file__).resolve().parents[2] / "shared" / "compat" / "jev-packs"

PACK_YAML = """\
spec: 0
id: {id}
version: 0.1.0
license: CC0-1.0
tested: null
description: "Toy triage pack for the plugin tests. Non-goals: realism."
state:
  description: One short message.
  fields: [message]
questions:
  refund:
    type: noul
    instructions: "Does the customer ask for money back?"
  queue:
    type: choice
    instructions: "Which team should handle `message`?"
    options:
      billing: payments and invoices
      technical: bugs and errors
      unknown: cannot tell
  urgency:
    type: score
    instructions: "How urgent is `message`?"
    levels: [low, high, unknown]
    level_descriptions:
      high: something is broken right now
thresholds:
  refund: {{true: 0.8, false: 0.8}}
"""

LABELS = {"queue": ["billing", "technical", "unknown"], "urgency": ["low", "high", "unknown"]}


def gold(i: int) -> dict[str, Any]:
    return {"refund": i % 2 == 0, "queue": LABELS["queue"][i % 3], "urgency": LABELS["urgency"][i % 3]}


def answer_line(case_id: str, expect: dict[str, Any], right: bool = True, p: float = 0.9,
                latency: float | None = 100.0) -> dict[str, Any]:
    """A jevassert-style recording line answering `expect` (or the next label when not right)."""
    def pick(labels: list[str], label: str) -> str:
        return label if right else labels[(labels.index(label) + 1) % len(labels)]

    queue = pick(LABELS["queue"], expect["queue"])
    urgency = pick(LABELS["urgency"], expect["urgency"])
    rest = round((1 - p) / 2, 4)
    qprobs = {lab: (p if lab == queue else rest) for lab in LABELS["queue"]}
    uprobs = {str(i): (p if lab == urgency else rest) for i, lab in enumerate(LABELS["urgency"])}
    refund = expect["refund"] if right else not expect["refund"]
    return {"case_id": case_id, "model": "jev-1.13.0", "latency_ms": latency,
            "usage": {"input_tokens": 300, "output_tokens": 20},
            "answers": {"refund": {"type": "noul", "noul": p if refund else round(1 - p, 4)},
                        "queue": {"type": "choice", "choice": queue, "confidence": p, "probabilities": qprobs},
                        "urgency": {"type": "score", "score": 1.0, "confidence": p, "probabilities": uprobs}},
            "error": None}


def write_pack(root: Path, pack_id: str = "toy", n: int = 12, wrong: set[int] = frozenset(),
               gates: str | None = "min_accuracy: 0.5\nmax_ece: 0.5\n", recording: str | None = "results/jev-1.13.0",
               ) -> Path:
    """A valid pack under root/packs/<id>, and its recording (a subset of cases answered wrongly)."""
    folder = root / "packs" / pack_id
    folder.mkdir(parents=True)
    (folder / "pack.yaml").write_text(PACK_YAML.format(id=pack_id))
    cases = [{"id": f"{pack_id}-{i:04d}", "state": {"message": f"message number {i}"}, "expect": gold(i)}
             for i in range(1, n + 1)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    if gates is not None:
        (folder / "gates.yaml").write_text(gates)
    (folder / "README.md").write_text("# toy\n")
    (folder / "CHANGELOG.md").write_text("## 0.1.0\n")
    if recording is not None:
        rec_dir = root / recording
        rec_dir.mkdir(parents=True, exist_ok=True)
        lines = [answer_line(c["id"], c["expect"], right=i not in wrong) for i, c in enumerate(cases, 1)]
        (rec_dir / f"{pack_id}.predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return folder


@pytest.fixture
def toy(pytester: pytest.Pytester) -> Path:
    folder = write_pack(pytester.path, wrong={2, 5})
    pytester.makeini("[pytest]\njev_backend = jev-1.13.0\n")
    return folder
