/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.service;

import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.opensearch.common.unit.TimeValue;

/**
 * Where the processors get keywords: the expansion service over HTTP
 * ({@link ExpansionServiceClient}) or the run's students inside this node
 * ({@code student.StudentExpander}). Answers are futures; a student's are usually complete
 * at once, and the processors then continue on the calling thread.
 */
public interface Expander {

    /** Keywords for each query text, in order. */
    CompletableFuture<Expansion> expandQueries(List<String> texts, TimeValue timeout);

    /** Keywords for each item, in order. */
    CompletableFuture<Expansion> expandItems(List<ItemText> items, TimeValue timeout);

    /** The {@code cogr_model} tag of what expands now; null when unknown. */
    CompletableFuture<String> model(TimeValue timeout);
}
