"""Starting, finding and stopping a real single-node OpenSearch or Elasticsearch on 127.0.0.1.

Why: tests and the default local run need a *real* engine (same analyzers, BM25, query
semantics and, on OpenSearch 2.x, the same security manager as production). Both engines run
as their stock distributions (`distribution.py`, `stock.py`): fetched from Maven Central,
started by their own ``bin/opensearch`` or ``bin/elasticsearch``, with the project's plugin
installed from its zip (the cogr plugin; for Elasticsearch the root endpoint). This module runs
either in the background and records it (``record.py``) so that later processes reuse or
stop exactly that node.

Process identity, waiting and signalling use psutil (a record also holds the node's
start time, so a pid reused by another program is never mistaken for the node), the
start lock is filelock's, and readiness is asked over plain HTTP (both engines answer
``GET /`` and ``/_cluster/health`` alike).

Layout of a node home::

    <home>/node.json        pid, port, url, started_at, ... of the running node
    <home>/engine-line      the line whose node wrote the data
    <home>/config/          the node's configuration
    <home>/data/            indices (kept across restarts)
    <home>/logs/            the engine's logs, and node.out (the node's stdout/stderr)

A stock node started by root runs as the ``cogr-search`` user, and its config, data and
logs live in that user's runtime folder, linked from ``<home>/node`` (`runtime.runtime_dir`).
"""

from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import errno
import http.client
import json
import os
import re
import socket
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

import psutil

from cogr_search.localnode import security, stock
from cogr_search.localnode.build import file_lock
from cogr_search.localnode.engine_lines import HOST, ENGINE_LINES, OPENSEARCH, TRANSPORT_OFFSET, EngineLine, LocalNodeError
from cogr_search.localnode.record import (
    NodeInfo,
    NodeStatus,
    info_from_record,
    last_port,
    norm_home,
    last_transport_port,
    write_last_port,
    read_record,
    record_engine,
    remove_record,
    write_record,
)

# How often start/stop look at the process and the log; short, so waits end promptly.
POLL_INTERVAL_S = 0.2
_HEAP_RE = re.compile(r"^[1-9][0-9]*[kKmMgG]?$")

# Popen objects of nodes started by this process. Holding them keeps Python from warning
# that a subprocess is "still running" when the object is collected, and lets stop() reap
# its own child: an unreaped child stays a zombie and would look alive.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


# --------------------------------------------------------------------------- processes


def _reap(pid: int) -> None:
    """Collect the exit status of a node this process started, so it is no zombie.

    A node started by another process is not our child: its parent (or init) reaps it.
    """
    proc = _CHILDREN.get(pid)
    if proc is not None and proc.poll() is not None:
        _CHILDREN.pop(pid, None)


def _process(pid: int) -> psutil.Process | None:
    """The live process ``pid`` (a zombie counts as dead; one we may not inspect too)."""
    if pid <= 0:
        return None
    _reap(pid)
    try:
        proc = psutil.Process(pid)
        return None if proc.status() == psutil.STATUS_ZOMBIE else proc
    except psutil.Error:
        return None


def _our_node(record: dict, home: Path) -> psutil.Process | None:
    """The recorded process if it is *this* home's launcher, not a process that reused the pid.

    Identity: the same start time as recorded (when the record has one), and the recorded
    engine's main class and this home's config folder (``-D...path.conf=``) on its
    command line.
    """
    proc = _process(int(record["pid"]))
    if proc is None:
        return None
    try:
        created = record.get("create_time")
        if created is not None and abs(proc.create_time() - float(created)) > 1.0:
            return None
        argv = proc.cmdline()
    except psutil.Error:
        return None
    engine = record_engine(record)
    if engine.main_class not in argv or stock.conf_argument(home, engine) not in argv:
        return None
    return proc


