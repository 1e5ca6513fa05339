"""Every document carries its title keyword, however it was written (DESIGN.md section 3).

cogr-search's own writers (ingest, sync) build `cogr_keywords` in Python. An application
that indexes straight through the alias does not; without the title keyword such a
document matches nothing, not even its own title. So every version gets this pipeline
as its `index.default_pipeline`, unless an operator set another one there (the plugin's
`cogr_keywords` enrichment fills keywords itself): when `cogr_keywords` is absent or
empty it writes `[normalize(title)]`, and when `id` is absent it copies `_id`. (Not as
`index.final_pipeline`: on OpenSearch 2.19 a final pipeline undid what the plugin's
batching processor had written in a request pipeline, measured by the plugin tests.)

The normalization is `keywords.normalize` ported to Painless (the same rules as the Java
plugin's `KeywordNormalizer`, which Painless shares the JVM's Unicode tables with), cut
to Lucene's term limit like `keywords.term`; tests compare it with Python on the shared
vectors. Partial updates (`_update` with `doc`) do not run ingest pipelines in either
engine, so a partial update that changes a title keeps the old title keyword until the
next sync.

A cluster without the `script` ingest processor (the local Elasticsearch node, which has
no ingest-common module) cannot run it: `install` then says so and returns False.
"""

from __future__ import annotations

from cogr_search.cluster import documents as doc_fields
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.definitions import definition
from cogr_search.cluster.engines import NOT_FOUND

PIPELINE = "cogr-title-keyword-v1"
SETTING = "index.default_pipeline"


def pipeline_body() -> dict:
    """The pipeline's definition (mappings/pipelines/cogr-title-keyword-v1.json): one Painless
    script with the field names, the whitespace set and the term limit as parameters."""
    return definition(f"pipelines/{PIPELINE}.json")


def can_run(cluster: Cluster) -> bool:
    """Whether every ingest node of the cluster has the `script` processor."""
    found = cluster.call(cluster.client.nodes.info, node_id="_all", metric="ingest",
                         filter_path="nodes.*.ingest.processors.type")
    nodes = found.get("nodes", {})
    return bool(nodes) and all(
        any(p.get("type") == "script" for p in node.get("ingest", {}).get("processors", [])) for node in nodes.values()
    )


def default_pipeline(cluster: Cluster, index: str) -> str | None:
    """The index's `index.default_pipeline`, None where unset."""
    found = cluster.call(cluster.client.indices.get_settings, index=index, name=SETTING)
    return found.get(index, {}).get("settings", {}).get("index", {}).get("default_pipeline")


def _put_if_changed(cluster: Cluster) -> None:
    """Put the pipeline unless the cluster holds this very definition: a put is a
    cluster-state update (published to every node) even when nothing changes, and a
    sync installs the pipeline three times (bench sync: ~0.1 s each on one node)."""
    body = pipeline_body()
    try:
        stored = cluster.call(cluster.client.ingest.get_pipeline, id=PIPELINE).get(PIPELINE)
    except NOT_FOUND:
        stored = None
    if stored != body:
        cluster.call(cluster.client.ingest.put_pipeline, id=PIPELINE, body=body)


def install(cluster: Cluster, index: str | None = None) -> bool:
    """Put the pipeline (idempotent) and, with `index`, make it that index's default
    pipeline where none is set. True when the index (or the cluster) now has it.

    False (and nothing changed) where the cluster cannot run Painless ingest scripts, or
    where the operator's own default pipeline stays in charge."""
    if not can_run(cluster):
        return False
    _put_if_changed(cluster)
    if index is None:
        return True
    current = default_pipeline(cluster, index)
    if current not in (None, "_none", PIPELINE):
        return False
    if current != PIPELINE:
        cluster.call(cluster.client.indices.put_settings, index=index, body={SETTING: PIPELINE})
    return True


def simulate(cluster: Cluster, titles: list[str]) -> list[list[str]]:
    """What the pipeline writes for documents with these titles (for tests and `sync --status`)."""
    docs = [{"_id": f"d{n}", "_source": {doc_fields.TITLE: title}} for n, title in enumerate(titles)]
    found = cluster.call(cluster.client.ingest.simulate, body={"pipeline": pipeline_body(), "docs": docs})
    return [doc["doc"]["_source"].get(doc_fields.KEYWORDS, []) for doc in found["docs"]]
