/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.student;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The knn student of {@code backends.KnnClassifier}: the {@code neighbours} training texts
 * most similar by cosine vote for their labels with their similarity; a label's score is its
 * share of the votes. The similarities are summed feature by feature in the input's order,
 * postings in training-row order, as numpy's {@code bincount} does; neighbours are ranked by
 * similarity then row, labels by score then index.
 */
final class KnnClassifier implements Classifier {

    private final int neighbours;
    private final int rowCount;
    private final int[][] labels;
    /** feature -> (rows, weights) postings, rows ascending. */
    private final Map<Integer, int[]> postingRows;
    private final Map<Integer, double[]> postingWeights;

    KnnClassifier(int neighbours, List<SparseRow> rows, int[][] labels) {
        if (rows.size() != labels.length) {
            throw new IllegalArgumentException("knn: " + rows.size() + " rows but " + labels.length + " label sets");
        }
        this.neighbours = neighbours;
        this.rowCount = rows.size();
        this.labels = labels;
        Map<Integer, List<double[]>> postings = new LinkedHashMap<>();
        for (int n = 0; n < rows.size(); n++) {
            SparseRow row = rows.get(n);
            for (int i = 0; i < row.size(); i++) {
                postings.computeIfAbsent(row.features()[i], f -> new ArrayList<>()).add(new double[] {n, row.weights()[i]});
            }
        }
        this.postingRows = new java.util.HashMap<>(postings.size() * 2);
        this.postingWeights = new java.util.HashMap<>(postings.size() * 2);
        for (Map.Entry<Integer, List<double[]>> entry : postings.entrySet()) {
            List<double[]> list = entry.getValue();
            int[] ids = new int[list.size()];
            double[] ws = new double[list.size()];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = (int) list.get(i)[0];
                ws[i] = list.get(i)[1];
            }
            postingRows.put(entry.getKey(), ids);
            postingWeights.put(entry.getKey(), ws);
        }
    }

    @Override
    public List<Scored> predict(SparseRow row, int topK) {
        double[] scores = new double[rowCount];
        boolean hit = false;
        for (int i = 0; i < row.size(); i++) {
            int[] ids = postingRows.get(row.features()[i]);
            if (ids == null) {
                continue;
            }
            hit = true;
            double[] ws = postingWeights.get(row.features()[i]);
            double w = row.weights()[i];
            for (int j = 0; j < ids.length; j++) {
                scores[ids[j]] += ws[j] * w;
            }
        }
        if (!hit) {
            return List.of();
        }
        Integer[] order = new Integer[rowCount];
        for (int n = 0; n < rowCount; n++) {
            order[n] = n;
        }
        // numpy's argsort(-scores, kind="stable"): by score descending, ties by row
        Arrays.sort(order, (a, b) -> {
            int bySimilarity = Double.compare(scores[b], scores[a]);
            return bySimilarity != 0 ? bySimilarity : Integer.compare(a, b);
        });
        Map<Integer, Double> votes = new java.util.HashMap<>();
        double total = 0.0;
        for (int k = 0; k < Math.min(neighbours, rowCount); k++) {
            int n = order[k];
            double sim = scores[n];
            if (sim <= 0) {
                break;
            }
            total += sim;
            for (int label : labels[n]) {
                votes.merge(label, sim, Double::sum);
            }
        }
        List<Scored> ranked = new ArrayList<>(votes.size());
        final double sum = total;
        votes.forEach((label, vote) -> ranked.add(new Scored(label, vote)));
        ranked.sort(Comparator.comparingDouble((Scored s) -> -s.score()).thenComparingInt(Scored::label));
        List<Scored> out = new ArrayList<>(Math.min(topK, ranked.size()));
        for (int i = 0; i < Math.min(topK, ranked.size()); i++) {
            out.add(new Scored(ranked.get(i).label(), ranked.get(i).score() / sum));
        }
        return out;
    }
}
