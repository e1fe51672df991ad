"""The fake OpenAI server (test double) in a child process, so its work never counts as pipeline overhead.

The benchmarks measure the pipeline's own cost per request; a server in the
same process would share the GIL with the pipeline (parsing request bodies,
answering, encoding embeddings) and inflate it. :class:`ServerProcess` runs
``agentcausal_fakes.fake_openai.FakeOpenAIServer`` with the
:class:`agentcausal_fakes.responders.BenchResponder` and a fixed latency in a spawned
process and talks to it over a pipe: ``stats()`` (requests, chat and embedding
requests, peak requests in flight, requests per reply schema) and ``reset()``.

The server's sockets have Nagle's algorithm off (``TCP_NODELAY``, as real
servers set it): ``http.server`` writes the headers and the body in two
sends, and with Nagle on the body waits for the client's delayed ACK, about
40 ms per request here, which would be counted as pipeline overhead
(measured: 57 ms of overhead per request with it, 12 ms without).
"""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

__all__ = ["ServerProcess"]


def _serve(conn, latency_s: float, embedding_dim: int) -> None:  # pragma: no cover - runs in the child
    from agentcausal_fakes.fake_openai import FakeOpenAIServer
    from agentcausal_fakes.responders import BenchResponder

    responder = BenchResponder()
    srv = FakeOpenAIServer(responder=responder, latency_s=latency_s, embedding_dim=embedding_dim).start()
    srv._httpd.RequestHandlerClass.disable_nagle_algorithm = True  # TCP_NODELAY: see the module docstring
    conn.send(srv.base_url)
    while True:
        cmd = conn.recv()
        if cmd == "stats":
            with srv._lock:
                reqs = list(srv.requests)
                peak = srv.max_in_flight
                schemas = dict(responder.counts)
            chat = sum(1 for r in reqs if r.get("_path", "").endswith("/chat/completions"))
            emb = sum(1 for r in reqs if r.get("_path", "").endswith("/embeddings"))
            conn.send(
                {
                    "requests": len(reqs),
                    "chat_requests": chat,
                    "embedding_requests": emb,
                    "max_in_flight": peak,
                    "by_schema": schemas,
                }
            )
        elif cmd == "reset":
            with srv._lock:
                srv.requests.clear()
                srv.max_in_flight = 0
                responder.counts.clear()
            conn.send("ok")
        elif cmd == "stop":
            srv.stop()
            conn.send("ok")
            return


class ServerProcess:
    """A fake OpenAI server with :class:`~agentcausal_fakes.responders.BenchResponder` in a child process.

    Parameters
    ----------
    latency_s : float, fixed latency of every request (chat and embeddings), seconds
    embedding_dim : int, dimension of the fake embeddings

    Examples
    --------
    >>> with ServerProcess(latency_s=0.2) as srv:   # doctest: +SKIP
    ...     srv.base_url, srv.stats()["requests"]
    """

    def __init__(self, latency_s: float = 0.2, embedding_dim: int = 16) -> None:
        self.latency_s = latency_s
        self.embedding_dim = embedding_dim
        self.base_url = ""
        self._proc = None
        self._conn = None

    def start(self) -> "ServerProcess":
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, self.latency_s, self.embedding_dim), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent
        if not parent.poll(60):
            raise RuntimeError("fake server process did not start in 60 s")
        self.base_url = parent.recv()
        return self

    def _ask(self, cmd: str) -> Any:
        assert self._conn is not None, "server not started"
        self._conn.send(cmd)
        return self._conn.recv()

    def stats(self) -> dict[str, Any]:
        """Requests since the last reset: totals, chat, embeddings, peak in flight, per reply schema."""
        return self._ask("stats")

    def reset(self) -> None:
        """Forget the requests counted so far."""
        self._ask("reset")

    def stop(self) -> None:
        if self._proc is not None:
            try:
                self._ask("stop")
            except (EOFError, OSError):
                pass
            self._proc.join(5)
            if self._proc.is_alive():
                self._proc.kill()
            self._proc = None

    def __enter__(self) -> "ServerProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
