"""The container engine the images are built with: podman (rootful, docker/engine/setup.sh)
or docker, whichever is on PATH. Why a module: the images, the compose test and the test
nodes must agree on one engine and on the labels that mark what cogr-search started."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

from cogr_search.errors import CogrError
from cogr_search.settings import load_settings

LABEL = "cogr-search"
"""Label key on every container cogr-search starts; its value names who started it."""
PODMAN_SOCKET = "unix:///run/podman/podman.sock"
API_START_TIMEOUT_S = 20.0


class EngineError(CogrError):
    """No container engine, or an engine command failed; the message is one line."""


def engine_command() -> str:
    """``podman`` (preferred: the one set up here) or ``docker``; COGR_CONTAINER_ENGINE overrides."""
    chosen = load_settings().container_engine
    for name in [chosen] if chosen else ["podman", "docker"]:
        path = shutil.which(name)
        if path:
            return path
    raise EngineError("no container engine: neither podman nor docker is on PATH (docker/engine/setup.sh installs podman)")


def engine(*args: str, capture: bool = True) -> str:
    """Run ``<engine> args...``; its stdout, or an EngineError naming the command and its last line."""
    cmd = [engine_command(), *args]
    done = subprocess.run(cmd, capture_output=capture, text=True, check=False)
    if done.returncode != 0:
        tail = ((done.stderr or "").strip() or (done.stdout or "").strip()).splitlines()[-1:] or ["(no output)"]
        raise EngineError(f"{' '.join(cmd[:4])}... failed (exit {done.returncode}): {tail[0]}")
    return done.stdout or ""


def _api_listens(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        try:
            client.connect(path)
        except OSError:
            return False
    return True


def ensure_docker_api() -> None:
    """podman's Docker API answering on its socket, started as docker/engine/setup.sh starts it
    when it does not (after a reboot, or when only `podman` was installed): testcontainers
    speaks that API alone, and `make test` should not fail on a service nobody started."""
    if os.environ.get("DOCKER_HOST", PODMAN_SOCKET) != PODMAN_SOCKET or not engine_command().endswith("podman"):
        return  # someone else's API
    from cogr_search.containers.wait import wait_for

    path = PODMAN_SOCKET.removeprefix("unix://")
    if _api_listens(path):
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    log = Path("/var/tmp/cogr-podman-service.log")
    with log.open("ab") as out:
        # cwd "/": the service outlives this process, and conmon fails every container start
        # ("Failed to get working directory") once the caller's folder, say a test clone, is gone
        subprocess.Popen([engine_command(), "system", "service", "--time=0", PODMAN_SOCKET], stdout=out,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, cwd="/")
    if wait_for([path], API_START_TIMEOUT_S, check=_api_listens):
        raise EngineError(f"podman's Docker API did not answer on {path} within {API_START_TIMEOUT_S:.0f} s; see {log}")


def docker_api_env() -> dict[str, str]:
    """What testcontainers needs to reach podman's Docker API: the socket, no Ryuk (its image
    lives on Docker Hub; containers are removed by label instead), and the socket's host
    for published ports (a ``/.dockerenv`` file would otherwise make it look for a bridge)."""
    if os.environ.get("DOCKER_HOST") or not engine_command().endswith("podman"):
        return {"TESTCONTAINERS_RYUK_DISABLED": "true"}
    return {
        "DOCKER_HOST": PODMAN_SOCKET,
        "TESTCONTAINERS_RYUK_DISABLED": "true",
        "TESTCONTAINERS_CONNECTION_MODE": "docker_host",
    }
