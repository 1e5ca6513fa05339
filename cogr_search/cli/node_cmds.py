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
from cogr_search.localnode import ELASTICSEARCH, LINES, OPENSEARCH, Launcher


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

    def _launcher(line: str) -> Launcher:
        try:
            return local_node.engine_line(engine.name, line)
        except local_node.LocalNodeError as err:
            raise CogrError(str(err)) from err

    # OpenSearch keeps its historical default, $COGR_LOCAL_PORT (9200); Elasticsearch has
    # its own, so that both nodes can run side by side with no flags.
    port_help = (
        "HTTP port (default 9200, or $COGR_LOCAL_PORT)."
        if engine is OPENSEARCH
        else f"HTTP port (default {engine.default_port})."
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
    @click.option("--heap", default=None, help="JVM heap, e.g. 1g (default, or $COGR_LOCAL_HEAP).")
    @click.option(
        "--timeout",
        type=click.FloatRange(min=1),
        default=180.0,
        show_default=True,
        help="Seconds to wait for the node to answer yellow (a build is not counted).",
    )
    @home_option
    @version_option
    def start(port: int | None, heap: str | None, timeout: float, home: Path | None, line: str) -> None:
        """Build the launcher if needed, start the node in the background, wait for yellow."""
        launcher = _launcher(line)
        if port is None and engine is not OPENSEARCH:
            port = engine.default_port
        settings = settings_from(local_port=port, local_heap=heap)
        try:
            info = local_node.start(
                _home(home, launcher), port=settings.local_port, heap=settings.local_heap, timeout=timeout,
                engine=launcher,
            )
        except local_node.LocalNodeError as err:
            raise CogrError(str(err)) from err
        click.echo(info.url)

    @group.command()
    @home_option
    @version_option
    def stop(home: Path | None, line: str) -> None:
        """Stop the node started from this home directory (and nothing else)."""
        try:
            stopped = local_node.stop(_home(home, _launcher(line)))
        except local_node.LocalNodeError as err:
            raise CogrError(str(err)) from err
        click.echo("stopped" if stopped else "not running")

    @group.command()
    @home_option
    @version_option
    def status(home: Path | None, line: str) -> None:
        """Say whether the local node runs, where, and its version."""
        state = local_node.status(_home(home, _launcher(line)))
        if not state.running:
            click.echo("not running")
            raise SystemExit(3)
        label = state.engine.label if state.engine else engine.label
        click.echo(f"running: {state.url} (pid {state.pid}, {label} {state.version})")

    return group


opensearch = node_group(OPENSEARCH)
elasticsearch = node_group(ELASTICSEARCH)
