"""The plugin as a real cluster installs it, for each OpenSearch line: the zip the Maven
build makes (named with its OpenSearch version, in the line's own build folder) has the
jar, the descriptor (2.19 on Java 17, 3.x on Java 21; the plugin class) and a security
policy granting the outbound socket permission and the thread permission its HTTP client needs
under 2.x's security manager (3.x still reads it: its agent replaced the security manager);
the local node's distribution has it installed by its plugin tool."""

from __future__ import annotations

import zipfile

import pytest

from cogr_search.localnode import OPENSEARCH, OPENSEARCH_3, EngineLine, ensure_built, plugins_dir
from cogr_search.localnode.distribution import ensure_distribution
from cogr_search.localnode.service_user import node_user


@pytest.mark.parametrize("engine", [OPENSEARCH, OPENSEARCH_3], ids=lambda e: f"opensearch-{e.line}")
def test_plugin_zip_has_descriptor_policy_and_jar(engine: EngineLine) -> None:
    built = ensure_built(engine=engine)
    # The line's folder holds its zips only (2.19's also holds the 2.19.4 zip of `start --secure`).
    zips = sorted((plugins_dir() / "cogr-plugin" / engine.build_dir).glob("cogr-search-plugin-*-opensearch-*.zip"))
    versions = [z.name.removeprefix("cogr-search-plugin-").split("-opensearch-")[1].removesuffix(".zip") for z in zips]
    assert all(v.split(".")[0] == engine.version.split(".")[0] for v in versions), zips
    zips = [z for z, v in zip(zips, versions) if v == engine.version]
    assert len(zips) == 1, zips
    with zipfile.ZipFile(zips[0]) as archive:
        names = set(archive.namelist())
        jars = [n for n in names if n.endswith(".jar")]
        assert {"plugin-descriptor.properties", "plugin-security.policy"} <= names and len(jars) == 1
        descriptor = dict(
            line.split("=", 1) for line in archive.read("plugin-descriptor.properties").decode().splitlines()
            if "=" in line and not line.startswith("#")
        )
        policy = archive.read("plugin-security.policy").decode()
        with archive.open(jars[0]) as inner, zipfile.ZipFile(inner) as plugin_jar:
            classes = set(plugin_jar.namelist())
    assert descriptor["name"] == "cogr-search" and descriptor["classname"] == "org.cogr.opensearch.CogrPlugin"
    assert descriptor["opensearch.version"] == engine.version
    assert descriptor["java.version"] == str(engine.java_release)
    assert "${" not in "".join(descriptor.values())
    assert 'java.net.SocketPermission "*", "connect,resolve"' in policy
    assert 'java.lang.RuntimePermission "modifyThread"' in policy
    assert "org/cogr/opensearch/CogrPlugin.class" in classes
    assert "org/cogr/opensearch/ingest/CogrKeywordsProcessor.class" in classes
    assert "org/cogr/opensearch/search/CogrExpandRequestProcessor.class" in classes
    assert "org/cogr/opensearch/ingest/IngestDocuments.class" in classes  # the line's adapter
    assert "META-INF/cogr-plugin.properties" in classes
    # The local node's distribution has this very zip installed by bin/opensearch-plugin.
    assert built == zips[0]
    installed = ensure_distribution(engine, node_user()) / "plugins" / "cogr-search"
    assert (installed / "plugin-security.policy").read_text() == policy
