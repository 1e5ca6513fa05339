"""The suite's own selection logic, as a newcomer's machine meets it: a `docker` command with no
daemon behind it, or one without debootstrap, leaves the container tests out in one line that
says why and how to enable them; `COGR_TEST_REQUIRE` (set by .ci/run) turns that into a failure.
A shared data set that is absent skips its tests, and fails them under the same variable.

The engine here is a `docker` script that answers as a client without a daemon answers: the
point is the suite's behaviour on such a machine, which this one may not be.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.requirements_check import REPO_ROOT, shared_data_set
from tests.serve_support import subprocess_env

NO_DAEMON = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
CONTAINER_FILES = ["tests/test_container_nodes.py", "tests/test_compose.py"]
FAST_TEST = "tests/test_suite_selection.py::test_an_absent_data_set_skips_with_its_path"  # a run needs one test to run
SLOW_TEST = "tests/test_bench_backends.py::test_bench_backend_lists_name_each_engine_once"  # in a module marked slow


def _docker(bin_dir: Path, info_exit: int) -> Path:
    """A `docker` on PATH whose `info` exits ``info_exit`` (1: the daemon-less client) and which has no image."""
    bin_dir.mkdir()
    script = bin_dir / "docker"
    script.write_text(f"""#!/bin/sh
case "$1" in
  info) [ {info_exit} -eq 0 ] && echo "Server Version: 28" || echo "{NO_DAEMON}" >&2; exit {info_exit} ;;
  *) echo "Error: no such image" >&2; exit 1 ;;
esac
""")
    script.chmod(0o755)
    return bin_dir


def _collect(bin_dir: Path, require: str | None) -> subprocess.CompletedProcess[str]:
    """The container test files collected with only ``bin_dir``'s docker as engine, and no
    debootstrap on PATH (/usr/sbin left out)."""
    return _pytest(bin_dir, require, "--collect-only", *CONTAINER_FILES)


def _on_two_workers(bin_dir: Path, require: str | None) -> subprocess.CompletedProcess[str]:
    """The container test files and one quick test run as `make test` runs them: two workers."""
    return _pytest(bin_dir, require, "-n", "2", FAST_TEST, *CONTAINER_FILES)


def _pytest(bin_dir: Path, require: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = subprocess_env()
    env.update(PATH=f"{bin_dir}:/usr/bin:/bin", COGR_CONTAINER_ENGINE="docker")
    env.pop("COGR_TEST_REQUIRE", None)
    env.pop("COGR_TEST_NODES", None)
    if require:
        env["COGR_TEST_REQUIRE"] = require
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_a_docker_without_a_daemon_deselects_the_container_tests_in_one_line(tmp_path: Path) -> None:
    done = _collect(_docker(tmp_path / "bin", info_exit=1), require=None)
    lines = [line for line in done.stdout.splitlines() if "container test(s) deselected" in line]
    assert len(lines) == 1, done.stdout + done.stderr
    assert f"`docker info` failed (exit 1): {NO_DAEMON}" in lines[0]
    assert "docker/engine/setup.sh" in lines[0]
    assert done.returncode == 5  # everything selected was deselected: no test collected, no error
    assert "error" not in done.stdout.lower()


def test_two_workers_say_it_once_at_the_end(tmp_path: Path) -> None:
    """`make test` runs pytest-xdist workers, whose own output nobody sees: the controller says it."""
    done = _on_two_workers(_docker(tmp_path / "bin", info_exit=1), None)
    lines = [line for line in done.stdout.splitlines() if "container test(s) deselected" in line]
    assert len(lines) == 1, done.stdout + done.stderr
    assert f"`docker info` failed (exit 1): {NO_DAEMON}" in lines[0]
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def test_make_tests_selection_says_how_many_slow_tests_it_left_out(tmp_path: Path) -> None:
    done = _pytest(_docker(tmp_path / "bin", info_exit=1), None, "-n", "2", "-m", "not slow",
                   FAST_TEST, SLOW_TEST)
    lines = [line for line in done.stdout.splitlines() if "marked slow deselected" in line]
    assert lines == ["1 test(s) marked slow deselected: `make test-slow` runs them (CI runs both)"], done.stdout
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def test_a_docker_that_answers_but_cannot_debootstrap_deselects_them_too(tmp_path: Path) -> None:
    done = _collect(_docker(tmp_path / "bin", info_exit=0), require=None)
    (line,) = [line for line in done.stdout.splitlines() if "container test(s) deselected" in line]
    assert "docker answers, but debootstrap is not on PATH to build the base image(s) localhost/cogr-base:bookworm" in line


def test_ci_fails_instead_of_deselecting(tmp_path: Path) -> None:
    done = _collect(_docker(tmp_path / "bin", info_exit=1), require="data,containers")
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert f"COGR_TEST_REQUIRE names containers, but `docker info` failed (exit 1): {NO_DAEMON}" in done.stderr


def test_ci_fails_under_two_workers_too(tmp_path: Path) -> None:
    done = _on_two_workers(_docker(tmp_path / "bin", info_exit=1), "data,containers")
    assert done.returncode == 4, done.stdout + done.stderr  # the usage error, before any worker starts
    assert f"COGR_TEST_REQUIRE names containers, but `docker info` failed (exit 1): {NO_DAEMON}" in done.stdout + done.stderr


def test_an_absent_data_set_skips_with_its_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COGR_TEST_REQUIRE", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"shared/data/no-such-set: not found; this test reads the shared data sets"):
        shared_data_set("no-such-set")


def test_an_absent_data_set_fails_where_ci_requires_data(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COGR_TEST_REQUIRE", "containers, data")
    with pytest.raises(pytest.fail.Exception, match=r"no-such-set: not found.*COGR_TEST_REQUIRE names data"):
        shared_data_set("no-such-set")
