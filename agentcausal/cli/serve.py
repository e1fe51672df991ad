"""``agentcausal serve-local``: run the embedded llama.cpp server standalone.

The same OpenAI-compatible server the gateway starts in-process for the
``embedded`` profile, kept running for other tools (or for several agentcausal
processes to share). It prints its base URL and serves until Ctrl-C::

    agentcausal serve-local                       # packaged Qwen2.5-Coder-0.5B, free port
    agentcausal serve-local --model 1.5b --port 8080
    agentcausal serve-local --model /path/to/any.gguf

``export AGENTCAUSAL_EMBEDDED_URL=<url>`` makes every agentcausal process
use this server for the ``embedded`` profiles instead of starting its own
(one model in memory, cache keys unchanged). Or point another profile at it
(``AGENTCAUSAL_PROFILE_VLLM_BASE_URL=<url>``), or use any OpenAI client.
"""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

__all__ = ["register", "serve_local"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``serve-local`` verb."""
    p = subparsers.add_parser(
        "serve-local",
        help="run the embedded llama.cpp OpenAI-compatible server standalone",
        description="Serve the packaged model (or any GGUF) through llama.cpp's OpenAI-compatible server "
        "on 127.0.0.1 until Ctrl-C.",
    )
    p.add_argument("--model", default="0.5b",
                   help="0.5b (default, packaged Qwen2.5-Coder-0.5B Q4_K_M), 1.5b, or a GGUF file path")
    p.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    p.add_argument("--slots", type=int, default=2, help="parallel decoding slots (default 2)")
    p.add_argument("--ctx", type=int, default=8192, help="context tokens per slot (default 8192)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores but one)")
    p.set_defaults(func=serve_local)


def serve_local(args: argparse.Namespace, *, stop: threading.Event | None = None) -> int:
    """Start the server, print its base URL, block until Ctrl-C (or ``stop`` is set).

    Raises
    ------
    ModelFileError
        If the model is unknown, not installed, or fails its sha256 check.
    EndpointUnreachableError
        If the server does not become healthy.
    """
    from agentcausal.llm import local

    model = args.model
    path = Path(model).expanduser() if (model.endswith(".gguf") or Path(model).expanduser().is_file()) \
        else local.packaged_model_path(model)
    alias = path.stem
    srv = local.start_server(path, n_parallel=args.slots, ctx_per_slot=args.ctx, port=args.port,
                             host=args.host, threads=args.threads, alias=alias)
    print(f"serving {path} ({args.slots} slots x {args.ctx} tokens) as model {alias!r}", flush=True)
    print(f"base URL: {srv.base_url}", flush=True)
    print(f"share it with agentcausal runs:  export {local.SHARED_SERVER_ENV}={srv.base_url}", flush=True)
    print(f"or route a profile to it:        AGENTCAUSAL_PROFILE_VLLM_BASE_URL={srv.base_url} "
          f"AGENTCAUSAL_PROFILE_VLLM_MODEL={alias}", flush=True)
    print("Ctrl-C to stop", flush=True)
    stop = stop or threading.Event()
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
    print("stopped", flush=True)
    return 0
