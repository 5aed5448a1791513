"""A local model endpoint for the real host CLIs: one server that answers as Anthropic's
Messages API (Claude Code), OpenAI's Responses API (Codex CLI) and the Gemini API (Gemini
CLI), on 127.0.0.1, and keeps every request it gets.

No model can run here, so the host CLIs in the tests are pointed at this stub through
their documented base-URL settings; what it answers is a fixed text (the facts JSON of the
host extractor), and what it was asked is read back from :attr:`ModelStub.requests`. With
``hang=True`` it never answers a model request (a request killed mid-way).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ModelStub"]

_USAGE_IN, _USAGE_OUT = 42, 17


class ModelStub:
    """The stub server; ``url`` is its base (``http://127.0.0.1:PORT``)."""

    def __init__(self, reply: str, *, hang: bool = False) -> None:
        self.reply = reply
        self.hang = hang
        self.requests: list[dict[str, Any]] = []
        self._closing = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _events(self, events: list[tuple[str | None, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for name, data in events:
                    head = f"event: {name}\n" if name else ""
                    self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

            def do_HEAD(self) -> None:
                self._json(200, {})

            def do_GET(self) -> None:
                stub.requests.append({"method": "GET", "path": self.path, "body": None})
                self._json(200, {"object": "list", "data": [], "models": []})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                path = self.path.split("?", 1)[0]
                stub.requests.append({"method": "POST", "path": self.path, "body": body})
                if path.endswith("/count_tokens") or path.endswith(":countTokens"):
                    self._json(200, {"input_tokens": _USAGE_IN, "totalTokens": _USAGE_IN})
                    return
                if stub.hang:
                    stub._closing.wait(600)
                    return
                if path.endswith("/v1/messages"):
                    self._anthropic(body or {})
                elif path.endswith("/responses"):
                    self._responses(body or {})
                elif ":generateContent" in path or ":streamGenerateContent" in path:
                    self._gemini(":streamGenerateContent" in path)
                else:
                    self._json(404, {"error": {"message": f"stub: no {path}"}})

            def _anthropic(self, body: dict[str, Any]) -> None:
                message = {"id": f"msg_{uuid.uuid4().hex[:12]}", "type": "message", "role": "assistant",
                           "model": body.get("model", "stub"), "content": [], "stop_reason": None,
                           "stop_sequence": None, "usage": {"input_tokens": _USAGE_IN, "output_tokens": 1}}
                if not body.get("stream"):
                    message.update(content=[{"type": "text", "text": stub.reply}], stop_reason="end_turn",
                                   usage={"input_tokens": _USAGE_IN, "output_tokens": _USAGE_OUT})
                    self._json(200, message)
                    return
                self._events([
                    ("message_start", {"type": "message_start", "message": message}),
                    ("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "text", "text": ""}}),
                    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "text_delta", "text": stub.reply}}),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                          "stop_sequence": None},
                                       "usage": {"output_tokens": _USAGE_OUT}}),
                    ("message_stop", {"type": "message_stop"}),
                ])

            def _responses(self, body: dict[str, Any]) -> None:
                rid, mid = f"resp_{uuid.uuid4().hex[:12]}", f"msg_{uuid.uuid4().hex[:12]}"
                item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": stub.reply, "annotations": []}]}
                response = {"id": rid, "object": "response", "created_at": int(time.time()),
                            "status": "completed", "model": body.get("model", "stub"), "output": [item],
                            "usage": {"input_tokens": _USAGE_IN, "input_tokens_details": {"cached_tokens": 0},
                                      "output_tokens": _USAGE_OUT,
                                      "output_tokens_details": {"reasoning_tokens": 0},
                                      "total_tokens": _USAGE_IN + _USAGE_OUT}}
                started = {**response, "status": "in_progress", "output": [], "usage": None}
                self._events([
                    ("response.created", {"type": "response.created", "response": started}),
                    ("response.output_item.added", {
                        "type": "response.output_item.added", "output_index": 0,
                        "item": {**item, "status": "in_progress", "content": []}}),
                    ("response.output_text.delta", {
                        "type": "response.output_text.delta", "item_id": mid, "output_index": 0,
                        "content_index": 0, "delta": stub.reply}),
                    ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0,
                                                   "item": item}),
                    ("response.completed", {"type": "response.completed", "response": response}),
                ])

            def _gemini(self, stream: bool) -> None:
                answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": stub.reply}]},
                                          "finishReason": "STOP", "index": 0}],
                          "usageMetadata": {"promptTokenCount": _USAGE_IN, "candidatesTokenCount": _USAGE_OUT,
                                            "totalTokenCount": _USAGE_IN + _USAGE_OUT},
                          "modelVersion": "gemini-2.5-flash"}
                if stream:
                    self._events([(None, answer)])
                else:
                    self._json(200, answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def model_requests(self) -> list[dict[str, Any]]:
        """The requests that asked the model for an answer (not token counts or probes)."""
        return [r for r in self.requests if r["method"] == "POST" and not (
            r["path"].split("?")[0].endswith(("/count_tokens", ":countTokens")))]

    def close(self) -> None:
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()
