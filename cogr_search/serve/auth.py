"""Bearer-token authentication of the expansion service (`serve --token-file F`).

Why a plain ASGI middleware rather than a FastAPI dependency: it runs before routing and
body parsing, so a caller without the token costs the service almost nothing, and the
cached hot path pays one header lookup and one constant-time comparison.

`/health` always stays open (load balancers and orchestrators probe it without secrets);
`/metrics` stays open unless the service is told to protect it (`--metrics-auth`).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from pathlib import Path
from typing import Any

from cogr_search.errors import CogrError
from cogr_search.settings import Settings

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable, Callable], Awaitable[None]]

# `/` only names the service (so a client that took it for a cluster can say so); `/health` is for probes.
OPEN_PATHS = frozenset({"/", "/health"})
BEARER = b"bearer "


def read_token(path: Path) -> str:
    """The token in `path` (its content, stripped); a one-line error naming the file
    when it cannot be read or holds nothing."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else "not UTF-8"
        raise CogrError(f"token file {path}: {reason}") from None
    if not token:
        raise CogrError(f"token file {path}: empty (it must hold the bearer token)")
    if any(c.isspace() for c in token):
        raise CogrError(f"token file {path}: the token contains whitespace (one token, on one line)")
    return token


def service_token(settings: Settings) -> str | None:
    """The token a client sends to the service: `COGR_SERVICE_TOKEN`, else the content of
    `COGR_SERVICE_TOKEN_FILE`, else none."""
    if settings.service_token is not None:
        return settings.service_token.get_secret_value()
    return read_token(settings.service_token_file) if settings.service_token_file is not None else None


def bearer_matches(header: bytes | None, token: bytes) -> bool:
    """Whether an `Authorization` header carries `token`, compared in constant time
    (an attacker timing the answers learns nothing about the token's prefix)."""
    if header is None or header[: len(BEARER)].lower() != BEARER:
        return False
    return hmac.compare_digest(header[len(BEARER):].strip(), token)


class BearerAuth:
    """Answers 401 to any request outside `open_paths` without `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str, open_paths: Collection[str] = OPEN_PATHS) -> None:
        self.app = app
        self.token = token.encode("utf-8")
        self.open_paths = frozenset(open_paths)

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        header = next((value for name, value in scope["headers"] if name == b"authorization"), None)
        if bearer_matches(header, self.token):
            await self.app(scope, receive, send)
            return
        reason = "missing bearer token" if header is None else "wrong bearer token"
        await _unauthorized(send, f"{reason}: send 'Authorization: Bearer <token>' (this service has a token: every "
                                  f"route but {', '.join(sorted(self.open_paths))} needs it, /docs and /openapi.json "
                                  "included)")


async def _unauthorized(send: Callable, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": 401, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b'Bearer realm="cogr-search"'),
    ]})
    await send({"type": "http.response.body", "body": body})
