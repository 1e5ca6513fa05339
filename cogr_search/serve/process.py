"""`cogr-search serve` as a child process: started, waited for on `/health`, stopped.

The benchmark measures the service the way apps reach it (a separate process over
loopback HTTP), and the tests do the same; both start it through this one class.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from cogr_search.errors import CogrError

START_DEADLINE_S = 180.0
POLL_S = 0.2


def free_port() -> int:
    """A loopback port nobody listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_bytes(method: str, url: str, data: bytes | None = None, timeout: float = 120.0,
               headers: Mapping[str, str] | None = None, context: ssl.SSLContext | None = None) -> tuple[int, bytes]:
    """(status, body) of one request; HTTP error statuses are answers, not exceptions."""
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def http_json(method: str, url: str, payload: object = None, raw: bytes | None = None, timeout: float = 120.0,
              headers: Mapping[str, str] | None = None, context: ssl.SSLContext | None = None) -> tuple[int, dict]:
    """(status, JSON body) of one request; HTTP error statuses are answers, not exceptions."""
    data = raw if raw is not None else (None if payload is None else json.dumps(payload).encode())
    status, body = http_bytes(method, url, data, timeout, headers, context)
    return status, json.loads(body)


class ServiceProcess:
    """`python -m cogr_search.cli serve --run RUN --port P OPTIONS...` on a free port.

    `token`: sent as a bearer token by this object's calls (the service's own `--token-file`
    is among `options`); `ca_certs`: the service serves https (`--tls-cert`) signed by it."""

    def __init__(self, run: str | Path, *options: str, env: Mapping[str, str] | None = None,
                 deadline_s: float = START_DEADLINE_S, token: str | None = None,
                 ca_certs: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"{'https' if ca_certs is not None else 'http'}://127.0.0.1:{self.port}"
        self.headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        self.context = ssl.create_default_context(cafile=str(ca_certs)) if ca_certs is not None else None
        self.args = [sys.executable, "-m", "cogr_search.cli", "serve", "--run", str(run), "--port", str(self.port),
                     *options]
        self.env = dict(env) if env is not None else dict(os.environ)
        self.deadline_s = deadline_s
        self.process: subprocess.Popen | None = None
        self._log: IO[str] | None = None

    def __enter__(self) -> ServiceProcess:
        # stderr goes to a file, never a pipe nobody reads (a full pipe would block the service)
        self._log = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(self.args, env=self.env, stdout=subprocess.DEVNULL, stderr=self._log)
        deadline = time.monotonic() + self.deadline_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._log.seek(0)
                lines = self._log.read().strip().splitlines()
                raise CogrError(f"the service exited with {self.process.returncode}: {lines[-1] if lines else ''}")
            try:
                if http_json("GET", self.url + "/health", timeout=2, context=self.context)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(POLL_S)  # polling readiness with a deadline
        self.__exit__()
        raise CogrError(f"the service on {self.url} was not ready within {self.deadline_s:g} s")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def health(self) -> dict:
        return http_json("GET", self.url + "/health", context=self.context)[1]

    def post(self, route: str, payload: object = None, raw: bytes | None = None, timeout: float = 120.0) -> tuple[int, dict]:
        return http_json("POST", self.url + route, payload, raw, timeout=timeout, headers=self.headers,
                         context=self.context)

    def get_text(self, route: str, headers: Mapping[str, str] | None = None) -> tuple[int, str]:
        """(status, text) of `GET route` (`/metrics`), with this object's token unless `headers` say otherwise."""
        status, body = http_bytes("GET", self.url + route, headers=self.headers if headers is None else headers,
                                  context=self.context)
        return status, body.decode("utf-8")

    def expand(self, texts: Sequence[str], timeout: float = 120.0) -> list[list[str]]:
        """Keyword sets for `texts`; `CogrError` (one line) when the service fails or is too slow."""
        try:
            status, body = self.post("/v1/expand/query", {"texts": list(texts)}, timeout=timeout)
        except OSError as err:
            raise CogrError(f"expansion service {self.url}: no answer within {timeout:g} s ({err})") from None
        if status != 200:
            raise CogrError(f"expansion service answered {status}: {body.get('error')}")
        return body["keywords"]
