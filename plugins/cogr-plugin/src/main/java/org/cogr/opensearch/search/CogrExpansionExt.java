/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.search;

import java.io.IOException;
import java.util.Map;
import java.util.Objects;

import org.opensearch.core.common.io.stream.StreamOutput;
import org.opensearch.core.xcontent.XContentBuilder;
import org.opensearch.search.SearchExtBuilder;

/**
 * The {@code ext.cogr} section of a search response: what {@code cogr_expand} did with this
 * request ({@code expanded}, {@code fallback}, {@code reason}, {@code model}, ...), so that
 * an app can tell an expanded answer from a fallback to its original query.
 *
 * <p>It is only rendered to the REST response on the coordinating node, where search
 * pipelines run; it is not meant to travel between nodes.
 */
final class CogrExpansionExt extends SearchExtBuilder {

    static final String NAME = "cogr";

    private final Map<String, Object> status;

    CogrExpansionExt(Map<String, Object> status) {
        this.status = status;
    }

    @Override
    public String getWriteableName() {
        return NAME;
    }

    @Override
    public void writeTo(StreamOutput out) throws IOException {
        out.writeMap(status);
    }

    @Override
    public XContentBuilder toXContent(XContentBuilder builder, Params params) throws IOException {
        return builder.field(NAME, status);
    }

    @Override
    public int hashCode() {
        return Objects.hash(status);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof CogrExpansionExt o && status.equals(o.status);
    }
}
