"""A local node's life as a new user lives it, through the CLI on real nodes in temporary
homes (issue 37): the secured start keeps the admin password off every command line and
says how to check and stop the node; the transport port can be chosen; a plain start at a
secured node's home says one clear line; a home deleted and started again is either fresh
or refused in one line naming the purge; `stop --purge` leaves nothing behind."""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from cogr_search.bench.node import free_port_run
from cogr_search.localnode import cleanup
from cogr_search.localnode.runtime import runtime_dir
from tests.conftest import REPO_ROOT, free_port

pytestmark = [pytest.mark.opensearch, pytest.mark.slow]

# A password of the admin's form, written into the home before the first start (the node
# keeps an existing one), so the watch knows what to look for.
PASSWORD = "Cg-Lifecycle0Watch0Secret0xy-9x"
HASHER = "org.opensearch.security.tools.Hasher"


def _cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COGR_CLUSTER_", "COGR_OPENSEARCH_URL"))}
    return subprocess.run([sys.executable, "-m", "cogr_search.cli", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def _watched_start(args: list[str]) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """Run ``cogr-search ARGS`` while reading every process's command line, over and over,
    until it exits; its result and every command line seen."""
    command = [sys.executable, "-m", "cogr_search.cli", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COGR_CLUSTER_", "COGR_OPENSEARCH_URL"))}
    seen: list[list[str]] = []
    with subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as starter:
        while starter.poll() is None:
            seen += [p.info["cmdline"] for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"]]
        out, err = starter.communicate()
    return subprocess.CompletedProcess(command, starter.returncode, out, err), seen


def _get(url: str, home: Path, password: str) -> dict:
    request = urllib.request.Request(url)
    request.add_header("Authorization", "Basic " + base64.b64encode(f"admin:{password}".encode()).decode())
    context = ssl.create_default_context(cafile=str(home / "ca.pem"))
    with urllib.request.urlopen(request, timeout=30, context=context) as resp:
        return json.loads(resp.read())


def _assert_purged(home: Path, runtime: Path) -> None:
    purged = _cli("opensearch", "stop", "--home", str(home), "--purge")
    assert purged.returncode == 0, purged.stderr
    assert not home.exists() and not runtime.exists(), purged.stderr


@dataclass(frozen=True)
class Started:
    home: Path
    runtime: Path
    url: str
    transport_port: int
    result: subprocess.CompletedProcess[str]
    cmdlines: list[list[str]]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Started]:
    """`opensearch start --secure --home H --transport-port T`, watched; purged at the end."""
    home = tmp_path_factory.mktemp("lifecycle") / "secured"
    home.mkdir()
    fd = os.open(home / "admin-password", os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(PASSWORD + "\n")
    port, transport = free_port_run(1), free_port()
    runtime = runtime_dir(home)
    result, cmdlines = _watched_start(["opensearch", "start", "--secure", "--home", str(home), "--port", str(port),
                                       "--transport-port", str(transport), "--heap", "512m"])
    try:
        assert result.returncode == 0, result.stderr
        yield Started(home, runtime, result.stdout.strip(), transport, result, cmdlines)
    finally:
        _assert_purged(home, runtime)


def test_the_admin_password_is_on_no_command_line_while_the_secured_node_starts(secured: Started) -> None:
    hashers = [line for line in secured.cmdlines if HASHER in line]
    assert hashers, "the watch never saw the security plugin's Hasher run"
    assert not [line for line in secured.cmdlines if any(PASSWORD in arg for arg in line)]
    # The password the node was given is the one it takes.
    assert _get(secured.url + "/", secured.home, PASSWORD)["version"]["number"].startswith("2.19.")


def test_start_says_how_to_check_and_stop_the_node(secured: Started) -> None:
    said = secured.result.stderr
    assert f"cogr-search opensearch status --home {secured.home}" in said
    assert f"cogr-search opensearch stop --home {secured.home}" in said
    state = _cli("opensearch", "status", "--home", str(secured.home))
    assert state.returncode == 0 and state.stdout.startswith(f"running: {secured.url} "), state.stderr


def test_the_transport_port_is_the_one_asked_for(secured: Started) -> None:
    nodes = _get(secured.url + "/_nodes/_local/transport", secured.home, PASSWORD)["nodes"]
    (node,) = nodes.values()
    assert node["transport"]["publish_address"].endswith(f":{secured.transport_port}")
    record = json.loads((secured.home / "node.json").read_text())
    assert record["transport_port"] == secured.transport_port


def test_a_plain_start_at_a_secured_home_says_one_line(secured: Started) -> None:
    port = secured.url.rsplit(":", 1)[1]
    refused = _cli("opensearch", "start", "--home", str(secured.home), "--port", port)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 1 and len(lines) == 1, refused.stderr
    assert "start with --secure to use it" in lines[0] and f"stop --home {secured.home}" in lines[0]
    assert "already running" not in lines[0]


def test_a_deleted_home_starts_afresh_after_the_purge_it_names(tmp_path: Path) -> None:
    """The user's three steps: start --secure, rm -rf the home, the same start again."""
    home = tmp_path / "fresh"
    port = free_port_run(1)
    start = ["opensearch", "start", "--secure", "--home", str(home), "--port", str(port), "--heap", "512m"]
    runtime = runtime_dir(home)
    try:
        first = _cli(*start)
        assert first.returncode == 0, first.stderr
        first_password = (home / "admin-password").read_text().strip()
        assert _cli("opensearch", "stop", "--home", str(home)).returncode == 0
        shutil.rmtree(home)
        again = _cli(*start)
        if runtime != home:  # a root caller's node: its runtime folder outlived the home
            lines = again.stderr.strip().splitlines()
            assert again.returncode == 1 and len(lines) == 1, again.stderr
            purge = f"cogr-search opensearch stop --home {home} --purge"
            assert lines[0].endswith(purge) and str(runtime) in lines[0]
            purged = _cli(*purge.split()[1:])
            assert purged.returncode == 0 and not runtime.exists(), purged.stderr
            again = _cli(*start)
        assert again.returncode == 0, again.stderr
        password = (home / "admin-password").read_text().strip()
        assert password != first_password
        assert _get(again.stdout.strip() + "/", home, password)["version"]["number"].startswith("2.19.")
    finally:
        _assert_purged(home, runtime)


def test_stop_purge_removes_an_elasticsearch_node_completely(tmp_path: Path) -> None:
    home = tmp_path / "es"
    (home / "notes").mkdir(parents=True)  # a user's own file in the home: kept, and the home with it
    (home / "notes" / "keep.txt").write_text("mine\n")
    runtime = runtime_dir(home)
    started = _cli("elasticsearch", "start", "--home", str(home), "--port", str(free_port_run(1)), "--heap", "512m")
    try:
        assert started.returncode == 0, started.stderr
        assert (runtime / "data").is_dir()
    finally:
        purged = _cli("elasticsearch", "stop", "--home", str(home), "--purge")
    assert purged.returncode == 0 and purged.stdout.strip() == "stopped", purged.stderr
    assert not runtime.exists() or runtime == home
    assert sorted(p.name for p in home.iterdir()) == ["notes"]
    assert "kept" in purged.stderr
    shutil.rmtree(home / "notes")
    assert cleanup.purge(home).removed == (home,)
