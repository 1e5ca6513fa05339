"""What the suite needs from the machine beyond the project: a container engine that builds the
images, and the shared data sets beside the clone. Where either is missing a newcomer's
`make test` leaves out (deselects or skips) what needs it, in one line that says how to get it;
where `COGR_TEST_REQUIRE` names it (.ci/run sets `data,containers`), its absence is a failure,
so CI can never pass by leaving tests out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cogr_search.containers.engine import why_images_cannot_be_built
from cogr_search.settings import load_settings

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = "data"
CONTAINERS = "containers"
ENABLE_CONTAINERS = ("to run them: docker/engine/setup.sh as root on Debian (podman, runc, debootstrap), "
                     "which `make test` runs itself where it can")


def required(what: str) -> bool:
    """Whether ``COGR_TEST_REQUIRE`` makes a missing ``what`` a failure rather than a skip."""
    return what in {part.strip() for part in (load_settings().test_require or "").split(",")}


def shared_data_root() -> Path:
    """``shared/data`` beside the clone (CI's layout), or one level further up (a git worktree
    inside the clone's folder); the first candidate where neither exists."""
    candidates = [parent / "shared" / "data" for parent in REPO_ROOT.parents[:2]]
    return next((path for path in candidates if path.is_dir()), candidates[0])


def shared_data_set(name: str) -> Path:
    """The folder of the shared data set ``name`` (``homedepot``, ``crowdflower``): skipped with
    the reason where it is absent, failed where ``COGR_TEST_REQUIRE`` names ``data``."""
    path = shared_data_root() / name
    if (path / "corpus.jsonl").is_file():
        return path
    message = f"{path}: not found; this test reads the shared data sets beside the clone (../shared/data)"
    if required(DATA):
        pytest.fail(f"{message}, and COGR_TEST_REQUIRE names data")
    pytest.skip(message)


def require_containers_up_front() -> None:
    """The check `container_tests_out` makes, for a pytest-xdist controller, which collects
    nothing: where ``COGR_TEST_REQUIRE`` names ``containers``, the machine must be able to
    build the images, whatever was selected (a worker's usage error would surface as an
    internal-error traceback)."""
    if required(CONTAINERS) and (reason := why_images_cannot_be_built()) is not None:
        raise pytest.UsageError(f"COGR_TEST_REQUIRE names containers, but {reason}")


def container_tests_out(items: list[pytest.Item]) -> tuple[list[pytest.Item], str | None]:
    """The items marked ``containers`` that this machine cannot run, and the one line that says
    why and how to enable them; ``([], None)`` where they can run (or none is selected).
    Raises a usage error where ``COGR_TEST_REQUIRE`` names ``containers`` and they cannot."""
    marked = [item for item in items if item.get_closest_marker(CONTAINERS) is not None]
    if not marked:
        return [], None
    reason = why_images_cannot_be_built()
    if reason is None:
        return [], None
    if required(CONTAINERS):
        raise pytest.UsageError(f"COGR_TEST_REQUIRE names containers, but {reason}")
    return marked, f"{len(marked)} container test(s) deselected: {reason}; {ENABLE_CONTAINERS}"
