"""``agentcausal serve-local`` (the embedded llama.cpp server) and ``agentcausal serve`` (the scheduled flows).

``agentcausal serve`` serves the deployments of ``deploy/prefect.yaml`` (the
``attribute`` and ``discover`` flows with their cron schedules) from this
process until Ctrl-C; see ``flows/serve.py`` and ``deploy/README.md``::

    prefect server start &  export PREFECT_API_URL=http://127.0.0.1:4200/api
    agentcausal serve --list
    agentcausal serve --only attribute/who-and-when-nightly

``agentcausal serve-local`` runs the embedded llama.cpp server standalone.

The same OpenAI-compatible server the gateway starts in-process for the
``embedded`` profile, kept running for other tools (or for several agentcausal
processes to share). It prints its base URL and its API key (random per
start; requests without it are refused) and serves until Ctrl-C::

    agentcausal serve-local                       # packaged Qwen2.5-Coder-0.5B, free port
    agentcausal serve-local --gguf 1.5b --port 8080
    agentcausal serve-local --gguf /path/to/any.gguf

``export AGENTCAUSAL_EMBEDDED_URL=<url> AGENTCAUSAL_EMBEDDED_KEY=<key>`` makes every agentcausal process
use this server for the ``embedded`` profiles instead of starting its own
(one model in memory, cache keys unchanged). Or point another profile at it
(``AGENTCAUSAL_PROFILE_VLLM_BASE_URL=<url>``), or use any OpenAI client.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from agentcausal_cli import exit_codes

__all__ = ["register", "serve_local", "cmd_serve"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``serve-local`` verb."""
    p = subparsers.add_parser(
        "serve-local",
        help="run the embedded llama.cpp OpenAI-compatible server standalone",
        description="Serve the packaged model (or any GGUF) through llama.cpp's OpenAI-compatible server "
        "on 127.0.0.1 until Ctrl-C.",
    )
    p.add_argument(
        "--gguf",
        default="0.5b",
        metavar="MODEL",
        help="which GGUF to serve: 0.5b (default, packaged Qwen2.5-Coder-0.5B Q4_K_M), 1.5b, or a GGUF "
        "file path (the pipeline verbs' --model names a model on an endpoint; this one a file)",
    )
    p.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    p.add_argument(
        "--slots",
        type=int,
        default=2,
        help="parallel decoding slots with --no-reproducible (default 2; reproducible serving has one)",
    )
    p.add_argument("--ctx", type=int, default=8192, help="context tokens per slot (default 8192)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores but one)")
    p.add_argument(
        "--reproducible",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="one reply per request whatever ran before or beside it: one slot, batch-independent "
        "kernels (default; docs/embedded.md); --no-reproducible: --slots slots, faster",
    )
    p.set_defaults(func=serve_local)
    _register_serve(subparsers)


