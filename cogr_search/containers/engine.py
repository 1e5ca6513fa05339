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
from cogr_search.containers.wait import wait_for

LABEL = "cogr-search"
"""Label key on every container cogr-search starts; its value names who started it."""
PODMAN_SOCKET = "unix:///run/podman/podman.sock"
API_START_TIMEOUT_S = 20.0
BASE_SUITES = ("bookworm", "trixie")
"""The Debian suites of the debootstrapped bases the local images build on (docker/base/build.sh)."""


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


def ensure_docker_api(socket_url: str | None = None) -> int | None:
    """podman's Docker API answering on ``socket_url`` (default: podman's own socket, unless
    DOCKER_HOST names another API), started as docker/engine/setup.sh starts it when it does not
    (after a reboot, or when only `podman` was installed): testcontainers speaks that API alone,
    and `make test` should not fail on a service nobody started.

    Returns the pid of the service it started, None when one already answered (or the API is
    someone else's): whoever starts a service can end that one alone, never another's."""
    if not engine_command().endswith("podman"):
        return None  # docker keeps its own daemon
    if socket_url is None:
        if os.environ.get("DOCKER_HOST", PODMAN_SOCKET) != PODMAN_SOCKET:
            return None  # someone else's API
        socket_url = PODMAN_SOCKET

    path = socket_url.removeprefix("unix://")
    if _api_listens(path):
        return None
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    log = Path("/var/tmp/cogr-podman-service.log")
    with log.open("ab") as out:
        # cwd "/": the service outlives this process, and conmon fails every container start
        # ("Failed to get working directory") once the caller's folder, say a test clone, is gone
        service = subprocess.Popen([engine_command(), "system", "service", "--time=0", socket_url], stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, cwd="/")
    if wait_for([path], API_START_TIMEOUT_S, check=_api_listens):
        raise EngineError(f"podman's Docker API did not answer on {path} within {API_START_TIMEOUT_S:.0f} s; see {log}")
    return service.pid


def why_images_cannot_be_built() -> str | None:
    """None where an engine answers and can build the project's images, else one line saying why.

    Why a check beyond "a command is on PATH": a machine may have a `docker` client with no
    daemon behind it, or podman without debootstrap (the local bases are debootstrapped), and
    the container tests then fail after minutes instead of being left out in one line."""
    try:
        command = engine_command()
    except EngineError as err:
        return str(err)
    name = Path(command).name
    done = subprocess.run([command, "info"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = ((done.stderr or done.stdout or "").strip().splitlines() or ["(no output)"])[-1]
        return f"`{name} info` failed (exit {done.returncode}): {tail}"
    missing = [base_image(suite) for suite in BASE_SUITES if not _has_image(command, base_image(suite))]
    if missing and not shutil.which("debootstrap"):
        return f"{name} answers, but debootstrap is not on PATH to build the base image(s) {', '.join(missing)}"
    return None


def base_image(suite: str) -> str:
    """The tag of the debootstrapped base of a Debian ``suite``."""
    return f"localhost/cogr-base:{suite}"


def _has_image(command: str, name: str) -> bool:
    return subprocess.run([command, "image", "inspect", name], capture_output=True, check=False).returncode == 0


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
