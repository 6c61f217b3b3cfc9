"""sms-spam from the SMS Spam Collection: UCI's `SMSSpamCollection` file, one
`ham<TAB>text` or `spam<TAB>text` per line.

pack.yaml is the jev-packs sms-spam pack's word for word (id, state field, question,
instructions, thresholds), so its recordings replay against a built pack.
"""

from __future__ import annotations

from pathlib import Path

from .dataset import CC_BY_4_0, BuildError, Dataset, Row, Upstream, normalise, text_lines

FORMAT = "pass the SMSSpamCollection file from UCI's zip: one `ham<TAB>text` or `spam<TAB>text` per line"
LABELS = {"spam": "true", "ham": "false"}
COMPAT = ("pack.yaml is jev-packs' sms-spam pack.yaml but for `tested: null` (same id, state field, question, "
          "instructions and thresholds): a recording of that pack replays here for every case id both hold. "
          "Its cases were drawn 75 spam / 75 ham; this build samples in proportion to the source.")


def read(path: Path, text: str) -> list[Row]:
    rows = []
    for number, line in enumerate(text_lines(text), 1):
        if not line.strip():
            continue
        label, tab, message = line.partition("\t")
        if not tab:
            raise BuildError("no tab between label and message", file=path, line=number, fix=FORMAT)
        if label.strip() not in LABELS:
            raise BuildError(f"label '{label.strip()[:40]}' is neither ham nor spam", file=path, line=number,
                             fix=FORMAT)
        if not normalise(message):
            raise BuildError("empty message", file=path, line=number, fix="remove the line, or pass the UCI file")
        rows.append(Row((normalise(message),), LABELS[label.strip()]))
    return rows


PACK_YAML = """\
# Built by `jev-packs build sms-spam` from the upstream file; README.md says how.
spec: 0
id: sms-spam
version: 0.1.0
license: CC-BY-4.0
tested: null
description: >-
  Classify an SMS message as spam (unsolicited bulk or fraudulent messaging).
  Non-goals: phishing subtyping, sender reputation, language detection.
state:
  description: One SMS message, whitespace-normalized.
  fields: [message]
questions:
  spam:
    type: noul
    instructions: "Is this message spam: unsolicited bulk messaging, a chain message, a scam or a fraudulent offer?"
thresholds:
  spam: {true: 0.9, false: 0.9}
"""

DATASET = Dataset(
    name="sms-spam", prefix="sms", fields=("message",), question="spam", labels=("true", "false"),
    upstream_names={"true": "spam", "false": "ham"}, read=read, pack_yaml=PACK_YAML,
    summary=("Spam/ham classification on real SMS traffic: `true` means unsolicited bulk or fraudulent "
             "messaging, `false` personal or transactional traffic. The corpus is from 2011 and "
             "stylistically dated; that is part of the point: a stable, well-known baseline."),
    notes=("The `true: 0.9` / `false: 0.9` floors say that both errors are expensive (a filtered bank "
           "alert and a delivered scam are equally bad), so low-confidence items go to review.\n\n" + COMPAT),
    upstream=Upstream(
        title="SMS Spam Collection v.1",
        get=("`SMSSpamCollection` from the UCI Machine Learning Repository's zip "
             "(<https://archive.ics.uci.edu/dataset/228/sms+spam+collection>), unzipped, unchanged."),
        citation=("T. A. Almeida, J. M. Gómez Hidalgo, A. Yamakami, *Contributions to the Study of SMS Spam "
                  "Filtering: New Collection and Results*, DocEng 2011; dataset: *SMS Spam Collection*, UCI "
                  "Machine Learning Repository (2011), <https://doi.org/10.24432/C5CC84>."),
        license=CC_BY_4_0),
)
