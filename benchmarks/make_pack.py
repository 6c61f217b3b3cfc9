"""Write a synthetic pack of N cases (3 questions) and a recording for it, for benchmarks.

    python benchmarks/make_pack.py DIR N
creates DIR/packs/bench-N/{pack.yaml,cases.jsonl,gates.yaml,README.md,CHANGELOG.md}
and DIR/results/bench/bench-N.predictions.jsonl (about 80% of answers right).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

PACK = """spec: 0
id: bench-{n}
version: 0.1.0
license: CC0-1.0
tested: null
description: "Synthetic benchmark pack. Non-goals: meaning."
state:
  description: A short text.
  fields: [text]
questions:
  flag:
    type: noul
    instructions: "Is `text` flagged?"
  route:
    type: choice
    instructions: "Where does `text` go?"
    options: {{a: first, b: second, c: third, unknown: cannot tell}}
  level:
    type: score
    instructions: "How strong is `text`?"
    levels: [low, mid, high, unknown]
thresholds:
  flag: {{true: 0.8, false: 0.8}}
"""
GATES = "min_accuracy: 0.5\nmax_ece: 0.5\nmax_cost_per_case_usd: 0.001\nmax_p95_latency_ms: 2000\n"


def main(root: Path, n: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    folder = root / "packs" / f"bench-{n}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pack.yaml").write_text(PACK.format(n=n))
    (folder / "gates.yaml").write_text(GATES)
    (folder / "README.md").write_text("synthetic\n")
    (folder / "CHANGELOG.md").write_text("## 0.1.0\n")
    routes, levels = ["a", "b", "c", "unknown"], ["low", "mid", "high", "unknown"]
    rec_dir = root / "results" / "bench"
    rec_dir.mkdir(parents=True, exist_ok=True)
    with (folder / "cases.jsonl").open("w") as cases, (rec_dir / f"bench-{n}.predictions.jsonl").open("w") as rec:
        for i in range(n):
            cid = f"b-{i:07d}"
            gold = {"flag": rng.random() < 0.5, "route": rng.choice(routes), "level": rng.choice(levels)}
            cases.write(json.dumps({"id": cid, "state": {"text": f"text {i} " * 8}, "expect": gold}) + "\n")
            right = rng.random() < 0.8
            p = round(rng.uniform(0.5, 1.0), 2)
            route = gold["route"] if right else rng.choice(routes)
            level = gold["level"] if right else rng.choice(levels)
            rest = round((1 - p) / 3, 4)
            answers = {
                "flag": {"type": "noul", "noul": p if (gold["flag"] == right) else round(1 - p, 2)},
                "route": {"type": "choice", "choice": route, "confidence": p,
                          "probabilities": {r: (round(1 - 3 * rest, 4) if r == route else rest) for r in routes}},
                "level": {"type": "score", "score": 1.0, "confidence": p,
                          "probabilities": {str(j): (round(1 - 3 * rest, 4) if lv == level else rest)
                                            for j, lv in enumerate(levels)}},
            }
            rec.write(json.dumps({"case_id": cid, "model": "bench-1", "latency_ms": round(rng.uniform(50, 900), 1),
                                  "usage": {"input_tokens": 300, "output_tokens": 20}, "answers": answers,
                                  "error": None}) + "\n")
    return folder


if __name__ == "__main__":
    print(main(Path(sys.argv[1]), int(sys.argv[2])))
