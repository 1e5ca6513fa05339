package org.cogr.opensearch;

/**
 * The item document's field names (DESIGN.md section 3), in one place for every processor,
 * as {@code cogr_search/cluster/documents.py} holds them for Python: the mapping, the
 * documents the plugin writes and the queries it builds cannot drift apart.
 */
public final class DocumentFields {

    /** The item's keyword set {@code S_i ∪ {title}}, a multi-valued {@code keyword}. */
    public static final String KEYWORDS = "cogr_keywords";
    /** The {@code text} sub-field of the keywords: BM25 over the keyword bag. */
    public static final String KEYWORDS_TEXT = KEYWORDS + ".text";
    /** Provenance: the round whose item generator wrote the keywords. */
    public static final String ROUND = "cogr_round";
    /** Provenance: run name + round + weights hash of that generator. */
    public static final String MODEL = "cogr_model";
    /** Provenance: when the keywords were written (ISO 8601, UTC, seconds). */
    public static final String UPDATED_AT = "cogr_updated_at";

    private DocumentFields() {
    }
}
