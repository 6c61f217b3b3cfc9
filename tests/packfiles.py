"""Write small but valid pack folders (SPEC.md v0) for recorder and backend tests, and read back
what a recording run wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

COMMON = """\
state:
  description: One support message and its reference.
  fields: [ref, message]
questions:
  queue:
    type: choice
    instructions: {queue_instructions}
    options:
      billing: Charges, refunds, invoices and payment problems.
      technical: Bugs, crashes, error messages and features that do not work.
      unknown: None of the above, or not enough information to tell.
  refund:
    type: noul
    instructions: Does `message` ask for money back?
"""  # state and two questions both test packs share

PACK_YAML = """\
spec: 0
id: {pack_id}
version: 0.1.0
license: CC0-1.0
tested: null
description: A tiny support pack for recorder tests; not a benchmark.
{common}  urgency:
    type: score
    instructions: How urgent is `message`?
    levels: [low, high, unknown]
    level_descriptions:
      low: Nothing is blocked; it can wait a few days.
      high: Something important is broken or money is being lost right now.
"""

PACK_YAML = PACK_YAML.replace("{common}", COMMON)

MESSAGES = [
    ("I was charged twice for my subscription, please refund me.", "billing", True, "high"),
    ("The app crashes every time I open the settings page.", "technical", False, "high"),
    ("Could you send me last month's invoice as a PDF?", "billing", False, "low"),
    ("I get error 502 when I upload a file.", "technical", False, "low"),
    ("What are your opening hours?", "unknown", False, "unknown"),
]


def case_id(i: int) -> str:
    return f"c-{i:03d}"


def write_pack(root: Path, n: int = 5, *, pack_id: str = "tiny-pack", prefix: str = "",
               queue_instructions: str = "Which team should handle `message`?") -> Path:
    """A pack folder with n cases; state.ref is the case id (the loopback servers key on it)."""
    folder = root / pack_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pack.yaml").write_text(PACK_YAML.format(pack_id=pack_id, queue_instructions=queue_instructions),
                                      encoding="utf-8")
    (folder / "README.md").write_text("Test pack.\n", encoding="utf-8")
    # a gates.yaml is written because a pack without one currently fails to load
    # (Gates() -> frozen_map() needs its argument: see the report)
    (folder / "gates.yaml").write_text("min_accuracy: 0.05\n", encoding="utf-8")
    (folder / "CHANGELOG.md").write_text("0.1.0: first.\n", encoding="utf-8")
    lines = []
    for i in range(1, n + 1):
        message, queue, refund, urgency = MESSAGES[(i - 1) % len(MESSAGES)]
        case: dict[str, Any] = {"id": case_id(i), "state": {"ref": case_id(i), "message": prefix + message},
                                "expect": {"queue": queue, "refund": refund, "urgency": urgency}}
        lines.append(json.dumps(case))
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def set_message(folder: Path, cid: str, message: str) -> None:
    """Change one case's state (so its request fingerprint changes)."""
    path = folder / "cases.jsonl"
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case["id"] == cid:
            case["state"]["message"] = message
        out.append(json.dumps(case))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


SPLIT_PACK = """\
spec: 1
id: {pack_id}
version: 0.1.0
license: CC0-1.0
tested: null
description: A tiny bilingual split pack for protocol tests; not a benchmark.
{common}splits:
{splits}
thresholds:
  refund: {{true: 0.8, false: 0.8}}
"""
SPLIT_PACK = SPLIT_PACK.replace("{common}", COMMON)


def write_split_pack(root: Path, per_locale: int = 12, *, pack_id: str = "split-pack",
                     queue_instructions: str = "Which team should handle `message`?",
                     splits: tuple[str, ...] = ("tune", "heldout")) -> Path:
    """A spec-1 pack: each split holds `per_locale` cases in each of two locales (vi, en), tagged."""
    import hashlib

    folder = root / pack_id
    folder.mkdir(parents=True, exist_ok=True)
    declared = []
    n = 0
    for split in splits:
        lines = []
        for locale in ("vi", "en"):
            for _ in range(per_locale):
                n += 1
                message, queue, refund, _urgency = MESSAGES[(n - 1) % len(MESSAGES)]
                cid = f"s-{locale}-{n:03d}"
                tags = ["refund-ask"] if refund else ["plain"]
                lines.append(json.dumps({"id": cid, "state": {"ref": cid, "message": f"[{locale} {n}] {message}"},
                                         "expect": {"queue": queue, "refund": refund}, "locale": locale,
                                         "tags": tags}, ensure_ascii=False))
        data = ("\n".join(lines) + "\n").encode("utf-8")
        (folder / f"{split}.jsonl").write_bytes(data)
        declared.append(f"  {split}: {{file: {split}.jsonl, sha256: {hashlib.sha256(data).hexdigest()}, "
                        f"lines: {len(lines)}}}")
    (folder / "pack.yaml").write_text(SPLIT_PACK.format(pack_id=pack_id, queue_instructions=queue_instructions,
                                                        splits="\n".join(declared)), encoding="utf-8")
    (folder / "README.md").write_text("Test pack.\n", encoding="utf-8")
    (folder / "CHANGELOG.md").write_text("0.1.0: first.\n", encoding="utf-8")
    (folder / "gates.yaml").write_text("min_accuracy: 0.05\n", encoding="utf-8")
    return folder


def lines_by_case(path: Path) -> dict[str, dict[str, Any]]:
    """A recording's (or journal's) lines, keyed by case id, in file order."""
    return {x["case_id"]: x for x in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def only_injected_failures(result: Any) -> None:
    """A pytester run whose only failed items are case items of cases the mock failed on purpose
    (`--jev-backend=mock` injects seeded failures: backends/mock.py, HARNESS_FAILURES)."""
    text = result.stdout.str()
    failed = [line for line in result.stdout.lines if line.startswith("FAILED ")]
    assert result.ret in (0, 1), text
    assert all("::case[" in line for line in failed), failed
    assert text.count("recorded error: ") >= len(failed), text  # a mock recording's error lines: all injected
