"""One stock-distribution node: its runtime folder, its configuration and its command line.

The distribution itself is a shared read-only template (`distribution.py`); what is the
node's own lives in its runtime folder:

    <runtime>/config/   opensearch.yml (ports, paths, single node), jvm.options and
                        log4j2.properties from the distribution, jvm.options.d/cogr.options
                        (the heap from --heap; the node exits on OutOfMemoryError)
    <runtime>/data/     indices (kept across restarts)
    <runtime>/logs/     the engine's logs, and node.out (the script's stdout/stderr)

The runtime folder is the node's home itself, unless the node runs as the ``cogr-search``
user (the caller is root): then it is ``/var/lib/cogr-search/nodes/<hash of the home>``,
owned by that user, ``<home>/node`` links to it and ``<runtime>/home`` names the home.

Why outside the home for root: root's folders (``/root``, pytest's ``/tmp/pytest-of-root``)
are closed to other users, so the node's user could not reach a runtime folder inside them.
The price: deleting the home leaves the runtime folder behind. A home without its link
whose runtime folder exists is such a leftover (`stale_runtime`): `process.start` refuses it
in one line, and `cleanup.purge` removes it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cogr_search.localnode import es_security, keystore, security
from cogr_search.localnode.distribution import ensure_distribution, java_env
from cogr_search.localnode.engine_lines import HOST, TRANSPORT_OFFSET, EngineLine, LocalNodeError
from cogr_search.localnode.runtime import runtime_dir
from cogr_search.localnode.service_user import NodeUser, node_user
from cogr_search.settings import load_settings

LINK = "node"
# In a runtime folder outside its home: the home's path, so a leftover names its home.
HOME_NOTE = "home"


@dataclass(frozen=True)
class Peers:
    """The nodes of a multi-node loopback cluster, as one of them (``name``) sees them."""

    name: str
    names: tuple[str, ...]
    transport_ports: tuple[int, ...]


@dataclass(frozen=True)
class NodeExtras:
    """What a caller adds to a node before it starts (a plugin's settings, as an operator
    would): ``settings`` lines for ``opensearch.yml``, ``secure_settings`` for its keystore
    (`keystore.py`), and ``files`` copied into its config folder under the given names (a CA
    file a setting names; the node may read only its config folder). Files come before a
    secured line's certificates are made, so ``ca.pem``, ``node.pem``, ``node-key.pem``,
    ``admin.pem`` and ``admin-key.pem`` given here are used instead (the secured test
    nodes of both engines share one CA this way)."""

    settings: Mapping[str, str] = field(default_factory=dict)
    secure_settings: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, Path] = field(default_factory=dict)

    def yml_lines(self) -> list[str]:
        return [f"{key}: {json.dumps(value)}" for key, value in self.settings.items()]  # JSON strings are YAML


@dataclass(frozen=True)
class NodeCommand:
    """How to run one prepared node: its script, environment, folder and user."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    logs: Path
    user: NodeUser


def stale_runtime(home: Path) -> Path | None:
    """The runtime folder an earlier node of ``home`` left outside it, if ``home`` no longer
    links to it (the home was deleted and made anew); None when there is none.

    Why: that folder holds the earlier node's data and security index, which a new start
    would reuse with a new admin password (OpenSearch's security index keeps the old one,
    so the node never becomes ready). `prepare` links the home first, so a home whose first
    start failed half-way is not mistaken for a leftover."""
    runtime = runtime_dir(home)
    if runtime == home or (home / LINK).is_symlink() or not runtime.exists():
        return None
    return runtime


def data_dir(home: Path) -> Path:
    return runtime_dir(home) / "data"


def conf_argument(home: Path, engine: EngineLine) -> str:
    """The argument on the node's command line that names its config folder: how a pid is
    recognised as this home's node (the script passes it to the JVM)."""
    return f"-D{engine.conf_property}={runtime_dir(home) / 'config'}"