def _register_serve(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``serve`` verb (scheduled deployments)."""
    p = subparsers.add_parser(
        "serve",
        help="serve the scheduled flow deployments of deploy/prefect.yaml (prefect.serve)",
        description="Serve the attribute and discover deployments (cron schedules, parameters) from this "
        "process until Ctrl-C. Needs a Prefect server: `prefect server start` and PREFECT_API_URL.",
    )
    p.add_argument("--file", default=None, metavar="YAML", help="deployment file (default: deploy/prefect.yaml)")
    p.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="NAME",
        help="serve only this deployment (repeatable), e.g. attribute/who-and-when-nightly",
    )
    p.add_argument("--limit", type=int, default=None, help="most flow runs at once (default: no limit)")
    p.add_argument(
        "--list",
        action="store_true",
        help="check the file and every deployment's inputs, list deployments and schedules, exit "
        "(exit 2, bad input, when an active deployment's input is missing)",
    )
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    """Handler of ``agentcausal serve``: check the deployment file, then list or serve it.

    Raises
    ------
    ConfigError
        If the file is invalid (unknown flow, parameters the flow rejects, bad cron), a name in
        ``--only`` is unknown, or (when serving) ``PREFECT_API_URL`` is not set.
    """
    from flows import serve as fs  # start-up cost (Prefect): imported when serving

    path = args.file or fs.default_file()
    specs = fs.load_specs(path)
    if args.list:
        missing = []
        for s in specs:
            when = "; ".join(f"{c.cron} {c.timezone}" + ("" if c.active else " (inactive)") for c in s.schedules)
            print(f"{fs.load_flow(s).name}/{s.name}  [{when or 'no schedule'}]  {s.entrypoint}")
            for k, v in s.parameters.items():
                print(f"    {k} = {v!r}")
            active = any(c.active for c in s.schedules)  # an inactive template's placeholder is not an error
            for c in fs.check_inputs(s):
                note = "; ".join(n for n in (c.note, "" if c.exists or active else "schedule inactive") if n)
                print(f"    {c.kind} {c.value}: {'ok' if c.exists else 'MISSING'}" + (f" ({note})" if note else ""))
                if not c.exists and active:
                    missing.append(f"{s.name}: {c.value}")
        if missing:
            hint = (
                " (set AGENTCAUSAL_WHO_AND_WHEN_DIR or run `agentcausal data fetch who-and-when` for the Who&When corpus)"
                if any("who_and_when" in m for m in missing)
                else ""
            )
            print(
                f"agentcausal: error: {len(missing)} deployment input(s) missing: {'; '.join(missing)}{hint}",
                file=sys.stderr,
            )
            return exit_codes.BAD_INPUT
        return exit_codes.OK
    fs.serve(path, only=args.only, limit=args.limit)
    return 0


def _stop_on_signals(stop: threading.Event) -> Callable[[], None]:
    """Make SIGINT (Ctrl-C) and SIGTERM set ``stop``; return a function restoring the previous handlers.

    A flag instead of ``KeyboardInterrupt``: the exception lands at whatever line runs
    when the signal comes (a banner ``print``, the model load), so a plain ``try`` around
    the wait loop misses a Ctrl-C that comes early. A second SIGINT while ``stop`` is
    already set raises ``KeyboardInterrupt`` (to break a stuck start). Off the main
    thread (signals cannot be handled there) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: object) -> None:
        if signum == signal.SIGINT and stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


def serve_local(args: argparse.Namespace, *, stop: threading.Event | None = None) -> int:
    """Start the server, print its base URL, serve until Ctrl-C or SIGTERM (or ``stop`` is set).

    Ctrl-C or SIGTERM at any point after the command starts (even while the model
    loads) stops the server cleanly and returns 0; a second Ctrl-C while it is still
    starting interrupts at once.

    Raises
    ------
    ModelFileError
        If the model is unknown, not installed, or fails its sha256 check.
    EndpointUnreachableError
        If the server does not become healthy.
    """
    from agentcausal.llm import local  # start-up cost: numpy and the server helpers, only for this verb
    from agentcausal.llm.packaged import packaged_model_path

    model = args.gguf
    path = (
        Path(model).expanduser()
        if (model.endswith(".gguf") or Path(model).expanduser().is_file())
        else packaged_model_path(model)
    )
    alias = path.stem
    stop = stop or threading.Event()
    restore = _stop_on_signals(stop)
    try:
        srv = local.start_server(
            path,
            n_parallel=args.slots,
            ctx_per_slot=args.ctx,
            port=args.port,
            host=args.host,
            threads=args.threads,
            alias=alias,
            deterministic=getattr(args, "reproducible", True),
        )
        try:
            reproducible = getattr(args, "reproducible", True)
            print(
                f"serving {path} ({1 if reproducible else args.slots} slots x {args.ctx} tokens) as model "
                f"{alias!r}" + (", reproducible" if reproducible else ""),
                flush=True,
            )
            print(f"base URL: {srv.base_url}", flush=True)
            print(
                f"share it with agentcausal runs:  export {local.SHARED_SERVER_ENV}={srv.base_url} "
                f"{local.SHARED_SERVER_KEY_ENV}={srv.api_key}",
                flush=True,
            )
            print(
                f"or route a profile to it:        AGENTCAUSAL_PROFILE_VLLM_BASE_URL={srv.base_url} "
                f"AGENTCAUSAL_PROFILE_VLLM_MODEL={alias} VLLM_API_KEY={srv.api_key}",
                flush=True,
            )
            print("Ctrl-C to stop", flush=True)
            while not stop.wait(0.5):
                pass
        finally:
            srv.stop()
    finally:
        restore()
    print("stopped", flush=True)
    return 0
