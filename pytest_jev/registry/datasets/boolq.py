"""boolq-yes-no from BoolQ: the official jsonl (train.jsonl or dev.jsonl), one object per
line with `question`, `title`, `answer` (a JSON boolean) and `passage`.

pack.yaml is the jev-packs boolq-yes-no pack's word for word (id, state fields, question,
instructions, thresholds), so its recordings replay against a built pack. `title` is not
part of the state there, so it is not here either.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...fileio import loads
from .dataset import CC_BY_SA_3_0, BuildError, Dataset, Row, Upstream, normalise, text_lines

FORMAT = "pass BoolQ's official train.jsonl or dev.jsonl (one JSON object per line; test.jsonl has no answers)"


def read(path: Path, text: str) -> list[Row]:
    rows = []
    for number, line in enumerate(text_lines(text), 1):
        if not line.strip():
            continue
        try:
            doc = loads(line)
        except ValueError as exc:
            raise BuildError(f"not a JSON line ({getattr(exc, 'msg', exc)})", file=path, line=number,
                             fix=FORMAT) from None
        if not isinstance(doc, dict):
            raise BuildError("a line must be a JSON object", file=path, line=number, fix=FORMAT)
        missing = [key for key in ("question", "passage", "answer") if key not in doc]
        if missing:
            raise BuildError(f"no {' or '.join(missing)}", file=path, line=number, fix=FORMAT)
        if not isinstance(doc["answer"], bool):
            raise BuildError(f"answer is {json.dumps(doc['answer'])[:40]}, not true or false", file=path,
                             line=number, fix="BoolQ's answers are JSON booleans; " + FORMAT)
        question, passage = doc["question"], doc["passage"]
        if not (isinstance(question, str) and isinstance(passage, str) and normalise(question)
                and normalise(passage)):
            raise BuildError("question and passage must be non-empty strings", file=path, line=number, fix=FORMAT)
        rows.append(Row((normalise(question), normalise(passage)), "true" if doc["answer"] else "false"))
    return rows


PACK_YAML = """\
# Built by `jev-packs build boolq-yes-no` from the upstream file; README.md says how.
spec: 0
id: boolq-yes-no
version: 0.1.0
license: CC-BY-SA-3.0
tested: null
description: >-
  Reading comprehension: does the passage answer the question with yes?
  Non-goals: extracting the answer span, judging answer quality.
state:
  description: One natural question and one Wikipedia passage.
  fields: [question, passage]
questions:
  answer_yes:
    type: noul
    instructions: "According to `passage`, is the answer to `question` yes?"
thresholds:
  answer_yes: {true: 0.85, false: 0.85}
"""

DATASET = Dataset(
    name="boolq-yes-no", prefix="bq", fields=("question", "passage"), question="answer_yes",
    labels=("true", "false"), upstream_names={"true": "answer: true", "false": "answer: false"}, read=read,
    pack_yaml=PACK_YAML,
    summary=("Yes/no reading comprehension over real search questions and Wikipedia passages. It tests "
             "whether a decision model reads the passage, including the `false` cases where the passage "
             "looks on-topic but does not support a yes."),
    notes=("Gold is the dataset's `answer` field; the Wikipedia `title` is not part of the state.\n\n"
           "pack.yaml is jev-packs' boolq-yes-no pack.yaml but for `tested: null` (same id, state fields, "
           "question, instructions and thresholds): a recording of that pack replays here for every case id "
           "both hold. Its cases were drawn 75 yes / 75 no; this build samples in proportion to the source."),
    upstream=Upstream(
        title="BoolQ",
        get=("`train.jsonl` or `dev.jsonl` of BoolQ as published by Google Research "
             "(<https://github.com/google-research-datasets/boolean-questions>), unchanged."),
        citation=("C. Clark, K. Lee, M.-W. Chang, T. Kwiatkowski, M. Collins, K. Toutanova, *BoolQ: Exploring "
                  "the Surprising Difficulty of Natural Yes/No Questions*, NAACL 2019, "
                  "<https://arxiv.org/abs/1905.10044>. Passages are from Wikipedia."),
        license=CC_BY_SA_3_0),
)
