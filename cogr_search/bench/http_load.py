"""A minimal HTTP/1.1 load generator: N concurrent keep-alive clients on one event loop.

Why not a client library: on 2 cores the load generator shares the CPU with the service
it measures, so it must cost as little as possible per request. Raw requests over
persistent asyncio streams cost a few microseconds each; urllib or httpx would cost
more than the cached service path itself and measure the client instead.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class LoadResult:
    latencies_ms: list[float]
    seconds: float
    errors: int

    @property
    def rps(self) -> float:
        return len(self.latencies_ms) / self.seconds if self.seconds else 0.0


def _request(host: str, port: int, path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    """Status code of one response, its body consumed (Content-Length framing)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    if length:
        await reader.readexactly(length)
    return status


async def _client(host: str, port: int, requests: list[bytes], latencies: list[float], errors: list[int]) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for request in requests:
            started = time.perf_counter()
            writer.write(request)
            status = await _read_response(reader)
            latencies.append((time.perf_counter() - started) * 1000.0)
            if status != 200:
                errors.append(status)
    finally:
        writer.close()


async def _run(host: str, port: int, path: str, bodies: Sequence[bytes], clients: int, requests: int) -> LoadResult:
    encoded = [_request(host, port, path, b) for b in bodies]
    per_client = [[encoded[(c + i * clients) % len(encoded)] for i in range(requests // clients)] for c in range(clients)]
    latencies: list[float] = []
    errors: list[int] = []
    started = time.perf_counter()
    await asyncio.gather(*(_client(host, port, work, latencies, errors) for work in per_client))
    return LoadResult(latencies, time.perf_counter() - started, len(errors))


def post_load(host: str, port: int, path: str, bodies: Sequence[bytes], clients: int = 16, requests: int = 10_000) -> LoadResult:
    """POST `bodies` round-robin from `clients` concurrent connections, `requests` in all."""
    return asyncio.run(_run(host, port, path, bodies, clients, requests))