def _port_free(port: int) -> bool:
    """Whether a server could bind 127.0.0.1:``port`` now.

    SO_REUSEADDR mirrors what the JVM and Netty do, so that connections lingering in
    TIME_WAIT do not count as "in use" while a listener does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError as err:
            if err.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


# --------------------------------------------------------------------------- HTTP


def _get_json(url: str, timeout: float, auth: security.Credentials | None = None) -> dict | None:
    """One GET (no retries: the callers poll); None when the node does not answer with JSON.

    ``auth``: a secured node's CA (verified, as clients must) and admin credentials."""
    request = urllib.request.Request(url)
    context = None
    if auth is not None:
        token = base64.b64encode(f"{auth.user}:{auth.password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
        context = ssl.create_default_context(cafile=str(auth.ca_certs))
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as resp:  # noqa: S310 (our node)
            body = json.loads(resp.read())
    except (OSError, ValueError, http.client.HTTPException):  # refused, reset, timeout, error status, TLS,
        return None  # not JSON, or not HTTP at all (another program took the port)
    return body if isinstance(body, dict) else None


def _version(url: str, timeout: float = 3.0, auth: security.Credentials | None = None) -> str | None:
    """The node's version number (from ``GET /``), or None while it does not answer."""
    body = _get_json(url + "/", timeout, auth)
    try:
        return str(body["version"]["number"]) if body else None
    except (KeyError, TypeError):
        return None


def _health_ok(url: str, wait_s: float, auth: security.Credentials | None = None) -> bool:
    """Ask the cluster to reach yellow within ``wait_s``; True once it has."""
    wait_ms = max(100, int(wait_s * 1000))
    body = _get_json(f"{url}/_cluster/health?wait_for_status=yellow&timeout={wait_ms}ms", wait_s + 5.0, auth)
    # None: unreachable yet, or 408 (not yellow within the wait)
    return body is not None and not body.get("timed_out", True) and body.get("status") in ("yellow", "green")


# --------------------------------------------------------------------------- start


def _last_meaningful_line(path: Path) -> str:
    """The last line of the launcher's output that says something (not a stack frame)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no output)"
    skip = re.compile(r"^\s*(at |\.\.\. \d+ more|Caused by:|Suppressed:|\s*$)")
    for line in reversed(lines):
        if not skip.match(line):
            return line.strip()[:500]
    return "(no output)"


def start(
    home: Path,
    port: int = 9200,
    heap: str = "1g",
    timeout: float = 180.0,
    engine: EngineLine = OPENSEARCH,
    peers: stock.Peers | None = None,
    extras: stock.NodeExtras = stock.NodeExtras(),
    transport_port: int | None = None,
) -> NodeInfo:
    """Start the ``engine`` node of ``home`` in the background and wait until it answers yellow.

    Idempotent: if the node recorded in ``<home>/node.json`` is alive and answers, it is
    returned as is (even if ``port`` differs: one home, one node). A home holding a live
    node of the other engine is refused. Otherwise the port is
    checked, the launcher built if needed (the build is not counted in ``timeout``), the
    JVM started in its own session with ``-Xms``/``-Xmx`` = ``heap`` and output in
    ``<home>/logs/node.out``, and this call waits up to ``timeout`` seconds for the
    started line and a yellow cluster (``peers``: the node joins a multi-node cluster,
    `multinode.py`, and is ready once that cluster is yellow; ``extras``: settings, keystore
    entries and config files a stock node gets before it starts; ``transport_port``: the
    node's transport port, default the home's last one if ``port`` is its last HTTP port, else
    ``port`` + 100). Raises ``LocalNodeError`` on a busy port, a failed build, a JVM that dies
    (with its last log line), a timeout (the JVM is then stopped) or the runtime folder of an
    earlier node whose home was deleted (`stock.stale_runtime`).
    """
    home = norm_home(home)
    if not 1 <= port <= 65535:
        raise LocalNodeError(f"port {port} is out of range (1-65535)")
    transport = _transport_port(home, port, transport_port)
    if not _HEAP_RE.match(heap):
        raise LocalNodeError(f"heap {heap!r} is not a JVM size such as 512m or 1g")
    home.mkdir(parents=True, exist_ok=True)

    with file_lock(home / ".node.lock"):
        existing = _reuse_existing(home, timeout)
        if existing is not None:
            if existing.engine != engine:
                raise LocalNodeError(
                    f"{home} holds a running {existing.engine.description} node (pid {existing.pid}, {existing.url}); "
                    f"stop it or use another home for {engine.description}"
                )
            return existing
        _check_stale(home, engine)
        _check_home_line(home, engine)

        if not _port_free(port):
            raise LocalNodeError(
                f"port {port} on {HOST} is already in use (another {engine.label} node or program listens there); "
                "choose another port or stop that process"
            )
        if not _port_free(transport):
            raise LocalNodeError(
                f"port {transport} on {HOST} (the transport port, HTTP port + {TRANSPORT_OFFSET} unless "
                "--transport-port) is already in use; choose another --transport-port or HTTP port"
            )

        return _launch_stock(home, port, heap, timeout, engine, peers, extras, transport)


def _transport_port(home: Path, port: int, asked: int | None) -> int:
    """The node's transport port: ``asked``; else the home's last one, if ``port`` is its last
    HTTP port (a restart keeps both); else ``port`` + 100. Refused out of range."""
    transport = asked
    if transport is None and last_port(home) == port:
        transport = last_transport_port(home)
    if transport is None:
        transport = port + TRANSPORT_OFFSET
    if not 1 <= transport <= 65535:
        raise LocalNodeError(f"transport port {transport} is out of range (1-65535; default HTTP port + {TRANSPORT_OFFSET})")
    if transport == port:
        raise LocalNodeError(f"transport port {transport} is the HTTP port too; choose another --transport-port")
    return transport


def _check_stale(home: Path, engine: EngineLine) -> None:
    """Refuse to start on the runtime folder an earlier node of ``home`` left (`stock.stale_runtime`)."""
    stale = stock.stale_runtime(home)
    if stale is not None:
        raise LocalNodeError(
            f"{stale} holds the config and data of an earlier node of {home}, whose home was deleted since "
            f"(a new start would reuse its security index and old password); remove it with: "
            f"cogr-search {engine.name} stop --home {home} --purge"
        )


def running_note(home: Path, port: int | None, engine: EngineLine) -> str | None:
    """What a `start` of ``engine`` at ``home`` (on ``port``, None: any) finds there, before it
    starts anything: None (no node runs), one line saying the running node is reused, or
    `LocalNodeError` in one line when that node is of another line or on another port.

    Why here: the CLI printed "already running" and then the start's own refusal, two lines
    that contradicted each other, for a plain start at a secured node's home."""
    state = status(home)
    if not state.running:
        return None
    running = state.engine or engine
    running_port = int(str(state.url).rsplit(":", 1)[1])
    what = f"{running.description} node of {home} (pid {state.pid}, {state.url})"
    stop = f"cogr-search {running.name} stop --home {home}"
    if running != engine:
        hint = ("start with --secure to use it" if running.secure and not engine.secure
                else "start without --secure to use it" if engine.secure and not running.secure
                else f"start with --version {running.line} to use it")
        raise LocalNodeError(f"the {what} runs there, not {engine.description}: {hint}, or stop it first: {stop}")
    if port is not None and port != running_port:
        raise LocalNodeError(f"the {what} already runs on port {running_port}, not {port}; "
                             f"to move it: {stop}, then start --port {port}")
    return f"already running: the {what}; reused as it is"


# The launcher key of the line whose node last wrote a home's data.
LINE_FILE = "engine-line"


def _check_home_line(home: Path, engine: EngineLine) -> None:
    """Refuse a home whose data another engine line wrote (`_launch` marks a home as its line's).

    Why: OpenSearch cannot open data a newer line wrote, and a 3.x node upgrades 2.19 data
    for good; Elasticsearch data is no OpenSearch data at all. One home, one line.
    """
    path = home / LINE_FILE
    try:
        previous = path.read_text().strip()
    except OSError:
        previous = ""
    if not previous and engine.java_release > 17 and any(stock.data_dir(home).glob("*")):
        # Data from before homes were marked: a default line's. A newer line would upgrade it for good.
        raise LocalNodeError(
            f"{home} holds data of a node started before engine lines were recorded (no {path.name}); "
            f"use another --home for {engine.description}"
        )
    if previous and previous != engine.key:
        owner = ENGINE_LINES.get(previous)
        what = owner.description if owner is not None else previous
        raise LocalNodeError(
            f"{home} holds the data of an {what} node ({path}); use another --home for {engine.description}"
        )


def _reuse_existing(home: Path, timeout: float) -> NodeInfo | None:
    """The recorded node if it is ours and answers; clears a stale record."""
    record = read_record(home)
    if record is None:
        remove_record(home)  # absent, or unreadable and so useless
        return None
    pid = int(record["pid"])
    node = _our_node(record, home)
    if node is None:
        remove_record(home)
        return None
    # Alive and ours: it answers at once unless it is still recovering; give it the
    # same bounded time a fresh start would get.
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if _health_ok(str(record["url"]), min(5.0, max(remaining, 0.1)), security.credentials(home)):
            return info_from_record(home, record)
        if remaining <= 0 or not node.is_running():
            break
        time.sleep(POLL_INTERVAL_S)
    if node.is_running():
        raise LocalNodeError(
            f"the node of {home} (pid {pid}) runs but does not answer at {record['url']}; "
            f"stop it first (see {home / 'logs'})"
        )
    remove_record(home)
    return None


def _launch_stock(
    home: Path, port: int, heap: str, timeout: float, engine: EngineLine, peers: stock.Peers | None,
    extras: stock.NodeExtras = stock.NodeExtras(), transport_port: int | None = None,
) -> NodeInfo:
    """Start the stock distribution of ``engine`` by its own ``bin/`` script (`stock.py`)."""
    transport = transport_port if transport_port is not None else port + TRANSPORT_OFFSET
    command = stock.prepare(home, port, heap, engine, peers, extras, transport)
    out_path = command.logs / "node.out"
    if out_path.exists():
        os.replace(out_path, command.logs / "node.out.prev")
    (home / LINE_FILE).write_text(engine.key + "\n")
    started = time.monotonic()
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(
            command.argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=command.cwd,
            env=command.env,
            **command.user.popen_args(),
        )
    _CHILDREN[proc.pid] = proc
    url = f"{'https' if engine.secure else 'http'}://{HOST}:{port}"
    try:
        _wait_healthy(proc, out_path, port, url, started + timeout, timeout, engine, security.credentials(home))
    except BaseException:
        node = _process(proc.pid)
        if node is not None:
            _terminate(node, grace=20.0)
        raise
    return _record_started(home, proc, engine, port, url, heap, time.monotonic() - started, user=command.user.name,
                           transport_port=transport)


def _record_started(
    home: Path, proc: subprocess.Popen[bytes], engine: EngineLine, port: int, url: str, heap: str, start_seconds: float,
    user: str | None = None, transport_port: int | None = None,
) -> NodeInfo:
    """Write ``<home>/node.json`` for the node that just became ready, and return its info."""
    transport_port = transport_port if transport_port is not None else port + TRANSPORT_OFFSET
    record = {
        "pid": proc.pid,
        "engine": engine.name,
        "launcher": engine.key,
        "line": engine.line,
        "create_time": psutil.Process(proc.pid).create_time(),
        "port": port,
        "url": url,
        "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "start_seconds": round(start_seconds, 3),
        "home": str(home),
        "heap": heap,
        "transport_port": transport_port,
        "version": _version(url, auth=security.credentials(home)),
    }
    if user is not None:
        record["user"] = user
    write_record(home, record)
    write_last_port(home, port, transport_port)
    return info_from_record(home, record)


def _wait_healthy(
    proc: subprocess.Popen[bytes], out_path: Path, port: int, url: str, deadline: float, timeout: float, engine: EngineLine,
    auth: security.Credentials | None = None,
) -> None:
    """Poll until the stock node answers yellow at ``url`` (its script prints no started line)."""
    while True:
        _check_alive(proc, out_path, engine)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LocalNodeError(
                f"the {engine.label} node on port {port} did not become ready within {timeout:g}s; "
                f"last output: {_last_meaningful_line(out_path)} (see {out_path})"
            )
        if _health_ok(url, min(2.0, max(remaining, 0.1)), auth):
            return
        time.sleep(POLL_INTERVAL_S)


def _check_alive(proc: subprocess.Popen[bytes], out_path: Path, engine: EngineLine) -> None:
    """Raise with the node's last log line if it exited while starting."""
    rc = proc.poll()
    if rc is not None:
        _CHILDREN.pop(proc.pid, None)
        raise LocalNodeError(
            f"the {engine.label} node exited with status {rc} while starting: "
            f"{_last_meaningful_line(out_path)} (full output: {out_path})"
        )


# --------------------------------------------------------------------------- stop


def _wait_gone(node: psutil.Process, seconds: float) -> bool:
    """Wait up to ``seconds`` for the node to exit (reaping it if it is our child).

    A node that another process started and has not reaped stays a zombie after it exits:
    it is gone all the same (psutil's wait would wait for its parent).
    """
    deadline = time.monotonic() + seconds
    while True:
        try:
            node.wait(timeout=min(POLL_INTERVAL_S, max(deadline - time.monotonic(), 0)))
            break
        except psutil.NoSuchProcess:
            break
        except psutil.TimeoutExpired:
            if _process(node.pid) is None:  # a zombie: exited, not yet reaped by its parent
                break
            if time.monotonic() >= deadline:
                return False
    _CHILDREN.pop(node.pid, None)
    return True


def _terminate(node: psutil.Process, grace: float) -> bool:
    """SIGTERM (the launcher's shutdown hook closes the node), SIGKILL after ``grace``."""
    with contextlib.suppress(psutil.NoSuchProcess):
        node.terminate()
    if _wait_gone(node, grace):
        return True
    with contextlib.suppress(psutil.NoSuchProcess):
        node.kill()
    return _wait_gone(node, 10.0)


def stop(home: Path, timeout: float = 60) -> bool:
    """Stop the node recorded in ``home``; False if none was running.

    Only the recorded pid is signalled, and only after checking that it is still this
    home's launcher (a pid reused by another program is left alone and the stale record
    removed). SIGTERM lets the node flush and release its data lock; SIGKILL follows
    after ``timeout`` seconds.
    """
    home = norm_home(home)
    if not home.is_dir():
        return False
    with file_lock(home / ".node.lock"):
        record = read_record(home)
        if record is None:
            remove_record(home)
            return False
        pid = int(record["pid"])
        node = _our_node(record, home)
        if node is None:
            remove_record(home)
            return False
        if not _terminate(node, grace=timeout):
            label = record_engine(record).label
            raise LocalNodeError(f"the {label} node of {home} (pid {pid}) did not exit after SIGKILL")
        remove_record(home)
        return True


# --------------------------------------------------------------------------- status


def status(home: Path) -> NodeStatus:
    """Whether the node recorded in ``home`` runs, with its engine, URL and version.

    ``running`` is about the process (alive and this home's launcher); ``version`` is
    None while it does not answer HTTP, e.g. during start. Read-only: a stale record is
    left for ``start``/``stop`` to clear.
    """
    home = norm_home(home)
    record = read_record(home)
    if record is None:
        return NodeStatus(running=False, pid=None, url=None, version=None)
    pid = int(record["pid"])
    if _our_node(record, home) is None:
        return NodeStatus(running=False, pid=None, url=None, version=None)
    url = str(record["url"])
    auth = security.credentials(home)
    return NodeStatus(running=True, pid=pid, url=url, version=_version(url, auth=auth), engine=record_engine(record))
