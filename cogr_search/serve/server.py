"""Running the expansion service: load the run's generators, then serve with uvicorn.

The model is loaded before the socket opens, so `GET /health` answering means ready.
Access logs are off: at thousands of cached requests per second they would cost more
than the requests.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cogr_search.errors import CogrError
from cogr_search.serve.limits import Limits
from cogr_search.serve.service import ExpansionService, ServiceConfig
from cogr_search.serve.expander import open_expander


def check_port(host: str, port: int) -> None:
    """A one-line error now, rather than uvicorn's log line after the model has loaded."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as err:
            raise CogrError(f"cannot listen on {host}:{port}: {err.strerror}") from None


@dataclass(frozen=True)
class Security:
    """How the service is protected: a bearer token, TLS files, whether /metrics needs the token."""

    token: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    metrics_auth: bool = False

    @property
    def scheme(self) -> str:
        return "https" if self.tls_cert is not None else "http"

    def check_tls(self) -> None:
        """A one-line error now for a missing, unreadable or mismatched certificate or key,
        rather than uvicorn's traceback after the model has loaded."""
        if (self.tls_cert is None) != (self.tls_key is None):
            raise CogrError("--tls-cert and --tls-key go together")
        if self.tls_cert is None or self.tls_key is None:
            return
        for path in (self.tls_cert, self.tls_key):
            if not path.is_file():
                raise CogrError(f"TLS file {path}: not found")
        _check_certificate(self.tls_cert)
        try:  # the password callback answers "" where OpenSSL would prompt on the terminal for an encrypted key
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(self.tls_cert, self.tls_key,
                                                                                password=lambda: "")
        except ssl.SSLError as err:  # OpenSSL says only "PEM lib" for a key it cannot read
            if err.reason == "KEY_VALUES_MISMATCH":
                raise CogrError(f"--tls-key {self.tls_key} is not the private key of --tls-cert {self.tls_cert}") from None
            raise CogrError(f"--tls-key {self.tls_key}: the private key could not be read (not an unencrypted PEM "
                            "private key; an encrypted one needs `openssl pkey -in KEY -out PLAIN`)") from None
        except OSError as err:
            raise CogrError(f"TLS files {self.tls_cert}, {self.tls_key}: {err.strerror or err}") from None


def _check_certificate(path: Path) -> None:
    """--tls-cert holds a PEM certificate: checked alone, so a failure of the pair names the key."""
    try:
        ssl.create_default_context().load_verify_locations(cafile=str(path))
    except ssl.SSLError as err:
        raise CogrError(f"--tls-cert {path}: no PEM certificate could be read from it ({err.reason or err})") from None
    except OSError as err:
        raise CogrError(f"--tls-cert {path}: {err.strerror or err}") from None


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
    security: Security = Security(),
    echo: Callable[[str], None] = print,
) -> None:
    """Load `run`'s expander of `round_` (default: latest; its students unless
    `expander_options["expander"]` says `llm`) and serve until interrupted."""
    import uvicorn  # heavy: uvicorn, off the CLI's start

    from cogr_search.serve.app import create_app  # heavy: fastapi, off the CLI's start

    check_port(host, port)
    security.check_tls()
    expander = open_expander(run, round_, runs_dir=runs_dir, **(expander_options or {}))
    try:
        service = ExpansionService(expander, config, limits)
        guarded = ", bearer token required" if security.token is not None else ""
        echo(f"serving run {expander.run!r} round {expander.round} with its {expander.kind} expander "
             f"({expander.model}) on {security.scheme}://{host}:{port}{guarded}")
        app = create_app(service, token=security.token, metrics_auth=security.metrics_auth)
        tls = {"ssl_certfile": str(security.tls_cert), "ssl_keyfile": str(security.tls_key)} if security.tls_cert else {}
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, **tls)
    finally:
        expander.close()
