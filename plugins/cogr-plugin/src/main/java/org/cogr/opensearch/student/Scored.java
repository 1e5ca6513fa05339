/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.student;

/** A label index of the student's vocabulary and its score. */
public record Scored(int label, double score) {}
