"""What a backend is sent for one case, and the fingerprints that identify it.

A Request is the state and the questions exactly as sent, with the model asked for. Its
fingerprint (sha256 of canonical JSON: backend kind, questions, requested model, state, and the
option order of a shuffled request) is the key a recording is resumed and replayed by: a line is
reused only for the very request it answered. Recorder, fixture and the rubric check all
fingerprint through `fingerprints()`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .fileio import canonical_json, json_sha256

FINGERPRINT_VERSION = "v1"
_TAIL = ',"v":' + canonical_json(FINGERPRINT_VERSION) + "}"  # every fingerprinted body ends so


@dataclass(frozen=True)
class Request:
    case_id: str
    state: Any
    questions: dict[str, dict[str, Any]]  # exactly as sent: Question.as_sent() per question id
    model: str  # the requested model (an alias such as jev-latest is fine)
    attempt: int = 0  # 0 for the first try, n for the n-th retry (X-TypeSafe-Retry-Count); not fingerprinted
    # --jev-shuffle-options: choice question id -> its labels in the order sent (fingerprinted)
    option_order: dict[str, list[str]] | None = None

    def fingerprint(self, backend: str) -> str:
        """sha256 of backend, requested model, state and questions as sent (the resume key)."""
        return fingerprints([self], backend)[0]


def state_fingerprint(state: Any) -> str:
    """sha256 of a case's state as canonical JSON: every recording line of ours carries it, so
    replay refuses an answer to a state the case no longer has (grade.py)."""
    return json_sha256(state)


def fingerprints(requests: list[Request], backend: str) -> list[str]:
    """Request.fingerprint of each request, with each distinct questions object serialized once.

    The body is the canonical JSON (sorted keys, no spaces) of {backend, questions, requested_model,
    state, v}, plus `option_order` for a request whose choice options were shuffled: canonical JSON
    sorts the options' keys, so without it a shuffled request would fingerprint like the plain one
    and its answers be reused for it. Written out key by key in sorted order it is the very same
    string one json.dumps of the whole object gives. A pack's requests share one questions dict
    (unless options are shuffled), which is most of the body: serialized once, not once per case.
    """
    head = '{"backend":' + canonical_json(backend) + ","
    seen: dict[int, str] = {}  # id() is safe here: every questions object stays alive in `requests`
    out = []
    for req in requests:
        questions = seen.get(id(req.questions))
        if questions is None:
            questions = seen[id(req.questions)] = canonical_json(req.questions)
        out.append(_fingerprint(head, questions, req))
    return out


def fingerprint_serialized(request: Request, backend: str, questions: str) -> str:
    """Request.fingerprint, the request's questions given already serialized (their canonical
    JSON): for one request at a time whose questions object many requests share."""
    return _fingerprint('{"backend":' + canonical_json(backend) + ",", questions, request)


def _fingerprint(head: str, questions: str, req: Request) -> str:
    order = "" if req.option_order is None else f'"option_order":{canonical_json(req.option_order)},'
    body = (f'{head}{order}"questions":{questions},"requested_model":{canonical_json(req.model)},'
            f'"state":{canonical_json(req.state)}{_TAIL}')
    return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()

