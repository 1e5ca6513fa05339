"""docker/ checked without a container engine: the compose file parses and runs the images
`make images` builds, the Dockerfiles install the plugin as users are told to and serve on
0.0.0.0, the setup job's flags exist, the content hash follows the inputs, and the setup
job's wait answers. The images themselves run in tests/test_compose.py (an engine needed)."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.containers import images
from cogr_search.containers.images import Image, content_hash, local_images, official_images, with_parents
from cogr_search.containers.wait import wait_for
from tests.conftest import REPO_ROOT, free_port

DOCKER = REPO_ROOT / "docker"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def _instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", path.read_text())
    lines = (line.strip() for line in text.splitlines())
    return [(w.upper(), rest.strip()) for w, _, rest in (line.partition(" ") for line in lines if line and not line.startswith("#"))]


def test_compose_runs_the_three_services_on_the_images_make_images_builds(compose: dict) -> None:
    assert set(compose["services"]) == {"opensearch", "serve", "setup"}
    built = {image.name for image in local_images()}
    for name, service in compose["services"].items():
        assert service["image"] in built, f"{name}: {service['image']} is not built by make images"
        assert "mem_limit" in service, f"{name}: containers live outside the caller's memory cgroup"
    assert compose["services"]["opensearch"]["environment"]["plugins.cogr.service_url"] == "http://serve:8300"


def test_setup_job_waits_then_creates_the_index_with_flags_the_cli_has(compose: dict) -> None:
    script = " ".join(compose["services"]["setup"]["command"])
    assert script.startswith("python -m cogr_search.containers.wait")
    create = script[script.index("cogr-search index create"):].split()
    assert create[create.index("--service-url") + 1] == "http://serve:8300"
    help_text = CliRunner().invoke(cli, ["index", "create", "--help"]).output
    for flag in (word for word in create if word.startswith("--")):
        assert flag in help_text, flag


def test_the_service_free_compose_file_runs_no_service_and_deploys_the_students() -> None:
    students = yaml.safe_load((DOCKER / "compose-students.yaml").read_text())
    assert set(students["services"]) == {"opensearch", "setup"}
    assert "plugins.cogr.service_url" not in students["services"]["opensearch"]["environment"]
    script = " ".join(students["services"]["setup"]["command"])
    create = script[script.index("cogr-search index create"):].split()
    assert "--service-url" not in create and create[create.index("--run") + 1] == '"$${COGR_RUN}"'
    help_text = CliRunner().invoke(cli, ["index", "create", "--help"]).output
    for flag in (word for word in create if word.startswith("--")):
        assert flag in help_text, flag
    built = {image.name for image in local_images()}
    assert all(service["image"] in built for service in students["services"].values())


def test_opensearch_image_installs_the_zip_on_a_base_given_as_argument() -> None:
    steps = _instructions(DOCKER / "opensearch.Dockerfile")
    assert steps[0] == ("ARG", "BASE=opensearchproject/opensearch:2.19.6") and ("FROM", "${BASE}") in steps
    run = " ".join(a for w, a in steps if w == "RUN")
    assert "bin/opensearch-plugin install --batch file:///tmp/cogr-search-plugin.zip" in run
    dist = _instructions(DOCKER / "engine-dist.Dockerfile")
    assert ("USER", "${ENGINE}") in dist  # the stock distributions refuse root


def test_service_image_serves_on_all_interfaces_of_its_port() -> None:
    steps = _instructions(DOCKER / "serve.Dockerfile")
    assert ("EXPOSE", "8300") in steps
    cmd = next(a for w, a in steps if w == "CMD")
    assert "cogr-search serve" in cmd and "--host 0.0.0.0" in cmd


def test_local_and_official_images_share_the_plugin_and_service_layers() -> None:
    local = {i.name: i for i in local_images()}
    for image in official_images():
        assert image.dockerfile == local[image.name].dockerfile
        assert not image.build_args["BASE"].startswith("localhost/")
    for image in local.values():
        assert image.parent is None or image.parent in local, image.name


def test_with_parents_keeps_build_order_and_the_whole_chain() -> None:
    chain = [i.name for i in with_parents(local_images(), [images.SERVE_IMAGE])]
    assert chain == ["localhost/cogr-base:bookworm", "localhost/cogr-python:bookworm", images.SERVE_IMAGE]


def test_content_hash_follows_inputs_args_and_parent(tmp_path: Path) -> None:
    source = tmp_path / "input.txt"
    source.write_text("one")
    image = Image("localhost/t:1", "serve.Dockerfile", lambda: [tmp_path], build_args={"BASE": "a"})
    first = content_hash(image, "p1")
    assert content_hash(image, "p1") == first
    assert content_hash(image, "p2") != first
    assert content_hash(Image("localhost/t:1", "serve.Dockerfile", lambda: [tmp_path], build_args={"BASE": "b"}), "p1") != first
    source.write_text("two")
    assert content_hash(image, "p1") != first


@pytest.fixture()
def answering_url() -> Iterator[str]:
    class Ok(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/health"
    server.shutdown()


def test_wait_returns_only_the_urls_that_never_answered(answering_url: str) -> None:
    silent = f"http://127.0.0.1:{free_port()}/"
    assert wait_for([answering_url, silent], timeout_s=0) == [silent]
    assert wait_for([answering_url], timeout_s=5) == []
