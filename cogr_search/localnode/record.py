"""The record of a running local node (``<home>/node.json``), and what it tells callers.

Why a file: any later process (the CLI, a test fixture, a benchmark) finds, reuses or
stops exactly the node a home holds. It is written atomically and read defensively: a
torn or hand-edited record identifies no process and counts as absent.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path

from cogr_search.atomic import atomic_open
from cogr_search.localnode.engine_lines import ENGINES, ENGINE_LINES, OPENSEARCH, EngineLine

RECORD_NAME = "node.json"


@dataclass(frozen=True)
class NodeInfo:
    """A running node started from ``home``.

    ``start_seconds`` is the time from launching the JVM until the cluster answered yellow
    (recorded at start; a reused node reports the figure of its own start).
    """

    pid: int
    port: int
    url: str
    home: Path
    start_seconds: float
    engine: EngineLine = OPENSEARCH


@dataclass(frozen=True)
class NodeStatus:
    """What ``status`` found: ``version`` is None when the node does not answer (yet)."""

    running: bool
    pid: int | None
    url: str | None
    version: str | None
    engine: EngineLine | None = None


def record_engine(record: dict) -> EngineLine:
    """The launcher of a record: by its ``launcher`` key (engine lines), else by engine (records
    written before there were lines: the 2.19 line); before there were two engines, OpenSearch."""
    launcher = ENGINE_LINES.get(str(record.get("launcher", "")))
    if launcher is not None:
        return launcher
    return ENGINES.get(str(record.get("engine", OPENSEARCH.name)), OPENSEARCH)


def record_path(home: Path) -> Path:
    return home / RECORD_NAME


def read_record(home: Path) -> dict | None:
    try:
        record = json.loads(record_path(home).read_text())
        record["pid"], record["port"] = int(record["pid"]), int(record["port"])
        record["url"] = str(record["url"])
    except (OSError, ValueError, KeyError, TypeError):
        # Absent, or torn / hand-edited so that it cannot identify a process: no record.
        return None
    return record


def write_record(home: Path, record: dict) -> None:
    """Write node.json atomically, so a reader never sees half of it."""
    with atomic_open(record_path(home)) as out:
        out.write(json.dumps(record, indent=2) + "\n")


def remove_record(home: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        record_path(home).unlink()


def info_from_record(home: Path, record: dict) -> NodeInfo:
    return NodeInfo(
        pid=int(record["pid"]),
        port=int(record["port"]),
        url=str(record["url"]),
        home=home,
        start_seconds=float(record.get("start_seconds", 0.0)),
        engine=record_engine(record),
    )


def norm_home(home: Path | str) -> Path:
    return Path(home).expanduser().resolve()


# The port of a home's last start: `start` without --port comes back there after a `stop`.
LAST_PORT_NAME = "last-port"


# Its transport port, written beside it: a restart on the same HTTP port keeps it.
LAST_TRANSPORT_PORT_NAME = "last-transport-port"


def write_last_port(home: Path, port: int, transport_port: int | None = None) -> None:
    (home / LAST_PORT_NAME).write_text(f"{port}\n")
    if transport_port is not None:
        (home / LAST_TRANSPORT_PORT_NAME).write_text(f"{transport_port}\n")


def last_transport_port(home: Path) -> int | None:
    """The transport port the node of ``home`` last started with (None: never started, or before
    it was written)."""
    try:
        return int((norm_home(home) / LAST_TRANSPORT_PORT_NAME).read_text().strip())
    except (OSError, ValueError):
        return None


def last_port(home: Path) -> int | None:
    """The HTTP port the node of ``home`` last started on (None: never started)."""
    try:
        return int((norm_home(home) / LAST_PORT_NAME).read_text().strip())
    except (OSError, ValueError):
        return None
