"""The Elasticsearch image's root endpoint (``GET /``) as a plugin zip, built from the
project's own `RootEndpointPlugin` source against the distribution's jars.

Why: since 8.12 ``GET /`` lives in the ``rest-root`` module, which is neither in the
integ-test-zip nor on Maven Central; without it the node answers 405, and cogr-search and
the official clients detect the engine there. The local launcher loads the same class from
its classpath; a stock node must get it as an installed plugin. Not for the official image:
it has rest-root, and a second ``GET /`` handler would stop the node.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from cogr_search.containers.engine import EngineError
from cogr_search.localnode import ELASTICSEARCH

SOURCE = (Path(__file__).resolve().parents[2] / "plugins" / "es-node" / "src" / "main" / "java" / "org" / "cogr"
          / "elasticsearch" / "node" / "RootEndpointPlugin.java")
CLASS = "org.cogr.elasticsearch.node.RootEndpointPlugin"
NAME = "cogr-root-endpoint"


def descriptor(version: str) -> str:
    """plugin-descriptor.properties of a classic (non-stable-API) plugin for ``version``."""
    return "\n".join([
        "description=GET / (the rest-root module's answer) for a node without rest-root",
        f"version={version}", f"name={NAME}", f"classname={CLASS}",
        f"java.version={ELASTICSEARCH.java_release}", f"elasticsearch.version={version}", "",
    ])


def build_root_plugin(dist: Path, dest: Path) -> Path:
    """Compile the plugin against ``dist``'s ``lib/`` with javac and zip it to ``dest``."""
    javac = shutil.which("javac")
    if javac is None:
        raise EngineError("'javac' is not on PATH: the Elasticsearch image's root endpoint plugin is compiled here")
    version = ELASTICSEARCH.version
    with tempfile.TemporaryDirectory(prefix="cogr-root-endpoint-") as tmp:
        classes = Path(tmp) / "classes"
        cmd = [javac, "--release", str(ELASTICSEARCH.java_release), "-nowarn", "-d", str(classes),
               "-cp", str(dist / "lib" / "*"), str(SOURCE)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise EngineError(f"javac {SOURCE.name} failed: {(done.stderr.strip() or '(no output)').splitlines()[0]}")
        jar = Path(tmp) / f"{NAME}-{version}.jar"
        with zipfile.ZipFile(jar, "w") as out:
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        with zipfile.ZipFile(dest, "w") as out:
            out.writestr("plugin-descriptor.properties", descriptor(version))
            out.write(jar, jar.name)
    return dest
