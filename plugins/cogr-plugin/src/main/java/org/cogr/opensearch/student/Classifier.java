/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.student;

import java.util.List;

/** A student's multi-label classifier: a featurized text to its best labels, best first. */
interface Classifier {

    List<Scored> predict(SparseRow row, int topK);
}
