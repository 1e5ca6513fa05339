/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.student;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.cogr.opensearch.keywords.KeywordNormalizer;
import org.opensearch.common.xcontent.XContentHelper;
import org.opensearch.common.xcontent.json.JsonXContent;

/**
 * Reads the students' export format ({@code cogr-student} version 1, written by Python's
 * {@code students/export.py}; docs/students.md#export-format). A file of another format,
 * version or normalization, or with a missing or mistyped field, is refused with an
 * {@link IllegalArgumentException} whose one line names the field.
 */
public final class StudentReader {

    public static final String FORMAT = "cogr-student";
    public static final int VERSION = 1;
    /** keywords.NORMALIZATION_VERSION this plugin's {@link KeywordNormalizer} implements. */
    public static final String NORMALIZATION = "1";

    private StudentReader() {}

    public static Student read(InputStream json) throws IOException {
        Map<String, Object> root;
        try {
            root = XContentHelper.convertToMap(JsonXContent.jsonXContent, json, false);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("student export: not JSON (" + e.getMessage() + ")", e);
        }
        return fromMap(root);
    }

    static Student fromMap(Map<String, Object> root) {
        if (!FORMAT.equals(root.get("format")) || !Integer.valueOf(VERSION).equals(root.get("version"))) {
            throw new IllegalArgumentException(
                "student export: format " + root.get("format") + " version " + root.get("version") + " (expected " + FORMAT + " " + VERSION + ")"
            );
        }
        if (!NORMALIZATION.equals(root.get("normalization"))) {
            throw new IllegalArgumentException(
                "student export: normalization " + root.get("normalization") + " (this plugin has " + NORMALIZATION + ")"
            );
        }
        Map<String, Object> featurizerJson = map(root, "featurizer");
        if (!List.of(3, 4, 5).equals(featurizerJson.get("char_ngrams"))) {
            throw new IllegalArgumentException("student export: field featurizer.char_ngrams: expected [3, 4, 5]");
        }
        Featurizer featurizer = new Featurizer(strings(featurizerJson, "ngrams"), doubles(list(featurizerJson, "idf")));
        List<String> labels = strings(root, "labels");
        Map<String, Object> cut = map(root, "cut");
        Map<String, Object> classifierJson = map(root, "classifier");
        Classifier classifier = switch (String.valueOf(classifierJson.get("type"))) {
            case "knn" -> knn(classifierJson);
            case "forest" -> forest(classifierJson);
            default -> throw new IllegalArgumentException("student export: field classifier.type: " + classifierJson.get("type"));
        };
        return new Student(
            String.valueOf(root.get("side")),
            featurizer,
            labels,
            classifier,
            integer(cut, "top_k"),
            number(cut, "threshold"),
            integer(cut, "copy_min_words"),
            integer(root, "k_max"),
            strings(root, "copy_vocabulary")
        );
    }

    private static KnnClassifier knn(Map<String, Object> json) {
        List<SparseRow> rows = new ArrayList<>();
        for (Object row : list(json, "rows")) {
            rows.add(pairs((List<?>) row));
        }
        List<Object> labelSets = list(json, "labels");
        int[][] labels = new int[labelSets.size()][];
        for (int i = 0; i < labels.length; i++) {
            labels[i] = ints((List<?>) labelSets.get(i));
        }
        return new KnnClassifier(integer(json, "neighbours"), rows, labels);
    }

    private static ForestClassifier forest(Map<String, Object> json) {
        if (!"hinge".equals(json.get("loss"))) {
            throw new IllegalArgumentException("student export: field classifier.loss: " + json.get("loss") + " (expected hinge)");
        }
        List<ForestClassifier.Node> trees = new ArrayList<>();
        for (Object tree : list(json, "trees")) {
            trees.add(node(asMap(tree, "classifier.trees[]")));
        }
        return new ForestClassifier(integer(json, "n_features"), trees);
    }

    private static ForestClassifier.Node node(Map<String, Object> json) {
        List<Object> columns = list(json, "columns");
        int[][] features = new int[columns.size()][];
        double[][] weights = new double[columns.size()][];
        for (int c = 0; c < columns.size(); c++) {
            SparseRow column = pairs((List<?>) columns.get(c));
            features[c] = column.features();
            weights[c] = column.weights();
        }
        if (json.containsKey("children")) {
            List<Object> children = list(json, "children");
            ForestClassifier.Node[] nodes = new ForestClassifier.Node[children.size()];
            for (int i = 0; i < nodes.length; i++) {
                nodes[i] = node(asMap(children.get(i), "children[]"));
            }
            if (nodes.length != columns.size()) {
                throw new IllegalArgumentException("student export: a branch has " + columns.size() + " columns for " + nodes.length + " children");
            }
            return new ForestClassifier.Node(features, weights, nodes, null);
        }
        int[] labels = ints(list(json, "labels"));
        if (labels.length != columns.size()) {
            throw new IllegalArgumentException("student export: a leaf has " + columns.size() + " columns for " + labels.length + " labels");
        }
        return new ForestClassifier.Node(features, weights, null, labels);
    }

    /** [[feature, weight], ...] as a row. */
    private static SparseRow pairs(List<?> pairs) {
        int[] features = new int[pairs.size()];
        double[] weights = new double[pairs.size()];
        for (int i = 0; i < features.length; i++) {
            List<?> pair = (List<?>) pairs.get(i);
            features[i] = ((Number) pair.get(0)).intValue();
            weights[i] = ((Number) pair.get(1)).doubleValue();
        }
        return new SparseRow(features, weights);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(Object value, String field) {
        if (!(value instanceof Map)) {
            throw new IllegalArgumentException("student export: field " + field + ": expected an object");
        }
        return (Map<String, Object>) value;
    }

    private static Map<String, Object> map(Map<String, Object> json, String field) {
        return asMap(json.get(field), field);
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Map<String, Object> json, String field) {
        Object value = json.get(field);
        if (!(value instanceof List)) {
            throw new IllegalArgumentException("student export: field " + field + ": expected a list");
        }
        return (List<Object>) value;
    }

    private static List<String> strings(Map<String, Object> json, String field) {
        List<String> out = new ArrayList<>();
        for (Object value : list(json, field)) {
            out.add((String) value);
        }
        return out;
    }

    private static double[] doubles(List<?> values) {
        double[] out = new double[values.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ((Number) values.get(i)).doubleValue();
        }
        return out;
    }

    private static int[] ints(List<?> values) {
        int[] out = new int[values.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ((Number) values.get(i)).intValue();
        }
        return out;
    }

    private static int integer(Map<String, Object> json, String field) {
        if (!(json.get(field) instanceof Number n)) {
            throw new IllegalArgumentException("student export: field " + field + ": expected a number");
        }
        return n.intValue();
    }

    private static double number(Map<String, Object> json, String field) {
        if (!(json.get(field) instanceof Number n)) {
            throw new IllegalArgumentException("student export: field " + field + ": expected a number");
        }
        return n.doubleValue();
    }
}
