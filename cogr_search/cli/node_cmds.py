"""`cogr-search opensearch|elasticsearch start|stop|status`: the local real nodes.

One command group per engine, made by the same factory: the flags and behaviour are
identical, only the engine (jar, default home and port) differs. Each engine has two lines
(`--version`: OpenSearch 2.19 or 3.x, Elasticsearch 8.17 or 9.x; the first is the default),
each with its own build folder, Java and default home.
"""

from __future__ import annotations

from pathlib import Path

import click

from cogr_search.cli.options import settings_from
from cogr_search.errors import CogrError
from cogr_search import localnode as local_node
from cogr_search.localnode import ELASTICSEARCH, LINES, OPENSEARCH, SECURE_LINES, Launcher, cleanup, multinode


def node_group(engine: Launcher) -> click.Group:
    """The `start|stop|status` group of ``engine``'s local node, with a ``--version`` per line."""
    lines = LINES[engine.name]
    newer = list(lines.values())[-1]
    home_option = click.option(
        "--home",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help=f"Node directory (data, logs, pid); default: $COGR_HOME/{engine.key} "
        f"($COGR_HOME/{newer.key} for {newer.line}).",
    )
    # Each line has its own build folder, Java and default home (one home, one line).
    version_option = click.option(
        "--version",
        "line",
        default=engine.line,
        show_default=True,
        help=f"{engine.label} line: {' or '.join(lines)} ({newer.line}: {newer.version}, needs a JDK "
        f"{newer.java_release}+: COGR_JAVA21_HOME, JAVA_HOME, java on PATH or /usr/lib/jvm).",
    )

    secured = SECURE_LINES[engine.name]
    what_secures = ("its security plugin" if engine is OPENSEARCH
                    else "x-pack security (TLS on HTTP and transport, the file realm)")
    secure_option = click.option(
        "--secure",
        is_flag=True,
        help=f"The secured node: {secured.description} with {what_secures}, a CA made for it, an admin user with a "
        f"random password and no other user; its own default home ($COGR_HOME/{secured.key}).",
    )

    def _launcher(line: str, secure: bool = False) -> Launcher:
        if secure:
            if line != engine.line:
                raise CogrError(f"--secure --version {line}: the secured local node is {secured.description} only")
            return secured
        try:
            return local_node.engine_line(engine.name, line)
        except local_node.LocalNodeError as err:
            raise CogrError(str(err)) from err

    # OpenSearch keeps its historical default, $COGR_LOCAL_PORT (9200); Elasticsearch has
    # its own, so that both nodes can run side by side with no flags.
    port_help = (
        "HTTP port (default 9200, or $COGR_LOCAL_PORT)."
        if engine is OPENSEARCH
        else f"HTTP port (default {engine.default_port}; {secured.default_port} with --secure)."
    )

    def _home(home: Path | None, launcher: Launcher = engine) -> Path:
        return home if home is not None else settings_from().node_home(launcher.key)

    @click.group(
        name=engine.name,
        help=f"Run a real single-node {engine.label} {' or '.join(lines)} on 127.0.0.1 (no Docker needed).",
    )
    def group() -> None:
        pass

    @group.command()
    @click.option("--port", type=int, default=None, help=port_help)
    @click.option("--transport-port", type=int, default=None,
                  help="Transport port of a single node (default: the home's last one, else HTTP port + 100).")
    @click.option("--heap", default=None, help="JVM heap, e.g. 1g (default, or $COGR_LOCAL_HEAP).")
    @click.option(
        "--timeout",
        type=click.FloatRange(min=1),
        default=180.0,
        show_default=True,
        help="Seconds to wait for the node to answer yellow (a build is not counted).",
    )
    @click.option(
        "--nodes",
        type=click.IntRange(min=1, max=multinode.MAX_NODES),
        default=None,
        help="Start this many nodes on consecutive ports (PORT, PORT+1, ...) as one cluster "
        "(OpenSearch; stop, status and a later start without --nodes take them all).",
    )
    @home_option
    @version_option
    @secure_option
    def start(port: int | None, transport_port: int | None, heap: str | None, timeout: float, nodes: int | None,
              home: Path | None, line: str, secure: bool) -> None:
        """Start the node (the stock distribution, with the project's plugin) in the background and
        wait for yellow. A node already running is reused; a --port other than its own is refused."""
        launcher = _launcher(line, secure)
        if secure and nodes not in (None, 1):
            raise CogrError(f"--secure --nodes {nodes}: the secured local node is a single node (one CA and admin per home)")
        node_home = local_node.record.norm_home(_home(home, launcher))
        try:
            if nodes not in (None, 1) or multinode.is_cluster_home(node_home):
                if transport_port is not None:
                    raise CogrError("--transport-port is for a single node: a cluster's transport ports are "
                                    f"its HTTP ports + {local_node.TRANSPORT_OFFSET}")
                _start_cluster(node_home, port, heap, timeout, nodes, launcher)
                _print_commands(node_home)
                return
            note = local_node.process.running_note(node_home, port, launcher)
            if note is not None:
                click.echo(note, err=True)
            if port is None:
                port = local_node.record.last_port(node_home) or (
                    None if engine is OPENSEARCH else launcher.default_port)
            settings = settings_from(local_port=port, local_heap=heap)
            info = local_node.start(node_home, port=settings.local_port, heap=settings.local_heap, timeout=timeout,
                                    engine=launcher, transport_port=transport_port)
        except local_node.LocalNodeError as err:
            raise CogrError(str(err)) from err
        click.echo(info.url)
        if launcher.secure:
            _print_credentials(node_home, info.url)
        _print_commands(node_home)

    def _print_commands(node_home: Path) -> None:
        """How to check and stop the node just started (stderr: stdout stays the URL)."""
        click.echo(f"check it with: cogr-search {engine.name} status --home {node_home}; "
                   f"stop it with: cogr-search {engine.name} stop --home {node_home} "
                   "(add --purge to remove its data too)", err=True)

    def _print_credentials(node_home: Path, url: str) -> None:
        """How to point cogr-search at the secured node (stderr: stdout stays the URL)."""
        creds = local_node.security.credentials(node_home)
        assert creds is not None
        click.echo(f"TLS with a private CA and the user {creds.user}; point cogr-search at it with:", err=True)
        click.echo(f"  export COGR_CLUSTER_URL={url} COGR_CLUSTER_USER={creds.user} "
                   f"COGR_CLUSTER_PASSWORD=\"$(cat {node_home / local_node.security.PASSWORD_FILE})\" "
                   f"COGR_CLUSTER_CA_CERTS={creds.ca_certs}", err=True)

    def _start_cluster(node_home: Path, port: int | None, heap: str | None, timeout: float, nodes: int | None,
                       launcher: Launcher) -> None:
        if multinode.is_cluster_home(node_home):
            recorded = multinode.layout(node_home)
            nodes = nodes or len(recorded.ports)
            if port is not None and port != recorded.ports[0]:
                raise CogrError(f"the cluster of {node_home} listens on ports {recorded.ports[0]}-{recorded.ports[-1]}, "
                                f"not {port}; stop it and use another --home for other ports")
        settings = settings_from(local_port=port, local_heap=heap or "512m")
        infos = multinode.start_cluster(node_home, nodes, port=settings.local_port, heap=settings.local_heap,
                                        timeout=max(timeout, 300.0), engine=launcher)
        click.echo(infos[0].url)
        ports = ", ".join(str(i.port) for i in infos)
        click.echo(f"{len(infos)} {launcher.description} nodes in one cluster on ports {ports} ({node_home})", err=True)

    @group.command()
    @home_option
    @version_option
    @secure_option
    @click.option("--purge", is_flag=True,
                  help="Also remove the node completely: its config, data, logs and password, in the home and in "
                  "its runtime folder outside it (a root caller's), and the home once nothing else is in it.")
    def stop(home: Path | None, line: str, secure: bool, purge: bool) -> None:
        """Stop the node (or every node of the cluster) started from this home directory."""
        node_home = _home(home, _launcher(line, secure))
        try:
            if purge:
                _purge(node_home)
                return
            if multinode.is_cluster_home(node_home):
                stopped = multinode.stop_cluster(node_home)
            else:
                stopped = local_node.stop(node_home)
        except local_node.LocalNodeError as err:
            raise CogrError(str(err)) from err
        click.echo("stopped" if stopped else "not running")

    def _purge(node_home: Path) -> None:
        purged = cleanup.purge(node_home)
        click.echo("stopped" if purged.stopped else "not running")
        removed = ", ".join(str(p) for p in purged.removed if p.parent != node_home) or "nothing"
        kept = f"; kept {node_home}: it holds other files" if purged.home_kept else ""
        click.echo(f"removed {removed}{kept}", err=True)

    @group.command()
    @home_option
    @version_option
    @secure_option
    def status(home: Path | None, line: str, secure: bool) -> None:
        """Say whether the local node runs, where, and its version (a cluster: each node and its health)."""
        node_home = _home(home, _launcher(line, secure))
        if multinode.is_cluster_home(node_home):
            states = multinode.cluster_status(node_home)
            for i, state in enumerate(states, start=1):
                click.echo(f"node {i}: " + (f"running: {state.url} (pid {state.pid}, {state.version})"
                                            if state.running else "not running"))
            up = [s for s in states if s.running]
            if not up:
                raise SystemExit(3)
            health = multinode.health(str(up[0].url))
            click.echo(f"cluster: {health}")
            return
        state = local_node.status(node_home)
        if not state.running:
            click.echo("not running")
            raise SystemExit(3)
        label = state.engine.label if state.engine else engine.label
        click.echo(f"running: {state.url} (pid {state.pid}, {label} {state.version})")

    return group


opensearch = node_group(OPENSEARCH)
elasticsearch = node_group(ELASTICSEARCH)
