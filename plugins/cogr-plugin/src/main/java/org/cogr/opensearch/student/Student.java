/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.student;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import org.cogr.opensearch.keywords.KeywordNormalizer;

/**
 * One side's student (the Java twin of {@code students/model.py}'s {@code SideStudent}):
 * a text to its keyword set S, in the run's normal form, without the text's own form (the
 * caller adds it with {@link KeywordNormalizer#representation}).
 */
public final class Student {

    /** Characters of an item's description its student reads after the title (model.py). */
    static final int ITEM_DESCRIPTION_CHARS = 300;

    private final String side;
    private final Featurizer featurizer;
    private final List<String> labels;
    private final Classifier classifier;
    private final int topK;
    private final double threshold;
    private final int copyMinWords;
    private final int kMax;
    private final Set<String> copyable;

    Student(String side, Featurizer featurizer, List<String> labels, Classifier classifier, int topK, double threshold,
            int copyMinWords, int kMax, List<String> copyVocabulary) {
        this.side = side;
        this.featurizer = featurizer;
        this.labels = labels;
        this.classifier = classifier;
        this.topK = topK;
        this.threshold = threshold;
        this.copyMinWords = copyMinWords;
        this.kMax = kMax;
        this.copyable = new HashSet<>(copyVocabulary);
    }

    public String side() {
        return side;
    }

    public int kMax() {
        return kMax;
    }

    /** What an item student reads: the title, a space and the description's first 300 characters, stripped. */
    public static String itemText(String title, String description) {
        String head = description == null ? "" : description;
        int cut = head.codePointCount(0, head.length()) > ITEM_DESCRIPTION_CHARS
            ? head.offsetByCodePoints(0, ITEM_DESCRIPTION_CHARS) : head.length();
        return stripPython((title == null ? "" : title) + " " + head.substring(0, cut));
    }

    /** Python's {@code str.strip()}: its whitespace, not Java's. */
    static String stripPython(String text) {
        int start = 0;
        int end = text.length();
        while (start < end && KeywordNormalizer.isWhitespace(text.charAt(start))) {
            start++;
        }
        while (end > start && KeywordNormalizer.isWhitespace(text.charAt(end - 1))) {
            end--;
        }
        return text.substring(start, end);
    }

    /** The text's word n-grams (longest first, then left to right) that are keywords of the run. */
    List<String> copies(String text) {
        if (copyMinWords <= 0 || copyable.isEmpty()) {
            return List.of();
        }
        String[] words = KeywordNormalizer.normalize(text).split(" ", -1);
        List<String> found = new ArrayList<>();
        for (int n = words.length - 1; n >= copyMinWords; n--) {
            for (int start = 0; start + n <= words.length; start++) {
                String gram = String.join(" ", java.util.Arrays.asList(words).subList(start, start + n));
                if (copyable.contains(gram)) {
                    found.add(gram);
                }
            }
        }
        return found;
    }

    /** Vocabulary keywords with their scores, best first, without the text's own form. */
    List<Scored> scored(String text) {
        String own = KeywordNormalizer.normalize(text);
        List<Scored> found = classifier.predict(featurizer.vector(text), topK + 1);
        List<Scored> out = new ArrayList<>(topK);
        for (Scored s : found) {
            if (out.size() == topK) {
                break;
            }
            if (!labels.get(s.label()).equals(own)) {
                out.add(s);
            }
        }
        return out;
    }

    /** The keyword set S: copied n-grams, then the classifier's keywords within the cut, at most k_max. */
    public List<String> keywords(String text) {
        LinkedHashSet<String> merged = new LinkedHashSet<>(copies(text));
        for (Scored s : scored(text)) {
            if (s.score() >= threshold) {
                merged.add(labels.get(s.label()));
            }
        }
        List<String> out = new ArrayList<>(merged);
        return out.size() > kMax ? new ArrayList<>(out.subList(0, kMax)) : out;
    }
}
