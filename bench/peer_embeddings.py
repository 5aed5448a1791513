"""An OpenAI-compatible embeddings endpoint on 127.0.0.1 that serves the product's model.

The peers cannot download their own models here (only package registries are
reachable), and both mcp-memory-service and basic-memory accept an OpenAI-compatible
embeddings API (``MCP_EXTERNAL_EMBEDDING_URL``; ``semantic_embedding_provider =
"openai"`` with ``semantic_embedding_api_base``). This endpoint answers
``POST /v1/embeddings`` with the vectors of the shipped all-MiniLM-L6-v2 int8 model,
one text per model call (``embed([text])``, batch-independent, as ``save_memory``
makes them), so every peer ranks with exactly the vectors our own vector channel uses.

Request body: ``{"model": str, "input": str | [str], "encoding_format": "float" |
"base64"}`` (the OpenAI SDK asks for base64 unless told otherwise: little-endian
float32). Answer: ``{"object": "list", "data": [{"object": "embedding", "index": i,
"embedding": ...}], "model": ..., "usage": {"prompt_tokens": 0, "total_tokens": 0}}``.
Anything else gets a 4xx with a JSON error.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["EmbeddingServer"]


class EmbeddingServer:
    """The endpoint, run in a daemon thread of the bench process.

    Args:
        embedder: The product embedder (``embed(texts) -> float32 array (n, d)``).
        known: Optional text -> vector entries answered without running the model
            (the job's turn and question vectors, computed the same way).

    Use as a context manager; ``url`` is ``http://127.0.0.1:<port>/v1/embeddings``.
    ``texts`` and ``seconds`` count what was embedded and the time spent answering,
    so a peer's search latency can be told apart from the endpoint's share.
    """

    def __init__(self, embedder: Any, known: dict[str, list[float]] | None = None) -> None:
        self._embedder = embedder
        self._known = dict(known or {})
        self._lock = threading.Lock()
        self.texts = 0
        self.requests = 0
        self.seconds = 0.0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The endpoint's URL (valid while the server runs)."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1/embeddings"

    def vectors(self, texts: list[str]) -> list[list[float]]:
        """Vectors of ``texts``, in order (known ones from the table, others from the model)."""
        out = []
        with self._lock:
            for text in texts:
                vec = self._known.get(text)
                if vec is None:
                    vec = [float(x) for x in self._embedder.embed([text])[0]]
                    self._known[text] = vec
                out.append(vec)
            self.texts += len(texts)
        return out

    def __enter__(self) -> EmbeddingServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                t0 = time.perf_counter()
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                    inputs = body["input"]
                    texts = [inputs] if isinstance(inputs, str) else list(inputs)
                    if not all(isinstance(t, str) for t in texts):
                        raise ValueError("input must be a string or a list of strings (not token ids)")
                except (ValueError, KeyError, TypeError) as exc:
                    self._answer(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
                    return
                vecs = owner.vectors(texts)
                as_b64 = body.get("encoding_format") == "base64"
                data = [{"object": "embedding", "index": i,
                         "embedding": _b64(v) if as_b64 else v} for i, v in enumerate(vecs)]
                self._answer(200, {"object": "list", "data": data, "model": body.get("model", ""),
                                   "usage": {"prompt_tokens": 0, "total_tokens": 0}})
                with owner._lock:
                    owner.requests += 1
                    owner.seconds += time.perf_counter() - t0

            def _answer(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def _b64(vec: list[float]) -> str:
    import numpy as np

    return base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode()
