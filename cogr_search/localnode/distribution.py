"""The stock OpenSearch distributions the local nodes run, with the cogr plugin installed.

Why: a search team runs the distribution, not jars on a classpath: its own ``bin/`` scripts
and ``jvm.options``, its modules, and (on 2.x) the Java security manager that a plugin must
live with. Testing anything else let a plugin that failed every call on a stock 2.19 node
pass every test. So a local node is the real distribution:

1. the ``integ-test-zip`` of the line's version, fetched once from Maven Central into the
   Maven cache (``mvn dependency:get``);
2. unpacked into a *template* folder; for 2.19, whose zip holds only transport-netty4, the
   modules the official tarball also ships are copied in from ``plugins/os-modules`` (their
   Maven jars laid out with descriptors and policies, as the OpenSearch build does);
3. the cogr plugin zip installed into it with ``bin/opensearch-plugin install --batch``,
   exactly as users are told to.

A template is keyed by the plugin zip's content hash, so a rebuilt plugin gets a fresh one
(the few most recently used are kept), and it is shared read-only by every node of the line: each node's ``config/``, ``data/``
and ``logs/`` live in its own runtime folder (``OPENSEARCH_PATH_CONF``, ``path.data``,
``path.logs``), so nothing is copied per node.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import stat
import subprocess
import zipfile
from pathlib import Path

from cogr_search.localnode.build import ensure_built, file_lock, plugins_dir, run_logged
from cogr_search.localnode.java import jdk_for
from cogr_search.localnode.engine_lines import EngineLine, LocalNodeError
from cogr_search.localnode.service_user import NodeUser, node_user
from cogr_search.settings import load_settings

# The Maven project that lays out the 2.19 modules (see its pom.xml).
MODULES_PROJECT = "os-modules"
TEMPLATES = "distributions"
KEEP_TEMPLATES = 4


def maven_zip(launcher: EngineLine) -> Path:
    """The line's distribution zip in the Maven cache, fetched from Maven Central if missing."""
    return maven_artifact(launcher.distribution)


def maven_artifact(coordinates: tuple[str, str, str]) -> Path:
    """A zip from Maven Central (``group, artifact, version``), fetched once into the Maven cache."""
    group, artifact, version = coordinates
    repo = load_settings().maven_repo or Path.home() / ".m2" / "repository"
    path = repo.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.zip")
    if path.is_file():
        return path
    coordinates = f"{group}:{artifact}:{version}:zip"
    log = plugins_dir() / "target" / f"fetch-{artifact}-{version}.log"
    rc = run_logged(["mvn", "-q", "-B", "dependency:get", f"-Dartifact={coordinates}", "-Dtransitive=false"], log, echo=False)
    if rc != 0 or not path.is_file():
        raise LocalNodeError(f"could not fetch {coordinates} from Maven Central (exit {rc}); see {log}")
    return path


def templates_root(user: NodeUser) -> Path:
    """Where templates live: somewhere the node's user can read (root's cache is not)."""
    base = user.home if user.home is not None else load_settings().home
    return base / TEMPLATES


def ensure_distribution(launcher: EngineLine, user: NodeUser) -> Path:
    """The unpacked distribution of ``launcher`` with the current cogr plugin installed.

    Built once per plugin zip (under a lock, into a temporary folder renamed into place, so
    a crash leaves no half template); only the few most recently used templates are kept.
    """
    plugin_zip = ensure_built(engine=launcher)
    extras = [maven_artifact(coordinates) for coordinates in launcher.extra_plugins]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in [plugin_zip, *extras])).hexdigest()[:12]
    root = templates_root(user)
    name = f"{launcher.key}-{launcher.version}"
    template = root / f"{name}-cogr-{digest}"
    if (template / "bin").is_dir():
        os.utime(template)  # in use: the clean-up below keeps the most recently used
        return template
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    with file_lock(root / f".{name}.lock"):
        if (template / "bin").is_dir():
            return template
        partial = root / f".{template.name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        unpack_stock(launcher, partial)
        for zip_path in [plugin_zip, *extras]:
            _install_plugin(partial, zip_path, launcher)
        partial.rename(template)
        _remove_old_templates(root, name)
    return template


