"""A request's fingerprint is sha256 of one plain json.dumps of the whole object (sorted keys, no
spaces, UTF-8 as is), however it is computed: many requests at once, or one with its questions
already serialized."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pytest_jev.fileio import canonical_json
from pytest_jev.wire import Request, fingerprint_serialized, fingerprints

QUESTIONS = {"queue": {"type": "choice", "text": "Which queue? «é»", "criteria": {"billing": "money", "tech": "bugs"}},
             "refund": {"type": "noul", "text": "Asks for a refund?"}}


def reference(backend: str, req: Request) -> str:
    body: dict[str, Any] = {"backend": backend, "questions": req.questions, "requested_model": req.model,
                            "state": req.state, "v": "v1"}
    if req.option_order is not None:
        body["option_order"] = req.option_order
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_every_way_of_fingerprinting_is_one_json_dumps_of_the_whole_request() -> None:
    requests = [Request("a", {"text": "Refund me, ünïcode"}, QUESTIONS, "jev-latest"),
                Request("b", {"text": "x", "n": [1, 2.5, None]}, QUESTIONS, "jev-1.14.0"),
                Request("c", {"text": "y"}, QUESTIONS, "jev-latest", option_order={"queue": ["tech", "billing"]})]
    expected = [reference("jev", req) for req in requests]
    assert fingerprints(requests, "jev") == expected
    assert [fingerprint_serialized(req, "jev", canonical_json(QUESTIONS)) for req in requests] == expected
    assert [req.fingerprint("jev") for req in requests] == expected
    assert reference("sparrow", requests[0]) != expected[0]
