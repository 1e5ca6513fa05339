"""`make images` on a real engine keeps its disk: a failed build leaves no working container,
the leftovers of an interrupted one are removed before the next build, and a build that cannot
fit stops before it starts, with the numbers. (CI once failed with "no space left on device":
five failed builds had each left a working container holding its layers.)"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cogr_search.containers.engine import EngineError, base_image, engine, engine_command
from cogr_search.containers.images import (
    BUILD_CONTAINER_SUFFIX, IMAGES_LOCK, Image, _build, check_free_space, ensure_images, local_images,
    reclaim_build_space, storage_root, with_parents,
)
from cogr_search.localnode.build import file_lock

pytestmark = [pytest.mark.containers]

BASE = base_image("bookworm")
TAG = "localhost/cogr-test-failing-build:latest"


@pytest.fixture(scope="module")
def base() -> None:
    ensure_images(with_parents(local_images(), [BASE]), log=lambda _line: None)


def _failing_dockerfile(tmp_path: Path) -> Path:
    """A build that writes a layer's worth of bytes, then fails in the same step."""
    dockerfile = tmp_path / "failing.Dockerfile"
    dockerfile.write_text(f"FROM {BASE}\nRUN head -c 4000000 /dev/urandom > /blob && exit 3\n")
    return dockerfile


def _working_containers() -> set[str]:
    listed = engine("ps", "--all", "--external", "--format", "{{.Names}}").split()
    return {name for name in listed if name.endswith(BUILD_CONTAINER_SUFFIX)}


def test_a_failed_build_leaves_no_working_container(base: None, tmp_path: Path) -> None:
    before = _working_containers()
    with pytest.raises(EngineError, match="exit"):
        _build(Image(TAG, str(_failing_dockerfile(tmp_path)), list), "test")
    assert _working_containers() <= before


def test_an_interrupted_builds_working_container_is_removed_before_the_next_build(base: None, tmp_path: Path) -> None:
    """The state a killed `make images` leaves (CI's time limit, a crash): the build's process
    group killed while a step runs, its working container kept in the engine's storage."""
    signals = tmp_path / "signals"
    signals.mkdir()
    dockerfile = tmp_path / "interrupted.Dockerfile"
    dockerfile.write_text(f"FROM {BASE}\nRUN head -c 4000000 /dev/urandom > /blob && touch /signals/running"
                          " && while [ ! -e /signals/stop ]; do sleep 0.1; done\n")
    before = _working_containers()
    build = subprocess.Popen([engine_command(), "build", "-q", "-v", f"{signals}:/signals", "-f", str(dockerfile),
                              "-t", TAG, str(tmp_path)], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (signals / "running").exists():  # polls the step's own signal, no fixed wait
            assert build.poll() is None and time.monotonic() < deadline, "the build step never started"
            time.sleep(0.1)
        os.killpg(build.pid, signal.SIGKILL)
        build.wait()
        left = _working_containers() - before
        assert left, "the killed build kept no working container: nothing to reclaim"
        with file_lock(IMAGES_LOCK):  # as ensure_images holds it: no build of the project runs meanwhile
            lines = reclaim_build_space()
        assert not _working_containers()
        assert any(name in line for name in left for line in lines), lines
    finally:
        (signals / "stop").touch()  # the step's shell outlives podman; let it end


def test_a_build_that_cannot_fit_stops_before_it_starts_naming_the_space(base: None) -> None:
    root = storage_root()
    assert root.is_dir()
    with pytest.raises(EngineError, match=rf"needs about 1000000 GB free in {root}; [0-9.]+ GB are free"):
        check_free_space(Image(TAG, "serve.Dockerfile", list, space_gb=1e6))
    check_free_space(Image(TAG, "serve.Dockerfile", list, space_gb=0.001))
