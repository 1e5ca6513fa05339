"""`make images`: the container images, each rebuilt only when what goes into it changed.

Why: the images must run the same stock distributions and the same plugin zip as the local
nodes (one set of bits to trust), and rebuilding a 160 MB distribution layer or the service's
ML stack on every run would cost minutes. Each image carries the label
``cogr-search.content-hash``: a hash of its Dockerfile, build arguments, input files and its
parent's hash; an image whose label matches is kept.

Two bases (``--bases``):

- ``local`` (default): no registry is needed. ``cogr-base:<suite>`` comes from
  ``debootstrap --variant=minbase`` (docker/base/build.sh); the OpenSearch layout of the
  official image is rebuilt from the Maven Central distribution (engine-dist.Dockerfile);
  Python from Debian (python-base.Dockerfile).
- ``official``: where Docker Hub answers: ``opensearchproject/opensearch:<version>`` and
  ``python:3.11-slim`` are the bases, and only the plugin and service layers are built.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cogr_search.containers.engine import BASE_SUITES, EngineError, base_image, engine, engine_command
from cogr_search.errors import CogrError
from cogr_search.localnode import ELASTICSEARCH, OPENSEARCH, OPENSEARCH_3, EngineLine, ensure_built
from cogr_search.localnode.build import file_lock
from cogr_search.localnode.distribution import maven_zip, unpack_stock

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
HASH_LABEL = "cogr-search.content-hash"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
"""Mounted read-only into builds that download: a host behind a TLS-inspecting proxy trusts
its CA there, and the image must not bake that CA in."""
SERVE_FILES = ("pyproject.toml", "constraints.txt", "README.md")
IMAGES_LOCK = Path("/var/tmp/cogr-search-images.lock")
BUILD_CONTAINER_SUFFIX = "-working-container"
"""How buildah names the container a build writes in (``<image>-working-container``)."""


@dataclass(frozen=True)
class Image:
    """One image: how its build context is staged and what its hash covers.

    ``inputs`` lists the files (or folders) whose bytes the hash covers; ``stage`` copies
    what the Dockerfile needs into the context folder. ``dockerfile`` None means a base made
    by docker/base/build.sh from ``suite``.
    """

    name: str
    dockerfile: str | None
    inputs: Callable[[], Iterable[Path]]
    stage: Callable[[Path], None] = lambda _ctx: None
    parent: str | None = None
    build_args: dict[str, str] = field(default_factory=dict)
    suite: str = ""
    volumes: tuple[str, ...] = ()
    space_gb: float = 2.0
    """Free space the build needs in the engine's storage: the build writes its layers once in
    the working container and once more when it commits them (the service's torch layer is
    5.5 GB)."""


def _files(paths: Iterable[Path]) -> Iterable[Path]:
    for path in paths:
        if path.is_dir():  # linked folders followed, as the build context's copy follows them (cogr_search/mappings)
            found = (Path(root) / name for root, _dirs, names in os.walk(path, followlinks=True) for name in names)
            yield from sorted(p for p in found if "__pycache__" not in p.parts)
        else:
            yield path


def content_hash(image: Image, parent_hash: str) -> str:
    """sha256 over the Dockerfile, build arguments, input files (path and bytes) and parent."""
    digest = hashlib.sha256()
    parts = [image.name, parent_hash, repr(sorted(image.build_args.items())), image.suite]
    if image.dockerfile:
        parts.append((DOCKER / image.dockerfile).read_text())
    digest.update("\0".join(parts).encode())
    for path in _files(image.inputs()):
        digest.update(str(path.relative_to(REPO) if path.is_relative_to(REPO) else path.name).encode())
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def built_hash(name: str) -> str | None:
    """The content hash an existing image was built from, or None when there is no such image."""
    try:
        out = engine("image", "inspect", "--format", f'{{{{index .Config.Labels "{HASH_LABEL}"}}}}', name)
    except EngineError:
        return None
    return out.strip() or None


def _build(image: Image, digest: str) -> None:
    label = f"{HASH_LABEL}={digest}"
    if image.dockerfile is None:
        done = subprocess.run([str(DOCKER / "base" / "build.sh"), image.suite, image.name, label],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise EngineError(f"base image {image.name}: {(done.stderr.strip() or 'failed').splitlines()[-1]}")
        return
    with tempfile.TemporaryDirectory(prefix="cogr-image-", dir="/var/tmp") as tmp:
        context = Path(tmp)
        image.stage(context)
        # --force-rm: a failed build (a full disk, an interrupt) leaves no working container
        # holding its half-written layers.
        args = ["build", "-q", "--force-rm", "-f", str(DOCKER / image.dockerfile), "-t", image.name, "--label", label]
        for key, value in image.build_args.items():
            args += ["--build-arg", f"{key}={value}"]
        for volume in image.volumes:
            args += ["-v", volume]
        engine(*args, str(context))


def ensure_images(images: list[Image], log: Callable[[str], None] = print) -> dict[str, str]:
    """Build what changed, in order (a parent before its children); every image's hash by name.

    One builder at a time (a file lock): the clean-up of an interrupted build's leftovers
    must not take a build that is running."""
    hashes: dict[str, str] = {}
    built = False
    with file_lock(IMAGES_LOCK):
        for image in images:
            digest = content_hash(image, hashes.get(image.parent or "", image.parent or ""))
            hashes[image.name] = digest
            if built_hash(image.name) == digest:
                log(f"{image.name}: up to date ({digest})")
                continue
            log(f"{image.name}: building ({digest})")
            for line in reclaim_build_space():
                log(line)
            check_free_space(image)
            replaced = image_id(image.name)
            _build(image, digest)
            built = True
            if replaced and replaced != image_id(image.name):
                _remove_quietly(replaced)
        if built:  # the layers of the images just replaced, no longer anyone's cache
            for line in reclaim_build_space():
                log(line)
    return hashes


def reclaim_build_space() -> list[str]:
    """Remove what interrupted builds of the project's images left: buildah's working
    containers (each holds the layers it was writing, 5.5 GB for the service's) and the
    project's images nothing tags or builds on.

    Why: podman keeps both after a build is killed, and a few of them fill a disk that had
    room for every image (CI's `make test` failed so). Only the project's are touched: its
    images carry the content-hash label, and a build's working container is named after the
    image it started from. Docker keeps no working containers; its dangling images are pruned."""
    removed: list[str] = []
    if Path(engine_command()).name == "podman":
        listed = engine("ps", "--all", "--external", "--format", "{{.ID}} {{.Names}}")
        for container, _, name in (line.partition(" ") for line in listed.splitlines()):
            if name.endswith(BUILD_CONTAINER_SUFFIX) and _is_ours(name.removesuffix(BUILD_CONTAINER_SUFFIX)):
                engine("rm", "--force", container)
                removed.append(f"removed the working container {name} of an interrupted build")
    while pruned := engine("image", "prune", "--force", "--filter", f"label={HASH_LABEL}").split():
        removed.append(f"removed {len(pruned)} of the project's dangling images")
    return removed


def _is_ours(started_from: str) -> bool:
    """Whether a working container started from one of the project's images (its name, as
    buildah shortens it, or an intermediate image's id)."""
    return started_from.startswith("cogr-") or bool(built_hash(started_from))


def check_free_space(image: Image) -> None:
    """Stop before a build that cannot fit, with the numbers, rather than after minutes of it
    with "no space left on device" from inside the engine."""
    root = storage_root()
    free_gb = shutil.disk_usage(root).free / 1e9
    if free_gb < image.space_gb:
        raise EngineError(f"building {image.name} needs about {image.space_gb:.0f} GB free in {root}; "
                          f"{free_gb:.1f} GB are free")


def storage_root() -> Path:
    """Where the engine keeps its layers (podman: ``Store.GraphRoot``; Docker: ``DockerRootDir``)."""
    field_name = ".Store.GraphRoot" if Path(engine_command()).name == "podman" else ".DockerRootDir"
    root = Path(engine("info", "--format", f"{{{{{field_name}}}}}").strip())
    while not root.exists():  # a fresh engine has not made its folder yet
        root = root.parent
    return root


def image_id(name: str) -> str | None:
    try:
        return engine("image", "inspect", "--format", "{{.Id}}", name).strip() or None
    except EngineError:
        return None


def _remove_quietly(image: str) -> None:
    """Remove an image a rebuild replaced (the service's is 6 GB). The build's intermediate
    images stay: they are the layer cache that makes a code change cost seconds."""
    try:
        engine("rmi", image)
    except EngineError:
        pass  # still a parent of a cached layer, or used by a container


# --------------------------------------------------------------------------- the images

def _copy(sources: Iterable[Path], context: Path) -> None:
    for source in sources:
        target = context / source.name
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target)


def _plugin_zip(launcher: EngineLine) -> Path:
    return ensure_built(engine=launcher)


def _modules_sources() -> list[Path]:
    project = REPO / "plugins" / "os-modules"
    return [project / "pom.xml", project / "src", REPO / "plugins" / "pom.xml"]


def _dist_image(launcher: EngineLine, base: str, java_package: str) -> Image:
    """The stock distribution of ``launcher`` in the official image's layout (engine-dist.Dockerfile)."""
    engine_name = launcher.engine.name

    # Elasticsearch: the project's root-endpoint plugin (plugins/es-node), as on the local node;
    # the cogr plugin of OpenSearch comes in the next layer, as on the official image.
    plugins = (lambda: [ensure_built(engine=launcher)]) if engine_name == "elasticsearch" else list

    def stage(context: Path) -> None:
        unpack_stock(launcher, context / "dist")
        shutil.copy2(DOCKER / "engine-entrypoint.sh", context / "entrypoint.sh")
        (context / "plugins").mkdir()
        for plugin in plugins():
            shutil.copy2(plugin, context / "plugins" / plugin.name)

    def inputs() -> list[Path]:
        extra = _modules_sources() if launcher.assemble_modules else []
        return [maven_zip(launcher), DOCKER / "engine-entrypoint.sh", *extra, *plugins()]

    return Image(f"localhost/cogr-{engine_name}-dist:{launcher.version}", "engine-dist.Dockerfile", inputs, stage,
                 parent=base, build_args={"BASE": base, "JAVA_PACKAGE": java_package, "ENGINE": engine_name})


def _plugin_image(launcher: EngineLine, base: str) -> Image:
    def stage(context: Path) -> None:
        shutil.copy2(_plugin_zip(launcher), context / "cogr-search-plugin.zip")

    return Image(opensearch_image(launcher), "opensearch.Dockerfile", lambda: [_plugin_zip(launcher)], stage,
                 parent=base, build_args={"BASE": base})


def _serve_image(base: str) -> Image:
    sources = [REPO / name for name in SERVE_FILES] + [REPO / "cogr_search"]
    return Image(SERVE_IMAGE, "serve.Dockerfile", lambda: sources, lambda ctx: _copy(sources, ctx), parent=base,
                 build_args={"BASE": base}, volumes=_download_volumes(), space_gb=12.0)


def _download_volumes() -> tuple[str, ...]:
    return (f"{HOST_CA_BUNDLE}:{HOST_CA_BUNDLE}:ro",) if HOST_CA_BUNDLE.is_file() else ()


SERVE_IMAGE = "localhost/cogr-serve:latest"
LINES: dict[str, tuple[EngineLine, str, str]] = {
    OPENSEARCH.version: (OPENSEARCH, "bookworm", "openjdk-17-jre-headless"),
    # 3.x needs Java 21: Debian has it from trixie on.
    OPENSEARCH_3.version: (OPENSEARCH_3, "trixie", "openjdk-21-jre-headless"),
}


ELASTICSEARCH_IMAGE = f"localhost/cogr-elasticsearch-dist:{ELASTICSEARCH.version}"
"""Elasticsearch has no cogr plugin: the distribution image is the one the tests run."""


def opensearch_image(launcher: EngineLine) -> str:
    """The tag of the OpenSearch image with the plugin for ``launcher``'s version."""
    return f"localhost/cogr-opensearch:{launcher.version}"


def local_images() -> list[Image]:
    """Every image, bases included, in build order; nothing pulled from a registry."""
    bases = {suite: Image(base_image(suite), None, lambda: [DOCKER / "base" / "build.sh"], suite=suite)
             for suite in BASE_SUITES}
    python = Image("localhost/cogr-python:bookworm", "python-base.Dockerfile", lambda: [], parent=bases["bookworm"].name,
                   build_args={"BASE": bases["bookworm"].name})
    images = [*bases.values(), python]
    for launcher, suite, java in LINES.values():
        dist = _dist_image(launcher, bases[suite].name, java)
        images += [dist, _plugin_image(launcher, dist.name)]
    images.append(_dist_image(ELASTICSEARCH, bases["bookworm"].name, "openjdk-17-jre-headless"))
    return [*images, _serve_image(python.name)]


def official_images() -> list[Image]:
    """The plugin and service layers on the official images (a registry must answer)."""
    images = [_plugin_image(launcher, f"opensearchproject/opensearch:{launcher.version}") for launcher, _, _ in LINES.values()]
    return [*images, _serve_image("python:3.11-slim")]


def with_parents(images: list[Image], names: list[str]) -> list[Image]:
    """``images`` cut to ``names`` and the images they are built from, in build order."""
    by_name = {i.name: i for i in images}
    wanted: set[str] = set()
    for name in names:
        while name in by_name and name not in wanted:
            wanted.add(name)
            name = by_name[name].parent or ""
    return [i for i in images if i.name in wanted]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make images", description=__doc__.splitlines()[0])
    parser.add_argument("--bases", choices=("local", "official"), default="local")
    parser.add_argument("--only", action="append", default=[], help="build only images whose name contains this")
    options = parser.parse_args(argv)
    images = local_images() if options.bases == "local" else official_images()
    if options.only:
        images = with_parents(images, [i.name for i in images if any(word in i.name for word in options.only)])
    try:
        engine_command()
        ensure_images(images)
    except CogrError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
