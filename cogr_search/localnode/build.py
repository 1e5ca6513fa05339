"""Building a line's plugin zip with Maven, only when its sources changed.

Why here and not in the Makefile: a wheel install, a test fixture and the CLI all need
the zip (installed into the line's stock distribution), and concurrent callers must build it once (a file lock), so the check-and-build
is library code that every caller shares.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock

from cogr_search.localnode.java import jdk_for
from cogr_search.localnode.engine_lines import OPENSEARCH, EngineLine, LocalNodeError
from cogr_search.settings import load_settings

# A first build downloads ~80 jars from Maven Central; generous but bounded.
BUILD_TIMEOUT_S = 1800.0
BUILDS = "plugin-builds"
"""Folder under the cache home: built zips by the digest of their inputs (`_cached_build`)."""
KEEP_BUILDS = 12


def plugins_dir() -> Path:
    """The Maven project of the launcher: ``$COGR_PLUGINS_DIR``, else ``<repo>/plugins``.

    The override exists for installs where the package does not sit inside a checkout.
    """
    override = load_settings().plugins_dir
    if override:
        return Path(override).expanduser().resolve()
    return Path(__file__).resolve().parents[2] / "plugins"


def plugin_zip(engine: EngineLine = OPENSEARCH) -> Path:
    """Where the Maven build puts the line's plugin zip; each line has its own build folder
    (``target/``, ``target-os3/``, ``target-es9/``)."""
    return plugins_dir() / engine.module / engine.build_dir / engine.plugin_zip_name


def _build_inputs(root: Path, engine: EngineLine) -> Iterator[Path]:
    """Every file whose change requires a rebuild: the parent pom, the modules' poms and sources."""
    yield from root.glob("pom.xml")
    for module in engine.modules:
        yield from root.glob(f"{module}/pom.xml")
        src = root / module / "src"
        if src.is_dir():
            yield from (p for p in src.rglob("*") if p.is_file())


def _needs_build(engine: EngineLine) -> bool:
    jar = plugin_zip(engine)
    if not jar.is_file():
        return True
    built = jar.stat().st_mtime
    return any(p.stat().st_mtime > built for p in _build_inputs(plugins_dir(), engine))


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock (filelock), so that concurrent callers build or start only once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path)):
        yield


def ensure_built(quiet: bool = True, engine: EngineLine = OPENSEARCH) -> Path:
    """Build ``engine``'s plugin zip with Maven unless it is up to date; return its path.

    Up to date means the zip exists and no pom.xml nor source file of the parent or of
    ``engine.modules`` is newer than it.
    Only those modules are built (``-pl <launcher> -am``, plus the line's ``maven_args``),
    into the line's own build folder, with the line's Java (``JAVA_HOME`` set for 3.x only).
    Maven's full output goes to ``plugins/<build folder>/maven-build.log`` (and to stderr
    when ``quiet`` is False); a failure raises ``LocalNodeError`` naming that log. The
    distribution it is installed into is `distribution.py`'s.
    """
    root = plugins_dir()
    jar = plugin_zip(engine)
    if not (root / "pom.xml").is_file():
        raise LocalNodeError(f"no Maven project at {root} (set COGR_PLUGINS_DIR to the plugins/ folder)")
    if not _needs_build(engine):
        return jar
    jdk = jdk_for(engine)
    log_path = root / engine.build_dir / "maven-build.log"
    # One lock for every line: the lines share the modules' folders and ~/.m2.
    with file_lock(root / "target" / ".build.lock"):
        if not _needs_build(engine):  # another process built it while we waited
            return jar
        cached = _cached_build(root, engine, jdk.home if jdk is not None else os.path.realpath(shutil.which("java") or "java"))
        if cached.is_file():  # a clone or worktree of the same sources built it already
            jar.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(cached, jar)
            return jar
        for tool in ("mvn",) if jdk is not None else ("java", "mvn"):
            if shutil.which(tool) is None:
                raise LocalNodeError(
                    f"'{tool}' is not on PATH: the local {engine.label} node needs Java {engine.java_release}+ and "
                    "Maven 3.8+ (or set COGR_OPENSEARCH_URL to use an existing cluster)"
                )
        cmd = ["mvn", "-B", "-Dstyle.color=never", "-f", str(root / "pom.xml"), "-pl", engine.module, "-am"]
        cmd += [*engine.maven_args, "-DskipTests", "package"]
        if quiet:
            cmd.insert(1, "-q")
        rc = run_logged(cmd, log_path, echo=not quiet, env=jdk.env() if jdk is not None else None)
        if rc != 0:
            raise LocalNodeError(f"Maven build of {root} failed (exit {rc}); see {log_path}")
        if not jar.is_file():
            raise LocalNodeError(f"Maven build succeeded but {jar} is missing; see {log_path}")
        # Maven may leave an unchanged jar with its old mtime; mark it as built now so the
        # staleness check does not rebuild on every call.
        os.utime(jar)
        _keep(jar, cached)
    return jar


def _cached_build(root: Path, engine: EngineLine, java: object) -> Path:
    """Where a zip built from exactly these inputs is kept: the digest covers the line, its
    Maven arguments, the JDK and every input file (path and bytes). Why: every fresh clone
    (CI's check, a worktree) would otherwise spend a Maven run per line on the same sources,
    and the zips are reproducible (`project.build.outputTimestamp`), so a cached one is
    the bytes Maven would write."""
    digest = hashlib.sha256(f"{engine.key} {engine.version} {engine.maven_args} {java}".encode())
    for path in sorted(_build_inputs(root, engine)):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return load_settings().home / BUILDS / f"{engine.key}-{engine.version}-{digest.hexdigest()[:16]}-{engine.plugin_zip_name}"


def _keep(jar: Path, cached: Path) -> None:
    """Copy a fresh build into the cache (whole or not at all), keeping the newest few.

    The cache only saves later clones a Maven run: where it cannot be written (a read-only
    or full home), the build just made is still good, so say so in one line and go on."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_name(f".{cached.name}.partial")
        shutil.copyfile(jar, partial)
        partial.rename(cached)
        builds = sorted(cached.parent.glob("*.zip"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in builds[KEEP_BUILDS:]:
            old.unlink(missing_ok=True)
    except OSError as err:
        print(f"cogr-search: built {jar.name}, but could not keep it in {cached.parent} ({err.strerror or err}); "
              "the next clone builds it again", file=sys.stderr)


def run_logged(cmd: list[str], log_path: Path, echo: bool, env: dict[str, str] | None = None) -> int:
    """Run ``cmd`` (in ``env``, default this process's), writing its output to ``log_path`` (and stderr if ``echo``)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    with open(log_path, "wb") as log:
        log.write(("$ " + " ".join(cmd) + "\n").encode())
        log.flush()
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                log.write(line)
                if echo:
                    sys.stderr.buffer.write(line)
                    sys.stderr.flush()
                if time.monotonic() > deadline:
                    proc.kill()
                    break
            return proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
