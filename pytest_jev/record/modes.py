"""--jev-record's modes, as vcrpy defines them; the pack recorder and the `jev` fixture both read them.

- `once`: record only when there is no recording yet (a pack's recording file, a test module's
  answers file); when there is one, replay it and call nothing;
- `new_episodes` (a bare --jev-record): record what the recording lacks: cases or requests
  missing, recorded with an error, for another request, or with an answer that breaks the
  answer contract; every other line stays as it is;
- `all`: record everything chosen again;
- `none`: call nothing, write nothing (replay).
"""

from __future__ import annotations

from enum import Enum


class RecordMode(str, Enum):
    ONCE = "once"
    NEW_EPISODES = "new_episodes"
    ALL = "all"
    NONE = "none"

    def __str__(self) -> str:
        return self.value


BARE = RecordMode.NEW_EPISODES  # what a bare --jev-record means
