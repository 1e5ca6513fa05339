"""docker/ checked statically (no Docker engine on these machines): the compose file
parses, every build context, Dockerfile and COPY source it leads to exists, the images
are pinned to OpenSearch 2.19, and the names that tie the files together agree (the
plugin zip the Maven build makes, the service port, the pipeline flags)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT

DOCKER = REPO_ROOT / "docker"
COMPOSE = DOCKER / "compose.yaml"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", path.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _copy_sources(args: str) -> list[str]:
    parts = [p for p in args.split() if not p.startswith("--")]
    return parts[:-1]


def test_compose_parses_and_names_the_three_services(compose: dict) -> None:
    assert set(compose["services"]) == {"opensearch", "serve", "setup"}
    assert compose["services"]["setup"]["depends_on"]["serve"]["condition"] == "service_healthy"


def test_every_build_context_dockerfile_and_copy_source_exists(compose: dict) -> None:
    checked = 0
    for name, service in compose["services"].items():
        build = service["build"]
        context = (DOCKER / build["context"]).resolve()
        assert context.is_dir(), f"{name}: build context {context} is missing"
        dockerfile = context / build["dockerfile"]
        assert dockerfile.is_file(), f"{name}: {dockerfile} is missing"
        ignore = dockerfile.with_name(dockerfile.name + ".dockerignore")
        assert ignore.is_file(), f"{name}: {ignore} is missing (the context is the whole repository)"
        for word, args in _dockerfile_instructions(dockerfile):
            if word == "COPY" and "--from=" not in args:
                for source in _copy_sources(args):
                    assert (context / source).exists(), f"{dockerfile.name}: COPY source {source} is missing"
                    checked += 1
    assert checked >= 4


def test_bind_mounts_are_the_runs_folder_only(compose: dict) -> None:
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith((".", "/")):
                assert (DOCKER / source).resolve() == REPO_ROOT / "runs", f"{name}: unexpected bind mount {volume}"
                assert "runs/" in (REPO_ROOT / ".gitignore").read_text()  # written by training, never committed
            else:
                assert source in compose["volumes"], f"{name}: named volume {source} is not declared"


def test_opensearch_image_is_219_and_installs_the_zip_the_maven_build_makes(compose: dict) -> None:
    dockerfile = DOCKER / "opensearch.Dockerfile"
    steps = _dockerfile_instructions(dockerfile)
    version = next(a for w, a in steps if w == "ARG" and a.startswith("OPENSEARCH_VERSION="))
    assert re.fullmatch(r"OPENSEARCH_VERSION=2\.19\.\d+", version)
    assert compose["services"]["opensearch"]["build"]["args"]["OPENSEARCH_VERSION"] == version.split("=")[1]
    assert ("FROM", "opensearchproject/opensearch:${OPENSEARCH_VERSION}") in steps
    build = " ".join(a for w, a in steps if w == "RUN")
    pom = (REPO_ROOT / "plugins" / "cogr-plugin" / "pom.xml").read_text()
    assert "<finalName>cogr-search-plugin-${project.version}-opensearch-${opensearch.version}</finalName>" in pom
    assert "plugins/cogr-plugin/target/cogr-search-plugin-*-opensearch-${OPENSEARCH_VERSION}.zip" in build
    assert "-Dopensearch.version=${OPENSEARCH_VERSION}" in build
    assert "opensearch-plugin install --batch" in build


def test_service_image_and_setup_agree_on_port_and_pipeline_flags(compose: dict) -> None:
    steps = _dockerfile_instructions(DOCKER / "serve.Dockerfile")
    assert ("EXPOSE", "8300") in steps
    cmd = next(a for w, a in steps if w == "CMD")
    assert "cogr-search serve" in cmd and "--host 0.0.0.0" in cmd
    setup = compose["services"]["setup"]["command"]
    assert setup[:3] == ["cogr-search", "index", "create"]
    assert "--pipelines" in setup and setup[setup.index("--service-url") + 1] == "http://serve:8300"
    assert compose["services"]["opensearch"]["environment"]["plugins.cogr.service_url"] == "http://serve:8300"
    # The CLI accepts every flag the setup passes.
    from click.testing import CliRunner

    from cogr_search.cli.main import cli

    help_text = CliRunner().invoke(cli, ["index", "create", "--help"]).output
    for flag in (a for a in setup if a.startswith("--")):
        assert flag in help_text, flag
