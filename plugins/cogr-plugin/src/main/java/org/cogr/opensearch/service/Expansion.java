/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.service;

import java.util.List;

/**
 * One answer of the expansion service: a keyword list per input, in input order, and the
 * provenance the service reports ({@code run}, {@code round}, and {@code model}, the
 * {@code cogr_model} tag that sync writes).
 */
public record Expansion(List<List<String>> keywords, String run, Integer round, String model) {
}
