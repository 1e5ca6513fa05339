"""A real HTTP proxy process for retry tests: forwards to the cluster, but answers the
first requests whose path contains a marker with an error status instead.

    python tests/flaky_proxy.py UPSTREAM_URL MARKER[#BODY]:STATUS:COUNT[:after] [...]

With `:after` the request is forwarded first and only its answer is replaced: the
cluster did the work but the client never hears so (a lost response). With `#BODY` the
request's body must contain BODY too (which may hold colons), e.g. `/idx/_settings#null`
fails only the settings update that lifts a write block, not the one that sets it.

Prints its port on the first line of stdout once it listens; `GET /__failed` returns how
many requests it failed, as JSON.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


def main() -> None:
    upstream = urlsplit(sys.argv[1])
    rules = []
    for spec in sys.argv[2:]:
        after = spec.endswith(":after")
        marker, status, count = spec.removesuffix(":after").rsplit(":", 2)
        path_part, _, body_part = marker.partition("#")
        rules.append([marker, int(status), int(count), after, path_part, body_part.encode()])
    failed: dict[str, int] = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _answer(self, status: int, body: bytes, product: str | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if product:  # elasticsearch-py checks that a 2xx answer comes from Elasticsearch
                self.send_header("X-Elastic-Product", product)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if self.path == "/__failed":
                return self._answer(200, json.dumps(failed).encode())
            injected = None
            with lock:
                for rule in rules:
                    if rule[4] in self.path and rule[5] in (body or b"") and rule[2] > 0:
                        rule[2] -= 1
                        failed[rule[0]] = failed.get(rule[0], 0) + 1
                        injected = rule
                        break
            error = None if injected is None else json.dumps(
                {"error": {"type": "injected", "reason": "flaky proxy"}, "status": injected[1]}).encode()
            if injected is not None and not injected[3]:
                return self._answer(injected[1], error)
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            conn.request(self.command, self.path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
            conn.close()
            if injected is not None:  # forwarded, then the answer is lost
                return self._answer(injected[1], error)
            self._answer(response.status, data, response.getheader("X-Elastic-Product"))

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
