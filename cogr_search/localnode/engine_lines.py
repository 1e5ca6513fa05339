"""The engine lines a local node can run, one `EngineLine` each: the stock distribution, the
project's plugin zip and its Maven modules, the Java, and how the node's process is recognised.

Each `EngineLine` knows the cluster-side `Engine` it starts, so a node's record, the CLI and
the tests name engines one way. OpenSearch has two lines built from one source tree
(plugins/pom.xml: 2.19 by default, 3.x with `-Dopensearch.line=3`), each into its own
build folder and with its own Java; everything else about a local node is shared.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cogr_search.cluster import engines
from cogr_search.cluster.engines import Engine
from cogr_search.errors import CogrError

HOST = "127.0.0.1"
# The launcher's default: transport port = HTTP port + 100.
TRANSPORT_OFFSET = 100


class LocalNodeError(CogrError):
    """The local node could not be built, started or stopped; the message is one line."""


@dataclass(frozen=True)
class EngineLine:
    """One engine line's local node: the stock distribution, its plugin and how it starts.

    Every local node is the engine's own distribution (``distribution``: the Maven
    coordinates of its ``integ-test-zip``; `cogr_search.localnode.distribution`), started by
    its ``bin/<script>`` with ``<conf_variable>`` on the node's config folder and
    ``<java_home_variable>`` on the line's JDK. The project's plugin zip (``plugin_zip_name``,
    built from the Maven ``modules`` under ``plugins/`` into ``build_dir`` with
    ``maven_args``) is installed by the distribution's ``plugin_tool``, with
    ``extra_plugins`` (Maven coordinates of plugin zips, e.g. the security plugin of a
    ``secure`` line); ``assemble_modules`` adds the modules the line's zip lacks.
    ``main_class`` and ``conf_property`` recognise the node's process. ``settings_file``
    gets the shared loopback settings, then ``node_settings`` (and on a single node
    ``single_node_settings``).

    ``key`` names the launcher in records, the CLI and test ids (``opensearch`` is the
    2.19 line, for records written before there were lines); ``line`` is the version line
    a user asks for (``--version``); ``java_release`` is the Java it needs (17: the
    ``java`` on PATH; 21+: a JDK found by `cogr_search.localnode.java`).
    """

    engine: Engine
    main_class: str
    modules: tuple[str, ...]
    plugin_zip_name: str
    default_port: int
    key: str
    line: str
    version: str
    build_dir: str = "target"
    maven_args: tuple[str, ...] = ()
    java_release: int = 17
    distribution: tuple[str, str, str] = ("", "", "")
    assemble_modules: bool = False
    java_home_variable: str = "JAVA_HOME"
    plugin_tool: str = ""
    extra_plugins: tuple[tuple[str, str, str], ...] = ()
    secure: bool = False
    script: str = "opensearch"
    conf_variable: str = "OPENSEARCH_PATH_CONF"
    conf_property: str = "opensearch.path.conf"
    settings_file: str = "opensearch.yml"
    node_settings: tuple[str, ...] = ()
    # One node cannot host replicas: an index created without a replica count would leave
    # the cluster yellow for good (Elasticsearch has no such setting).
    single_node_settings: tuple[str, ...] = ("cluster.default_number_of_replicas: 0",)


    @property
    def name(self) -> str:
        return self.engine.name

    @property
    def description(self) -> str:
        """``OpenSearch 3.8.0``: what a message names."""
        return f"{self.engine.label} {self.version}"

    @property
    def label(self) -> str:
        return self.engine.label

    @property
    def module(self) -> str:
        """The Maven module whose build folder holds the line's plugin zip."""
        return self.modules[-1]


# The version of the project's Maven modules (plugins/pom.xml), in the plugin zip's name.
PLUGIN_VERSION = "0.1.0-SNAPSHOT"
OPENSEARCH_DISTRIBUTION = "org.opensearch.distribution.integ-test-zip"

