"""The run's students in the cluster: chunk documents the OpenSearch plugin loads from.

Why in the cluster, and chunked: the plugin expands inside each node (no service to
deploy), so the students must reach every node; an index replicated to every data node
does that with the cluster's own machinery, as ml-commons stores model chunks. Each side's
export (students/export.py, gzip) is cut into 1 MiB pieces (`CHUNK_BYTES`: well under
`http.max_content_length` and Lucene's stored-field comfort), one document each, all
naming the model id (the `cogr_model` tag, one per run, round and digest), the chunk
count, the total bytes and their sha256, which the plugin checks before loading.

Storing is idempotent: a model whose chunks are all there is not written again. A new
round is a new model id beside the old ones; the pipelines then name it.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
from dataclasses import dataclass
from datetime import datetime, timezone

from cogr_search.cluster.client import Cluster
from cogr_search.cluster.definitions import definition
from cogr_search.cluster.engines import NOT_FOUND
from cogr_search.cluster.names import STUDENT_INDEX

__all__ = ["STUDENT_INDEX", "StoredStudent", "chunk_documents", "ensure_index", "store_student", "stored_chunks"]
CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class StoredStudent:
    model_id: str
    side: str
    chunks: int
    bytes: int
    written: bool


def gzip_bytes(data: bytes) -> bytes:
    """gzip without a time stamp or name: the same export gives the same bytes (and sha256)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as out:
        out.write(data)
    return buffer.getvalue()


def chunk_documents(model_id: str, run: str, round_: int, side: str, export: bytes) -> list[tuple[str, dict]]:
    """(document id, body) of each chunk of one side's export (`export` is its JSON)."""
    packed = gzip_bytes(export)
    digest = hashlib.sha256(packed).hexdigest()
    pieces = [packed[i : i + CHUNK_BYTES] for i in range(0, len(packed), CHUNK_BYTES)] or [b""]
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return [(f"{model_id}#{n}", {"model_id": model_id, "run": run, "round": round_, "side": side,
                                 "format": "cogr-student", "version": 1, "chunk": n, "chunks": len(pieces),
                                 "bytes": len(packed), "sha256": digest, "stored_at": now,
                                 "data": base64.b64encode(piece).decode("ascii")})
            for n, piece in enumerate(pieces)]


def ensure_index(cluster: Cluster, index: str = STUDENT_INDEX) -> None:
    if cluster.call(cluster.client.indices.exists, index=index):
        return
    cluster.call(cluster.client.indices.create, index=index, body=definition("index/cogr-students.json"))


def stored_chunks(cluster: Cluster, model_id: str, index: str = STUDENT_INDEX) -> int:
    try:
        return cluster.call(cluster.client.count, index=index, body={"query": {"term": {"model_id": model_id}}})["count"]
    except NOT_FOUND:
        return 0


def store_student(cluster: Cluster, model_id: str, run: str, round_: int, side: str, export: bytes,
                  index: str = STUDENT_INDEX) -> StoredStudent:
    """Write one side's export as chunk documents (unless all are there), then refresh."""
    documents = chunk_documents(model_id, run, round_, side, export)
    size = documents[0][1]["bytes"]
    if stored_chunks(cluster, model_id, index) == len(documents):
        return StoredStudent(model_id, side, len(documents), size, False)
    ensure_index(cluster, index)
    for doc_id, body in documents:
        cluster.call(cluster.client.index, index=index, id=doc_id, body=body)
    cluster.call(cluster.client.indices.refresh, index=index)
    return StoredStudent(model_id, side, len(documents), size, True)
