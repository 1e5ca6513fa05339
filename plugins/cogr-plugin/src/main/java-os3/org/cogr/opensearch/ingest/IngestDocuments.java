/*
 * cogr-search OpenSearch plugin: the OpenSearch 3.x adapter (src/main/java-os3).
 */
package org.cogr.opensearch.ingest;

import org.opensearch.ingest.IngestDocument;
import org.opensearch.ingest.IngestDocumentWrapper;

/**
 * Makes {@link IngestDocumentWrapper}s on OpenSearch 3.x, whose constructor is
 * {@code (slot, childSlot, document, exception)}.
 *
 * <p>Why an adapter: see the 2.x twin in {@code src/main/java-os2}. The child slot is kept
 * as OpenSearch set it, so a result lands where the bulk request expects it.
 */
final class IngestDocuments {

    private IngestDocuments() {
    }

    /** A batch of one: an index request outside a bulk, or {@code _simulate}. */
    static IngestDocumentWrapper single(IngestDocument document) {
        return new IngestDocumentWrapper(0, 0, document, null);
    }

    /** {@code wrapper}'s document in its slots, failed with {@code error} (null: succeeded). */
    static IngestDocumentWrapper withError(IngestDocumentWrapper wrapper, Exception error) {
        return new IngestDocumentWrapper(wrapper.getSlot(), wrapper.getChildSlot(), wrapper.getIngestDocument(), error);
    }
}
