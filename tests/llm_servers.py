"""Scripted loopback HTTP servers speaking the Anthropic Messages and OpenAI chat formats.

Each server answers POSTs with the replies pushed onto it, in order, and keeps
every request it received (path, headers, JSON body) for the test to inspect.
Bound to 127.0.0.1 on a free port; one daemon thread per server.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedServer:
    def __init__(self) -> None:
        self.replies: list[tuple[int, dict[str, str], bytes]] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def push(self, status: int, body: Any, headers: dict[str, str] | None = None) -> ScriptedServer:
        raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.replies.append((status, {"content-type": "application/json", **(headers or {})}, raw))
        return self

    def _next(self, request: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests.append(request)
            if self.replies:
                return self.replies.pop(0)
        return 500, {"content-type": "application/json"}, b'{"error": "no scripted reply left"}'

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                status, headers, body = server._next({"path": self.path, "headers": dict(self.headers.items()),
                                                      "json": json.loads(raw or b"null")})
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler


# ---- Anthropic Messages API ----------------------------------------------------------------

def anthropic_reply(text: str, *, model: str = "claude-sonnet-5", stop_reason: str = "end_turn",
                    input_tokens: int = 300, output_tokens: int = 40) -> dict[str, Any]:
    return {"id": "msg_test", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": stop_reason,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}


def anthropic_error(kind: str, message: str, **details: Any) -> dict[str, Any]:
    error: dict[str, Any] = {"type": kind, "message": message}
    if details:
        error["details"] = details
    return {"type": "error", "error": error, "request_id": "req_test"}


# ---- OpenAI-compatible chat completions ----------------------------------------------------

def openai_reply(content: str, *, model: str = "qwen2.5:7b", finish_reason: str = "stop",
                 prompt_tokens: int = 250, completion_tokens: int = 30) -> dict[str, Any]:
    return {"id": "chatcmpl-test", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def openai_error(message: str, code: str | None = None, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code}}