def _remove_old_templates(root: Path, name: str) -> None:
    """Keep the line's ``KEEP_TEMPLATES`` most recently used templates, remove the rest.

    Why not only the newest: two checkouts (a developer's and CI's, or worktrees) build
    different plugin zips, and a node runs from its template's jars: removing a template in
    use breaks that node (a jar gone mid-start)."""
    found = sorted(root.glob(f"{name}-cogr-*"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in found[KEEP_TEMPLATES:]:
        shutil.rmtree(old, ignore_errors=True)


def unpack_stock(launcher: EngineLine, dest: Path) -> Path:
    """The line's distribution unpacked into ``dest``, with 2.19's missing modules assembled:
    what the official tarball holds, before any plugin. Local nodes and the container images
    (`cogr_search.containers`) start from the same files this way."""
    _unpack(maven_zip(launcher), dest)
    if launcher.assemble_modules:
        _copy_modules(dest, launcher.version)
    return dest


def _unpack(archive: Path, dest: Path) -> None:
    """Unzip ``archive``'s single top folder into ``dest``, keeping the files' modes
    (``zipfile`` drops them, and ``bin/`` must stay executable)."""
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            parts = Path(info.filename).parts[1:]
            if not parts:
                continue
            target = dest.joinpath(*parts)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            mode = (info.external_attr >> 16) & 0o777
            target.chmod(mode | stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH if mode else 0o644)
    for folder in [dest, *(p for p in dest.rglob("*") if p.is_dir())]:
        folder.chmod(0o755)


def _copy_modules(dist: Path, version: str) -> None:
    """Lay the modules built by ``plugins/os-modules`` for ``version`` into the distribution's ``modules/``."""
    project = plugins_dir() / MODULES_PROJECT
    built = project / "target" / f"modules-{version}"
    log = project / "target" / f"maven-build-{version}.log"
    if not built.is_dir() or _newer_than(project, built):
        cmd = ["mvn", "-q", "-B", "-f", str(project / "pom.xml"), f"-Dopensearch.version={version}", "package"]
        rc = run_logged(cmd, log, echo=False)
        if rc != 0:
            raise LocalNodeError(f"Maven build of {project} failed (exit {rc}); see {log}")
        os.utime(built)
    for module in sorted(built.iterdir()):
        shutil.copytree(module, dist / "modules" / module.name, dirs_exist_ok=True)
        for path in [module, *module.iterdir()]:
            (dist / "modules" / module.name / path.relative_to(module)).chmod(0o755 if path.is_dir() else 0o644)


def _newer_than(project: Path, built: Path) -> bool:
    stamp = built.stat().st_mtime
    inputs = [project / "pom.xml", plugins_dir() / "pom.xml", *(project / "src").rglob("*")]
    return any(p.stat().st_mtime > stamp for p in inputs if p.is_file())


def java_env(launcher: EngineLine, base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` with ``OPENSEARCH_JAVA_HOME`` on the line's JDK (the zip bundles none)."""
    env = dict(os.environ if base is None else base)
    jdk = jdk_for(launcher)
    if jdk is not None:
        env[launcher.java_home_variable] = str(jdk.home)
    else:
        java = shutil.which("java")
        if java is None:
            raise LocalNodeError(f"'java' is not on PATH: {launcher.description} needs Java {launcher.java_release}+")
        env[launcher.java_home_variable] = str(Path(java).resolve().parents[1])
    return env


def _install_plugin(dist: Path, plugin_zip: Path, launcher: EngineLine) -> None:
    """``bin/opensearch-plugin install --batch file:...``, as the plugin's docs tell users
    (also for the security plugin of a secured line: the plugin tool installs its config
    files into the template's ``config/``)."""
    tool = dist / "bin" / launcher.plugin_tool
    cmd = [str(tool), "install", "--batch", plugin_zip.resolve().as_uri()]
    done = subprocess.run(cmd, env=java_env(launcher), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["(no output)"]
        raise LocalNodeError(f"{' '.join(cmd)} failed (exit {done.returncode}): {last[0]}")
    for folder in ("plugins", "config"):
        for path in (dist / folder).rglob("*"):
            path.chmod(0o755 if path.is_dir() else (0o755 if path.suffix == ".sh" else 0o644))


def build_or_skip(engine: EngineLine, quiet: bool = False) -> bool:
    """Build ``engine``'s launcher where its Java exists; else print one line saying it was
    skipped and why (``make setup``: a host with Java 17 only still gets the 2.19 line).

    Returns whether the launcher is built. A failed build still raises.
    """
    try:
        jdk = jdk_for(engine)
    except LocalNodeError as err:
        print(f"skipped the local {engine.description} node: {err}", file=sys.stderr)
        return False
    jar = ensure_built(quiet=quiet, engine=engine)
    java = f"Java {jdk.release} at {jdk.home}" if jdk is not None else "the java on PATH"

    dist = ensure_distribution(engine, node_user())
    print(f"ready: the stock {engine.description} distribution ({java}) with the plugin {jar.name}: {dist}",
          file=sys.stderr)
    return True
