"""Running the expansion service: load the run's generators, then serve with uvicorn.

The model is loaded before the socket opens, so `GET /health` answering means ready.
Access logs are off: at thousands of cached requests per second they would cost more
than the requests.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

from cogr_search.errors import CogrError
from cogr_search.serve.limits import Limits
from cogr_search.serve.service import ExpansionService, ServiceConfig


def check_port(host: str, port: int) -> None:
    """A one-line error now, rather than uvicorn's log line after the model has loaded."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as err:
            raise CogrError(f"cannot listen on {host}:{port}: {err.strerror}") from None


def serve(
    run: str | Path,
    round_: int | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8300,
    runs_dir: Path | None = None,
    config: ServiceConfig = ServiceConfig(),
    limits: Limits = Limits(),
    expander_options: dict | None = None,
    echo: Callable[[str], None] = print,
) -> None:
    """Load `run`'s expander of `round_` (default: latest; its students unless
    `expander_options["expander"]` says `llm`) and serve until interrupted."""
    import uvicorn

    from cogr_search.serve.app import create_app
    from cogr_search.serve.expander import open_expander

    check_port(host, port)
    expander = open_expander(run, round_, runs_dir=runs_dir, **(expander_options or {}))
    try:
        service = ExpansionService(expander, config, limits)
        echo(f"serving run {expander.run!r} round {expander.round} with its {expander.kind} expander "
             f"({expander.model}) on http://{host}:{port}")
        uvicorn.run(create_app(service), host=host, port=port, log_level="warning", access_log=False)
    finally:
        expander.close()
