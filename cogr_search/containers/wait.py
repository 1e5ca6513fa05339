"""``python -m cogr_search.containers.wait URL... [--timeout S]``: until every URL answers 200.

Why: compose's ``depends_on: condition: service_healthy`` needs healthchecks, and podman
without systemd runs none; the setup job waits for OpenSearch and the service itself.
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.request
from collections.abc import Callable

POLL_S = 1.0


def answers(url: str) -> bool:
    """Whether ``url`` answers 200 now."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status == 200
    except OSError:
        return False


def wait_for(urls: list[str], timeout_s: float, check: Callable[[str], bool] = answers) -> list[str]:
    """Poll until every URL answers or the deadline passes; the URLs that never answered."""
    deadline = time.monotonic() + timeout_s
    waiting = list(urls)
    while waiting:
        waiting = [url for url in waiting if not check(url)]
        if not waiting or time.monotonic() >= deadline:
            break
        time.sleep(POLL_S)
    return waiting


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cogr_search.containers.wait", description=__doc__.splitlines()[0])
    parser.add_argument("urls", nargs="+")
    parser.add_argument("--timeout", type=float, default=600.0)
    options = parser.parse_args(argv)
    missing = wait_for(options.urls, options.timeout)
    if missing:
        print(f"error: no answer within {options.timeout:g}s from {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
