/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.student;

/** A featurized text: feature indices ascending, with their L2-normalised weights. */
public record SparseRow(int[] features, double[] weights) {

    static final SparseRow EMPTY = new SparseRow(new int[0], new double[0]);

    public int size() {
        return features.length;
    }
}
