"""Which Java runs (and builds) an engine line's local node.

Why: the OpenSearch 2.19 line runs on Java 17, the machines' default `java`; the 3.x line
needs Java 21+, which is usually installed beside it (here: a Temurin 25 JDK under
/usr/lib/jvm) but not the default. So a 3.x build and node get their own `JAVA_HOME`,
found here, and nothing else changes its Java.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from cogr_search.localnode.engine_lines import EngineLine, LocalNodeError
from cogr_search.settings import load_settings

JVM_ROOT = Path("/usr/lib/jvm")
_VERSION_RE = re.compile(r'^JAVA_VERSION="?([0-9]+)(?:\.([0-9]+))?', re.MULTILINE)


@dataclass(frozen=True)
class Jdk:
    """A Java installation: its folder (a `JAVA_HOME`) and feature release (17, 21, 25, ...)."""

    home: Path
    release: int

    @property
    def java(self) -> str:
        return str(self.home / "bin" / "java")

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with JAVA_HOME and PATH on this JDK."""
        env = dict(os.environ if base is None else base)
        env["JAVA_HOME"] = str(self.home)
        env["PATH"] = f"{self.home / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return env


def jdk_release(home: Path) -> int | None:
    """The feature release of the JDK at ``home`` from its ``release`` file (None: not a JDK)."""
    try:
        text = (home / "release").read_text(errors="replace")
    except OSError:
        return None
    match = _VERSION_RE.search(text)
    if match is None or not (home / "bin" / "java").is_file():
        return None
    major = int(match.group(1))
    # Java 8 and older write 1.8.0_x.
    return int(match.group(2) or 0) if major == 1 else major


def _path_java_home() -> Path | None:
    """The JDK folder of the `java` on PATH (bin/java resolved through its links)."""
    java = shutil.which("java")
    return Path(java).resolve().parents[1] if java else None


def find_jdk(minimum: int) -> Jdk | None:
    """A JDK of at least ``minimum``: COGR_JAVA21_HOME, then JAVA_HOME, then the `java` on PATH,
    then the newest under /usr/lib/jvm. COGR_JAVA21_HOME set but unusable is an error, not a
    silent fallback."""
    configured = load_settings().java21_home
    if configured is not None:
        home = Path(configured).expanduser()
        release = jdk_release(home)
        if release is None or release < minimum:
            found = f"Java {release}" if release else "no JDK (no release file or bin/java)"
            raise LocalNodeError(f"COGR_JAVA21_HOME={home}: {found} there; it must name a JDK {minimum}+ folder")
        return Jdk(home, release)
    candidates = [Path(os.environ["JAVA_HOME"])] if os.environ.get("JAVA_HOME") else []
    path_home = _path_java_home()
    if path_home is not None:
        candidates.append(path_home)
    for home in candidates:
        release = jdk_release(home)
        if release is not None and release >= minimum:
            return Jdk(home, release)
    found = []
    if JVM_ROOT.is_dir():
        for home in JVM_ROOT.iterdir():
            release = jdk_release(home)
            if release is not None and release >= minimum and not home.is_symlink():
                found.append(Jdk(home, release))
    return max(found, key=lambda jdk: (jdk.release, str(jdk.home))) if found else None


def jdk_for(launcher: EngineLine) -> Jdk | None:
    """The JDK that builds and runs ``launcher``; None: the `java` on PATH (Java 17 lines)."""
    if launcher.java_release <= 17:
        return None
    jdk = find_jdk(launcher.java_release)
    if jdk is None:
        raise LocalNodeError(
            f"the local {launcher.description} node needs Java {launcher.java_release}+ and none was found "
            f"(JAVA_HOME, java on PATH, {JVM_ROOT}); set COGR_JAVA21_HOME to a JDK {launcher.java_release}+ folder"
        )
    return jdk
