/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.student;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * An omikuji student's label trees, predicting as the export format defines it
 * ({@code export.Forest.predict} in Python): per tree, a beam search that expands every
 * branch of a level and keeps the {@code max(10, topK)} best accumulated hinge scores (ties
 * by position in the level, the kept ones in level order), then each leaf's labels score
 * {@code exp(score + leaf score)} (its beam best kept, ties by label); a label's score is
 * its sum over the trees, in tree order, over the number of trees.
 */
final class ForestClassifier implements Classifier {

    /** A node: sparse weight columns (features ascending), then children or labels. */
    record Node(int[][] columnFeatures, double[][] columnWeights, Node[] children, int[] labels) {
        boolean isLeaf() {
            return children == null;
        }
    }

    private final int nFeatures;
    private final List<Node> trees;

    ForestClassifier(int nFeatures, List<Node> trees) {
        this.nFeatures = nFeatures;
        this.trees = trees;
    }

    @Override
    public List<Scored> predict(SparseRow row, int topK) {
        if (row.size() == 0) {
            return List.of();
        }
        int beam = Math.max(10, topK);
        // the input with the bias feature (index nFeatures, value 1) last
        int[] features = new int[row.size() + 1];
        double[] values = new double[row.size() + 1];
        System.arraycopy(row.features(), 0, features, 0, row.size());
        System.arraycopy(row.weights(), 0, values, 0, row.size());
        features[row.size()] = nFeatures;
        values[row.size()] = 1.0;
        Map<Integer, Double> totals = new HashMap<>();
        for (Node tree : trees) {
            for (Scored scored : predictTree(tree, features, values, beam)) {
                totals.merge(scored.label(), scored.score(), Double::sum);
            }
        }
        double n = trees.size();
        List<Scored> ranked = new ArrayList<>(totals.size());
        totals.forEach((label, total) -> ranked.add(new Scored(label, total / n)));
        ranked.sort(Comparator.comparingDouble((Scored s) -> -s.score()).thenComparingInt(Scored::label));
        return ranked.size() > topK ? new ArrayList<>(ranked.subList(0, topK)) : ranked;
    }

    private record Entry(double score, Node node) {}

    private static List<Scored> predictTree(Node root, int[] features, double[] values, int beam) {
        List<Entry> level = List.of(new Entry(0.0, root));
        while (level.stream().anyMatch(e -> !e.node().isLeaf())) {
            List<Entry> next = new ArrayList<>();
            for (Entry entry : level) {
                if (entry.node().isLeaf()) {
                    next.add(entry);
                    continue;
                }
                double[] scores = scores(entry.node(), features, values);
                for (int c = 0; c < scores.length; c++) {
                    next.add(new Entry(scores[c] + entry.score(), entry.node().children()[c]));
                }
            }
            if (next.size() > beam) {
                List<Integer> positions = new ArrayList<>(next.size());
                for (int i = 0; i < next.size(); i++) {
                    positions.add(i);
                }
                final List<Entry> all = next;
                positions.sort(Comparator.comparingDouble((Integer i) -> -all.get(i).score()).thenComparingInt(i -> i));
                List<Integer> kept = new ArrayList<>(positions.subList(0, beam));
                kept.sort(null); // the kept nodes stay in level order
                List<Entry> trimmed = new ArrayList<>(beam);
                for (int i : kept) {
                    trimmed.add(all.get(i));
                }
                next = trimmed;
            }
            level = next;
        }
        List<Scored> out = new ArrayList<>();
        for (Entry entry : level) {
            double[] scores = scores(entry.node(), features, values);
            int[] labels = entry.node().labels();
            List<Scored> leaf = new ArrayList<>(labels.length);
            for (int c = 0; c < labels.length; c++) {
                leaf.add(new Scored(labels[c], CogrMath.exp(scores[c] + entry.score())));
            }
            if (leaf.size() > beam) {
                leaf.sort(Comparator.comparingDouble((Scored s) -> -s.score()).thenComparingInt(Scored::label));
                leaf = leaf.subList(0, beam);
            }
            out.addAll(leaf);
        }
        return out;
    }

    /** Each column's hinge score; products added in ascending feature order (a merge walk). */
    private static double[] scores(Node node, int[] features, double[] values) {
        int columns = node.columnFeatures().length;
        double[] out = new double[columns];
        for (int c = 0; c < columns; c++) {
            int[] cf = node.columnFeatures()[c];
            double[] cw = node.columnWeights()[c];
            double s = 0.0;
            int i = 0;
            int j = 0;
            while (i < features.length && j < cf.length) {
                if (features[i] == cf[j]) {
                    s += values[i] * cw[j];
                    i++;
                    j++;
                } else if (features[i] < cf[j]) {
                    i++;
                } else {
                    j++;
                }
            }
            out[c] = CogrMath.hinge(s);
        }
        return out;
    }
}
