"""The plugin as a real cluster installs it: the zip the Maven build makes has the jar,
the descriptor (for OpenSearch 2.19, Java 17, the plugin class) and a security policy
granting the outbound socket permission; the local node keeps the plugin on its
classpath."""

from __future__ import annotations

import zipfile

from cogr_search.localnode import ensure_built, plugins_dir


def test_plugin_zip_has_descriptor_policy_and_jar() -> None:
    jar = ensure_built()
    zips = sorted((plugins_dir() / "cogr-plugin" / "target").glob("cogr-search-plugin-*.zip"))
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
    assert descriptor["opensearch.version"].startswith("2.19.") and descriptor["java.version"] == "17"
    assert "${" not in "".join(descriptor.values())
    assert 'java.net.SocketPermission "*", "connect,resolve"' in policy
    assert "org/cogr/opensearch/CogrPlugin.class" in classes
    assert "org/cogr/opensearch/ingest/CogrKeywordsProcessor.class" in classes
    assert "org/cogr/opensearch/search/CogrExpandRequestProcessor.class" in classes
    # The local node loads the same plugin from its classpath.
    assert any(p.name.startswith("cogr-plugin-") for p in (jar.parent / "lib").glob("*.jar"))
