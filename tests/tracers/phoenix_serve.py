"""Start an Arize Phoenix server with its gRPC OTLP receiver on loopback only (test helper).

Runs in the Phoenix virtual environment (scripts/setup.sh: .venv-phoenix), never in the project's:
``python phoenix_serve.py``, configured by Phoenix's own environment variables (``PHOENIX_HOST``,
``PHOENIX_PORT``, ``PHOENIX_GRPC_PORT``, ``PHOENIX_WORKING_DIR`` ...). Phoenix 20.26.1 binds its gRPC
receiver to ``[::]:PHOENIX_GRPC_PORT`` whatever ``PHOENIX_HOST`` says (``phoenix/server/grpc_server.py``);
this wrapper makes that bind ``127.0.0.1:PORT``, so a test server is reachable from this machine only.
"""

from __future__ import annotations

import sys


def serve() -> None:
    """Bind every gRPC server of this process to loopback, then run ``phoenix serve``."""
    import grpc.aio

    make = grpc.aio.server

    def loopback_server(*args, **kwargs):
        server = make(*args, **kwargs)
        add = server.add_insecure_port

        def add_loopback(address: str) -> int:
            return add(f"127.0.0.1:{address.rpartition(':')[2]}")

        server.add_insecure_port = add_loopback
        return server

    grpc.aio.server = loopback_server
    from phoenix.server.main import main

    sys.argv = ["phoenix", "serve"]
    main()


if __name__ == "__main__":
    serve()
