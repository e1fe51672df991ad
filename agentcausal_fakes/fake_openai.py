"""A fake OpenAI-compatible HTTP server: TEST DOUBLE for tests and benchmarks only.

It serves ``POST /v1/chat/completions``, ``POST /v1/embeddings``,
``GET /v1/models`` and ``GET /health`` on 127.0.0.1 with:

* scripted replies (a queue of strings, consumed in order) or a rule-based
  ``responder(body) -> str`` that sees the whole request JSON;
* a fixed latency per request (seconds);
* request counting (``server.count``, ``server.requests``) and the peak number
  of requests in flight (``server.max_in_flight``; a request is in flight from its
  arrival until its answer starts, so a client that sends its next request as
  soon as it has read an answer is never counted twice), to check concurrency limits;
* ``api_key``: when set, every request but ``/health`` without
  ``Authorization: Bearer <api_key>`` gets HTTP 401, as llama.cpp's server does;
* fault injection: a queue of faults consumed one per request before normal
  replies: ``429``, ``500``, ``"timeout"`` (sleeps past the client timeout),
  ``"malformed"`` (content that is not JSON), ``"truncated"`` (a cut-off JSON
  body with ``finish_reason: length``), ``"drop"`` (closes the connection
  without answering). Error replies carry ``retry-after-ms`` (default 1 ms) so
  the ``openai`` client's backoff does not slow tests down; set
  ``retry_after_ms=None`` to get its plain exponential backoff.

``dialect="reasoning"`` makes the chat endpoint refuse requests as OpenAI's
reasoning models (o-series, GPT-5) do: HTTP 400 ``unsupported_parameter``
for ``max_tokens`` ("Use 'max_completion_tokens' instead") and
``unsupported_value`` for any ``temperature`` but 1; it also spends
``reasoning_tokens`` hidden tokens per reply out of ``max_completion_tokens``
(a cap too small for them gives empty content and ``finish_reason: length``,
as the real API does), counted in ``completion_tokens``.

Embeddings are deterministic pseudo-random unit vectors seeded by the text's
hash, so equal texts embed equally and different texts differ; an
``embedder(text) -> vector`` (set it to control cosines in a test) replaces them.

Examples
--------
>>> with FakeOpenAIServer(replies=["hello"]) as srv:   # doctest: +SKIP
...     srv.base_url
'http://127.0.0.1:PORT/v1'
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

__all__ = ["FakeOpenAIServer"]

Responder = Callable[[dict[str, Any]], str]


class FakeOpenAIServer:
    """A scripted OpenAI-compatible server on a free loopback port (test double)."""

    def __init__(
        self,
        replies: Iterable[str] | None = None,
        responder: Responder | None = None,
        *,
        latency_s: float = 0.0,
        faults: Iterable[int | str] = (),
        timeout_sleep_s: float = 3.0,
        embedding_dim: int = 16,
        retry_after_ms: float | None = 1,
        models: Iterable[str] = ("fake-model",),
        dialect: str = "chat",
        reasoning_tokens: int = 64,
        api_key: str | None = None,
        embedder: Callable[[str], Iterable[float]] | None = None,
    ) -> None:
        self.api_key = api_key
        self.embedder = embedder
        if dialect not in ("chat", "reasoning"):
            raise ValueError(f"dialect must be 'chat' or 'reasoning', got {dialect!r}")
        self.dialect = dialect
        self.reasoning_tokens = reasoning_tokens
        self.replies: deque[str] = deque(replies or [])
        self.responder = responder
        self.latency_s = latency_s
        self.faults: deque[int | str] = deque(faults)
        self.timeout_sleep_s = timeout_sleep_s
        self.embedding_dim = embedding_dim
        self.retry_after_ms = retry_after_ms
        self.models = list(models)
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ control
    @property
    def count(self) -> int:
        """Requests received (faulted ones included)."""
        return len(self.requests)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("_path", "").endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("_path", "").endswith("/embeddings")]

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def push(self, *replies: str) -> None:
        self.replies.extend(replies)

    def inject(self, *faults: int | str) -> None:
        self.faults.extend(faults)

    def start(self) -> "FakeOpenAIServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall per response

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _answered(self) -> None:
                if getattr(self, "_in_flight", False):
                    self._in_flight = False
                    with server._lock:
                        server.in_flight -= 1

            def _send(self, code: int, payload: dict[str, Any] | str, headers: dict[str, str] | None = None) -> None:
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self._answered()  # in flight until the answer starts: the client may send its next one then
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _refused(self) -> bool:
                """401 like llama.cpp's server when ``api_key`` is set and the request lacks it."""
                if server.api_key is None or self.headers.get("Authorization") == f"Bearer {server.api_key}":
                    return False
                self._send(401, {"error": {"message": "Invalid API Key", "type": "authentication_error", "code": 401}})
                return True

            def do_GET(self) -> None:
                if not self.path.rstrip("/").endswith("/health") and self._refused():
                    return
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in server.models]})
                elif self.path.rstrip("/").endswith("/health"):
                    self._send(200, {"status": "ok"})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                body["_path"] = self.path
                body["_auth"] = self.headers.get("Authorization", "")
                if self._refused():
                    return
                with server._lock:
                    server.requests.append(body)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    fault = server.faults.popleft() if server.faults else None
                self._in_flight = True
                try:
                    if server.latency_s:
                        time.sleep(server.latency_s)
                    if fault == "timeout":
                        time.sleep(server.timeout_sleep_s)
                        self._send(504, {"error": {"message": "slow"}})
                        return
                    if fault == "drop":
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    if isinstance(fault, int):
                        hdrs = {} if server.retry_after_ms is None else {"retry-after-ms": str(server.retry_after_ms)}
                        self._send(fault, {"error": {"message": f"injected {fault}", "type": "fault"}}, hdrs)
                        return
                    if self.path.endswith("/embeddings"):
                        self._send(200, server._embeddings(body))
                        return
                    if self.path.endswith("/chat/completions"):
                        refusal = server._refusal(body)
                        if refusal is not None:
                            self._send(400, refusal)
                            return
                        if server.dialect == "reasoning":
                            self._send(200, server._reasoning_completion(body))
                            return
                        if fault == "malformed":
                            text, finish = "this is not JSON {", "stop"
                        elif fault == "truncated":
                            text, finish = '{"step": 3, "agent": "Web', "length"
                        else:
                            text, finish = server._reply(body), "stop"
                        self._send(200, server._completion(body, text, finish))
                        return
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                finally:
                    self._answered()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- replies
    def _reply(self, body: dict[str, Any]) -> str:
        with self._lock:
            if self.replies:
                return self.replies.popleft()
        if self.responder is not None:
            return self.responder(body)
        raise AssertionError("FakeOpenAIServer: no scripted reply left and no responder")

    def _refusal(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The 400 error body OpenAI's reasoning models send for parameters they refuse, else None."""
        if self.dialect != "reasoning":
            return None
        if "max_tokens" in body:
            return {
                "error": {
                    "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                    "Use 'max_completion_tokens' instead.",
                    "type": "invalid_request_error",
                    "param": "max_tokens",
                    "code": "unsupported_parameter",
                }
            }
        if "temperature" in body and body["temperature"] != 1:
            return {
                "error": {
                    "message": f"Unsupported value: 'temperature' does not support {body['temperature']} with this "
                    "model. Only the default (1) value is supported.",
                    "type": "invalid_request_error",
                    "param": "temperature",
                    "code": "unsupported_value",
                }
            }
        return None

    def _reasoning_completion(self, body: dict[str, Any]) -> dict[str, Any]:
        """A reply after hidden reasoning that spends ``reasoning_tokens`` of the completion cap."""
        text = self._reply(body)
        cap = body.get("max_completion_tokens")
        visible = len(text) // 4 + 1
        if cap is not None and self.reasoning_tokens + visible > cap:
            text, finish, visible = "", "length", max(0, cap - self.reasoning_tokens)
        else:
            finish = "stop"
        out = self._completion(body, text, finish)
        spent = min(self.reasoning_tokens, cap) if cap is not None else self.reasoning_tokens
        out["usage"]["completion_tokens"] = spent + visible
        out["usage"]["completion_tokens_details"] = {"reasoning_tokens": spent}
        return out

    @staticmethod
    def _completion(body: dict[str, Any], text: str, finish: str) -> dict[str, Any]:
        prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
        return {
            "id": "fake-1",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt_chars // 4 + 1,
                "completion_tokens": len(text) // 4 + 1,
                "total_tokens": prompt_chars // 4 + len(text) // 4 + 2,
            },
        }

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body.get("input", [])
        if isinstance(inputs, str):
            inputs = [inputs]
        data = []
        for i, t in enumerate(inputs):
            if self.embedder is not None:
                v = np.asarray(list(self.embedder(t)), dtype=float)
            else:
                seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "little")
                v = np.random.default_rng(seed).normal(size=self.embedding_dim)
            data.append({"object": "embedding", "index": i, "embedding": (v / np.linalg.norm(v)).tolist()})
        return {
            "object": "list",
            "data": data,
            "model": body.get("model"),
            "usage": {"prompt_tokens": sum(len(t) // 4 + 1 for t in inputs), "total_tokens": 0},
        }
