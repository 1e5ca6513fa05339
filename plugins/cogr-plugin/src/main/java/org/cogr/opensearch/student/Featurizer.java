/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.student;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.cogr.opensearch.keywords.KeywordNormalizer;

/**
 * The Java twin of {@code cogr_search/generators/students/featurizer.py}: word 1-2-grams
 * and character 3-5-grams of each word (padded with a space each side), tf-idf weighted,
 * L2-normalised. Character n-grams count code points, as Python's strings do, and the
 * sums run in Python's order so that the weights are the same doubles.
 */
final class Featurizer {

    private static final int[] CHAR_NGRAMS = {3, 4, 5};

    private final Map<String, Integer> index;
    private final double[] idf;

    Featurizer(List<String> ngrams, double[] idf) {
        if (ngrams.size() != idf.length) {
            throw new IllegalArgumentException("featurizer: " + ngrams.size() + " n-grams but " + idf.length + " idf weights");
        }
        this.index = new HashMap<>(ngrams.size() * 2);
        for (int i = 0; i < ngrams.size(); i++) {
            index.put(ngrams.get(i), i);
        }
        this.idf = idf;
    }

    int size() {
        return idf.length;
    }

    /** The words of a text: runs of Python's {@code \w} in its normal form. */
    static List<String> wordsOf(String text) {
        String normal = KeywordNormalizer.normalize(text);
        List<String> words = new ArrayList<>();
        int start = -1;
        int i = 0;
        while (i < normal.length()) {
            int cp = normal.codePointAt(i);
            if (isWordChar(cp)) {
                if (start < 0) {
                    start = i;
                }
            } else if (start >= 0) {
                words.add(normal.substring(start, i));
                start = -1;
            }
            i += Character.charCount(cp);
        }
        if (start >= 0) {
            words.add(normal.substring(start));
        }
        return words;
    }

    /**
     * Python's {@code \w} on str patterns: {@code str.isalnum()} (letters, and the digit,
     * decimal and numeric characters, i.e. categories Nd, Nl, No) or the underscore.
     */
    static boolean isWordChar(int cp) {
        if (cp == '_' || Character.isLetterOrDigit(cp)) {
            return true;
        }
        int type = Character.getType(cp);
        return type == Character.LETTER_NUMBER || type == Character.OTHER_NUMBER;
    }

    /** A word's own n-grams: {@code "w " + word} and its padded character n-grams. */
    static List<String> wordNgrams(String word) {
        int[] padded = (" " + word + " ").codePoints().toArray();
        List<String> out = new ArrayList<>();
        out.add("w " + word);
        for (int n : CHAR_NGRAMS) {
            if (n > padded.length) {
                break;
            }
            for (int i = 0; i + n <= padded.length; i++) {
                out.add("c " + new String(padded, i, n));
            }
        }
        return out;
    }

    /** (feature, weight) pairs by ascending feature, L2-normalised; unknown n-grams dropped. */
    SparseRow vector(String text) {
        List<String> words = wordsOf(text);
        TreeMap<Integer, Integer> counts = new TreeMap<>();
        for (String word : words) {
            for (String gram : wordNgrams(word)) {
                count(counts, gram);
            }
        }
        for (int i = 0; i + 1 < words.size(); i++) {
            count(counts, "w " + words.get(i) + " " + words.get(i + 1));
        }
        if (counts.isEmpty()) {
            return SparseRow.EMPTY;
        }
        int[] features = new int[counts.size()];
        double[] weights = new double[counts.size()];
        int n = 0;
        double square = 0.0;
        for (Map.Entry<Integer, Integer> entry : counts.entrySet()) {
            double w = entry.getValue() * idf[entry.getKey()];
            features[n] = entry.getKey();
            weights[n] = w;
            square += w * w;
            n++;
        }
        double norm = Math.sqrt(square);
        for (int i = 0; i < n; i++) {
            weights[i] = weights[i] / norm;
        }
        return new SparseRow(features, weights);
    }

    private void count(TreeMap<Integer, Integer> counts, String gram) {
        Integer feature = index.get(gram);
        if (feature != null) {
            counts.merge(feature, 1, Integer::sum);
        }
    }
}
