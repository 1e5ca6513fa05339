/*
 * cogr-search OpenSearch plugin: the OpenSearch 2.x adapter (src/main/java-os2).
 */
package org.cogr.opensearch.ingest;

import org.opensearch.ingest.IngestDocument;
import org.opensearch.ingest.IngestDocumentWrapper;

/**
 * Makes {@link IngestDocumentWrapper}s on OpenSearch 2.x, whose constructor is
 * {@code (slot, document, exception)}.
 *
 * <p>Why an adapter: OpenSearch 3.x added a child-slot argument to that constructor; this
 * class and its 3.x twin in {@code src/main/java-os3} are the only code that differs between
 * the plugin's two builds, so the processors compile unchanged on both lines.
 */
final class IngestDocuments {

    private IngestDocuments() {
    }

    /** A batch of one: an index request outside a bulk, or {@code _simulate}. */
    static IngestDocumentWrapper single(IngestDocument document) {
        return new IngestDocumentWrapper(0, document, null);
    }

    /** {@code wrapper}'s document in its slot, failed with {@code error} (null: succeeded). */
    static IngestDocumentWrapper withError(IngestDocumentWrapper wrapper, Exception error) {
        return new IngestDocumentWrapper(wrapper.getSlot(), wrapper.getIngestDocument(), error);
    }
}