def prepare(home: Path, port: int, heap: str, engine: EngineLine, peers: Peers | None = None,
            extras: NodeExtras = NodeExtras(), transport_port: int | None = None) -> NodeCommand:
    """Lay out the node's runtime folder for ``port`` and ``heap``; return how to start it.

    Without ``peers`` the node is a cluster of its own; with them it joins theirs.
    ``extras``: the caller's settings, keystore entries and config files.
    ``transport_port``: default ``port`` + 100."""
    user = node_user()
    dist = ensure_distribution(engine, user)
    runtime = runtime_dir(home, user)
    config = runtime / "config"
    for folder in (config / "jvm.options.d", runtime / "data", runtime / "logs"):
        folder.mkdir(parents=True, exist_ok=True)
    if not user.is_caller:
        _link(home, runtime)  # first: whatever fails below, the home still owns its runtime folder
    shutil.copyfile(dist / "config" / "log4j2.properties", config / "log4j2.properties")
    (config / "jvm.options").write_text(_jvm_options((dist / "config" / "jvm.options").read_text(), runtime))
    (config / "jvm.options.d" / "cogr.options").write_text(
        f"# written by cogr-search: the heap of `start --heap`\n-Xms{heap}\n-Xmx{heap}\n-XX:+ExitOnOutOfMemoryError\n"
        + "".join(f"{option}\n" for option in _extra_jvm_options())
    )
    env = java_env(engine)
    for name, source in extras.files.items():  # first: a caller's certificates are kept by a secured line
        shutil.copyfile(source, config / name)
    secured = _secure_lines(home, config, dist, env, engine)
    transport = transport_port if transport_port is not None else port + TRANSPORT_OFFSET
    (config / engine.settings_file).write_text(
        _settings(port, runtime, engine, peers, [*secured, *extras.yml_lines()], transport))
    user.give(runtime)
    secure_settings = dict(extras.secure_settings)
    if engine.secure and engine.name == "elasticsearch":
        secure_settings.update(es_security.secure_settings(home))
    keystore.put(dist, config, env, user, engine, secure_settings)
    if engine.secure and engine.name == "elasticsearch":
        es_security.add_admin(home, dist, config, env, user, engine)  # as the node's user: after `give`
    env[engine.conf_variable] = str(config)
    for variable in ("OPENSEARCH_JAVA_OPTS", "ES_JAVA_OPTS"):
        env.pop(variable, None)  # the heap comes from --heap, nothing else
    if user.home is not None:
        env["HOME"] = str(user.home)
    return NodeCommand(
        argv=[str(dist / "bin" / engine.script)], env=env, cwd=runtime, logs=runtime / "logs", user=user
    )


def _link(home: Path, runtime: Path) -> None:
    """``<home>/node`` -> the runtime folder, and ``<runtime>/home`` naming the home."""
    link = home / LINK
    if not link.is_symlink():
        link.symlink_to(runtime, target_is_directory=True)
    (runtime / HOME_NOTE).write_text(f"{home}\n")


def _secure_lines(home: Path, config: Path, dist: Path, env: dict[str, str], engine: EngineLine) -> list[str]:
    """A secured line's certificates, admin and settings (each engine's own module); none otherwise."""
    if not engine.secure:
        return []
    if engine.name == "elasticsearch":
        return es_security.prepare(home, config, dist)
    return security.prepare(home, config, dist, env)


def _jvm_options(text: str, runtime: Path) -> str:
    """The distribution's jvm.options with its relative paths made the node's own.

    Why: the script runs the JVM from the distribution folder, so ``logs/gc.log``,
    ``HeapDumpPath=data`` and ``ErrorFile=logs/...`` would land in the shared, read-only
    template; the deb and rpm packages rewrite them to their own folders the same way.
    """
    logs, data = runtime / "logs", runtime / "data"
    return (
        text.replace("file=logs/", f"file={logs}/")
        .replace("HeapDumpPath=data", f"HeapDumpPath={data}")
        .replace("ErrorFile=logs/", f"ErrorFile={logs}/")
        .replace("-Xloggc:logs/", f"-Xloggc:{logs}/")
    )


def _discovery(peers: Peers | None) -> list[str]:
    """A single node, or the seed hosts and first cluster managers of a loopback cluster."""
    if peers is None:
        return ["node.name: cogr-local", "discovery.type: single-node"]
    seeds = ", ".join(f'"{HOST}:{p}"' for p in peers.transport_ports)
    return [
        f"node.name: {peers.name}",
        f"discovery.seed_hosts: [{seeds}]",
        f"cluster.initial_cluster_manager_nodes: [{', '.join(peers.names)}]",
    ]


def _settings(
    port: int, runtime: Path, engine: EngineLine, peers: Peers | None = None, extra_lines: list[str] | None = None,
    transport_port: int | None = None,
) -> str:
    """opensearch.yml (elasticsearch.yml) of a loopback node: the shared settings, the line's
    own, then ``extra_lines`` (a secured node's, the caller's)."""
    single = peers is None
    return "\n".join(
        [
            "# written by cogr-search at each start: a node on the loopback interface",
            "cluster.name: cogr-local",
            *_discovery(peers),
            f"network.host: {HOST}",
            f"http.port: {port}",
            f"transport.port: {transport_port if transport_port is not None else port + TRANSPORT_OFFSET}",
            f"path.data: {runtime / 'data'}",
            f"path.logs: {runtime / 'logs'}",
            # A laptop's or CI's disk is often past the default 85-90% watermarks.
            "cluster.routing.allocation.disk.threshold_enabled: false",
            *engine.node_settings,
            *(engine.single_node_settings if single else ()),
            *(extra_lines or []),
            "",
        ]
    )


def _extra_jvm_options() -> list[str]:
    """COGR_NODE_JVM_OPTIONS, split; a word that is no JVM option is refused before the node
    starts (the JVM would only say "Could not create the Java Virtual Machine")."""
    options = (load_settings().node_jvm_options or "").split()
    for option in options:
        if not option.startswith("-"):
            raise LocalNodeError(f"COGR_NODE_JVM_OPTIONS: {option!r} is not a JVM option (each starts with '-')")
    return options
