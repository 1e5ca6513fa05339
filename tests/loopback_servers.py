"""Real HTTP(S) servers on loopback that answer `GET /` the way things that are not a
search cluster do (a web server's HTML, plain text, JSON of some other service, a secured
cluster's 401), for the cluster-mistake cases of the bad-input matrix.

Each server records the requests it got, so a test can check that a refused command sent
nothing but its probe. The TLS server's certificate comes from a CA made with `openssl`,
by the same code that makes a secured local node's (neither `trustme` nor `cryptography`
is a dependency).
"""

from __future__ import annotations

import json
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

OPENSEARCH_ROOT = {"name": "n", "cluster_name": "c", "tagline": "The OpenSearch Project: https://opensearch.org/",
                   "version": {"distribution": "opensearch", "number": "2.19.4"}}
UNAUTHORIZED = {"error": {"root_cause": [{"type": "security_exception", "reason": "Unauthorized"}],
                          "type": "security_exception", "reason": "Unauthorized"}, "status": 401}


@dataclass(frozen=True)
class Answer:
    """What the server sends for every request."""

    status: int
    content_type: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, status: int, payload: object, **headers: str) -> "Answer":
        return cls(status, "application/json", json.dumps(payload).encode(), headers)


class LoopbackServer:
    """One server on 127.0.0.1, in a thread of the test process, until the `with` ends."""

    def __init__(self, answer: Answer, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[tuple[str, str]] = []
        requests, sent = self.requests, answer

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                requests.append((self.command, self.path))
                self.send_response(sent.status)
                self.send_header("Content-Type", sent.content_type)
                self.send_header("Content-Length", str(len(sent.body)))
                for key, value in sent.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(sent.body)

            do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, *args: object) -> None:  # keep the test output clean
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "LoopbackServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def tls_context(folder: Path) -> ssl.SSLContext:
    """A server context whose certificate (for 127.0.0.1) is signed by a CA made in `folder`."""
    from cogr_search.localnode.security import make_certificates

    folder.mkdir(parents=True, exist_ok=True)
    make_certificates(folder)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "node.pem", folder / "node-key.pem")
    return context