# OpenSearch runs as its stock distribution, with the cogr plugin zip installed.
OPENSEARCH = EngineLine(
    engine=engines.OPENSEARCH,
    main_class="org.opensearch.bootstrap.OpenSearch",
    modules=("cogr-plugin",),
    plugin_zip_name=f"cogr-search-plugin-{PLUGIN_VERSION}-opensearch-2.19.6.zip",
    default_port=9200,
    key="opensearch",
    line="2.19",
    version="2.19.6",
    distribution=(OPENSEARCH_DISTRIBUTION, "opensearch", "2.19.6"),
    # 2.19's integ-test-zip holds transport-netty4 only (plugins/os-modules adds the rest).
    assemble_modules=True,
    java_home_variable="OPENSEARCH_JAVA_HOME",
    plugin_tool="opensearch-plugin",
)
# OpenSearch 3.x: the newest 3.x whose plugin API and distribution resolve (plugins/pom.xml, os3).
OPENSEARCH_3 = replace(
    OPENSEARCH,
    plugin_zip_name=f"cogr-search-plugin-{PLUGIN_VERSION}-opensearch-3.8.0.zip",
    key="opensearch-3",
    line="3.x",
    version="3.8.0",
    build_dir="target-os3",
    maven_args=("-Dopensearch.line=3",),
    java_release=21,
    distribution=(OPENSEARCH_DISTRIBUTION, "opensearch", "3.8.0"),
    assemble_modules=False,
)
# OpenSearch with its security plugin (`start --secure`): 2.19.4 is the newest 2.19.x whose
# security plugin zip is on Maven Central (2.19.4.0; none for 2.19.5/2.19.6 or any 3.x).
OPENSEARCH_SECURE = replace(
    OPENSEARCH,
    plugin_zip_name=f"cogr-search-plugin-{PLUGIN_VERSION}-opensearch-2.19.4.zip",
    key="opensearch-secure",
    line="2.19 --secure",
    version="2.19.4",
    maven_args=("-Dopensearch.version=2.19.4",),
    distribution=(OPENSEARCH_DISTRIBUTION, "opensearch", "2.19.4"),
    extra_plugins=(("org.opensearch.plugin", "opensearch-security", "2.19.4.0"),),
    secure=True,
)
# Elasticsearch runs as its stock distribution too, with the project's root-endpoint plugin
# (its zips lack the rest-root module that answers GET /). 9201 (transport 9301) by default,
# so that both local nodes can run side by side.
ELASTICSEARCH = EngineLine(
    engine=engines.ELASTICSEARCH,
    # The script's process: a CLI JVM that runs the server JVM as its child and stops it.
    main_class="org.elasticsearch.launcher.CliToolLauncher",
    modules=("es-node",),
    plugin_zip_name=f"cogr-root-endpoint-{PLUGIN_VERSION}-elasticsearch-8.17.2.zip",
    default_port=9201,
    key="elasticsearch",
    line="8.17",
    version="8.17.2",
    distribution=("org.elasticsearch.distribution.integ-test-zip", "elasticsearch", "8.17.2"),
    java_home_variable="ES_JAVA_HOME",
    plugin_tool="elasticsearch-plugin",
    script="elasticsearch",
    conf_variable="ES_PATH_CONF",
    conf_property="es.path.conf",
    settings_file="elasticsearch.yml",
    # x-pack security is on by default in 8.x and 9.x; the plain local node runs without it.
    node_settings=("xpack.security.enabled: false",),
    single_node_settings=(),
)
# Elasticsearch 9.2.0 (its integ-test-zip is on Maven Central; Java 21+).
ELASTICSEARCH_9 = replace(
    ELASTICSEARCH,
    plugin_zip_name=f"cogr-root-endpoint-{PLUGIN_VERSION}-elasticsearch-9.2.0.zip",
    key="elasticsearch-9",
    line="9.x",
    version="9.2.0",
    build_dir="target-es9",
    maven_args=("-Delasticsearch.line=9",),
    java_release=21,
    distribution=("org.elasticsearch.distribution.integ-test-zip", "elasticsearch", "9.2.0"),
)
# Elasticsearch with x-pack security (`start --secure`): TLS on HTTP and transport, the file
# realm's admin (localnode/es_security.py). 9211 by default, beside the plain node's 9201.
ELASTICSEARCH_SECURE = replace(
    ELASTICSEARCH,
    key="elasticsearch-secure",
    line="8.17 --secure",
    default_port=9211,
    node_settings=(),
    secure=True,
)
ENGINES: dict[str, EngineLine] = {e.name: e for e in (OPENSEARCH, ELASTICSEARCH)}
"""The default launcher of each engine (OpenSearch: the 2.19 line; Elasticsearch: 8.17)."""
ENGINE_LINES: dict[str, EngineLine] = {
    e.key: e for e in (OPENSEARCH, OPENSEARCH_3, OPENSEARCH_SECURE, ELASTICSEARCH, ELASTICSEARCH_9, ELASTICSEARCH_SECURE)
}
"""Every launcher by key, as records and test ids name them."""
OPENSEARCH_LINES: dict[str, EngineLine] = {OPENSEARCH.line: OPENSEARCH, OPENSEARCH_3.line: OPENSEARCH_3}
SECURE_LINES: dict[str, EngineLine] = {"opensearch": OPENSEARCH_SECURE, "elasticsearch": ELASTICSEARCH_SECURE}
"""Each engine's secured line (`start --secure`)."""
ELASTICSEARCH_LINES: dict[str, EngineLine] = {ELASTICSEARCH.line: ELASTICSEARCH, ELASTICSEARCH_9.line: ELASTICSEARCH_9}
LINES: dict[str, dict[str, EngineLine]] = {"opensearch": OPENSEARCH_LINES, "elasticsearch": ELASTICSEARCH_LINES}
"""Each engine's lines, by the name `--version` takes (the first is the default)."""


def engine_line(engine: str, version: str) -> EngineLine:
    """The launcher of ``engine`` for ``--version``: a line (``2.19``, ``3.x``, ``8.17``, ``9.x``),
    its major (``3``), a version prefix (``3.8``) or the exact version (``3.8.0``)."""
    text = version.strip().lower()
    lines = LINES[engine]
    for launcher in lines.values():
        major = launcher.line.split(".")[0]
        if text in (launcher.line, major, launcher.version) or launcher.version.startswith(text + "."):
            return launcher
    label = next(iter(lines.values())).label
    raise LocalNodeError(f"--version {version!r}: the local {label} node comes in the lines {', '.join(lines)}")


def opensearch_line(version: str) -> EngineLine:
    """The OpenSearch launcher for ``--version``: ``2.19`` (or ``2``, ``2.19.6``) or ``3.x`` (``3``, ``3.8``, ``3.8.0``)."""
    return engine_line("opensearch", version)
