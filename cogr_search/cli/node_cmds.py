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
from cogr_search import localnode as local_node
from cogr_search.localnode import ELASTICSEARCH, LINES, OPENSEARCH, SECURE_LINES, EngineLine, multinode, topology


def node_group(engine: EngineLine) -> click.Group:
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

    # OpenSearch keeps its historical default, $COGR_LOCAL_PORT (9200); Elasticsearch has
    # its own, so that both nodes can run side by side with no flags.
    port_help = (
        "HTTP port (default 9200, or $COGR_LOCAL_PORT)."
        if engine is OPENSEARCH
        else f"HTTP port (default {engine.default_port}; {secured.default_port} with --secure)."
    )

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
        chosen = topology.choose(engine, line, secure, home, settings_from(), nodes)
        started = topology.start(chosen, settings_from(), port, transport_port, heap, timeout)
        if started.note is not None:
            click.echo(started.note, err=True)
        click.echo(started.url)
        if started.is_cluster:
            click.echo(f"{len(started.ports)} {chosen.launcher.description} nodes in one cluster on ports "
                       f"{', '.join(map(str, started.ports))} ({chosen.home})", err=True)
        if started.credentials is not None:
            _print_credentials(chosen.home, started.url, started.credentials)
        _print_commands(chosen.home)

    def _print_commands(node_home: Path) -> None:
        """How to check and stop the node just started (stderr: stdout stays the URL)."""
        click.echo(f"check it with: cogr-search {engine.name} status --home {node_home}; "
                   f"stop it with: cogr-search {engine.name} stop --home {node_home} "
                   "(add --purge to remove its data too)", err=True)

    def _print_credentials(node_home: Path, url: str, creds: local_node.security.Credentials) -> None:
        """How to point cogr-search at the secured node (stderr: stdout stays the URL)."""
        click.echo(f"TLS with a private CA and the user {creds.user}; point cogr-search at it with:", err=True)
        click.echo(f"  export COGR_CLUSTER_URL={url} COGR_CLUSTER_USER={creds.user} "
                   f"COGR_CLUSTER_PASSWORD=\"$(cat {node_home / local_node.security.PASSWORD_FILE})\" "
                   f"COGR_CLUSTER_CA_CERTS={creds.ca_certs}", err=True)

    @group.command()
    @home_option
    @version_option
    @secure_option
    @click.option("--purge", is_flag=True,
                  help="Also remove the node completely: its config, data, logs and password, in the home and in "
                  "its runtime folder outside it (a root caller's), and the home once nothing else is in it.")
    def stop(home: Path | None, line: str, secure: bool, purge: bool) -> None:
        """Stop the node (or every node of the cluster) started from this home directory."""
        chosen = topology.choose(engine, line, secure, home, settings_from())
        stopped = topology.stop(chosen, purge)
        click.echo("stopped" if stopped.stopped else "not running")
        if purge:
            removed = ", ".join(str(p) for p in stopped.removed) or "nothing"
            kept = f"; kept {chosen.home}: it holds other files" if stopped.home_kept else ""
            click.echo(f"removed {removed}{kept}", err=True)

    @group.command()
    @home_option
    @version_option
    @secure_option
    def status(home: Path | None, line: str, secure: bool) -> None:
        """Say whether the local node runs, where, and its version (a cluster: each node and its health)."""
        state = topology.status(topology.choose(engine, line, secure, home, settings_from()))
        if state.is_cluster:
            for i, node in enumerate(state.nodes, start=1):
                click.echo(f"node {i}: " + (f"running: {node.url} (pid {node.pid}, {node.version})"
                                            if node.running else "not running"))
            if state.health is not None:
                click.echo(f"cluster: {state.health}")
        elif state.running:
            (node,) = state.nodes
            label = node.engine.label if node.engine else engine.label
            click.echo(f"running: {node.url} (pid {node.pid}, {label} {node.version})")
        else:
            click.echo("not running")
        if not state.running:
            raise SystemExit(3)

    return group


opensearch = node_group(OPENSEARCH)
elasticsearch = node_group(ELASTICSEARCH)
