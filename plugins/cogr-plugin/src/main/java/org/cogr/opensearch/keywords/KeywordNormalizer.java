/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.keywords;

import java.text.Normalizer;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The Java twin of {@code cogr_search/keywords.py}: {@code normalize}, {@code keyword_set}
 * and {@code representation}.
 *
 * <p>Why a copy of the rules exists at all: matching is exact equality of normalized keywords
 * (DESIGN.md section 1), and the plugin writes {@code cogr_keywords} at ingest and builds the
 * {@code terms} filter at search time without the Python side in the loop. Both sides must
 * therefore agree on every string; the shared vectors in {@code tests/vectors/normalize.jsonl}
 * are run against this class by a Maven test. Change the rules only together with Python.
 *
 * <p>The rules, in order: NFKC; lowercase with {@link Locale#ROOT} (Python {@code str.lower});
 * drop control/format characters (Cc, Cf) that are not whitespace; strip leading and trailing
 * whitespace, punctuation (P*) and decorative symbols (So, Sk); collapse every run of
 * whitespace to one space. Strings are walked by code point, so emoji outside the BMP are
 * classified as one character, as Python does.
 */
public final class KeywordNormalizer {

    /** Keyword-set budget K_max (paper Section 3.3), as {@code DEFAULT_K_MAX} in Python. */
    public static final int DEFAULT_K_MAX = 30;

    /** Exactly the characters Python's {@code str.isspace} accepts (keywords.py WHITESPACE). */
    static final String WHITESPACE = "\t\n\u000b\u000c\r\u001c\u001d\u001e\u001f \u0085\u00a0\u1680"
        + "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
        + "\u2028\u2029\u202f\u205f\u3000";

    private KeywordNormalizer() {
    }

    /** Whether {@code cp} counts as whitespace for normalization (Python {@code isspace}). */
    public static boolean isWhitespace(int cp) {
        return cp <= 0xFFFF && WHITESPACE.indexOf(cp) >= 0;
    }

    /** Leading/trailing junk: whitespace, punctuation (P*), other and modifier symbols (So, Sk). */
    static boolean isEdgeJunk(int cp) {
        if (isWhitespace(cp)) {
            return true;
        }
        switch (Character.getType(cp)) {
            case Character.CONNECTOR_PUNCTUATION:
            case Character.DASH_PUNCTUATION:
            case Character.START_PUNCTUATION:
            case Character.END_PUNCTUATION:
            case Character.INITIAL_QUOTE_PUNCTUATION:
            case Character.FINAL_QUOTE_PUNCTUATION:
            case Character.OTHER_PUNCTUATION:
            case Character.OTHER_SYMBOL:
            case Character.MODIFIER_SYMBOL:
                return true;
            default:
                return false;
        }
    }

    /** Invisible characters that are removed: Cc and Cf, except whitespace controls. */
    static boolean isInvisible(int cp) {
        int type = Character.getType(cp);
        return (type == Character.CONTROL || type == Character.FORMAT) && !isWhitespace(cp);
    }

    /** The canonical form of one keyword; "" when nothing is left (callers drop it). */
    public static String normalize(String text) {
        String folded = Normalizer.normalize(text, Normalizer.Form.NFKC).toLowerCase(Locale.ROOT);
        int[] cps = folded.codePoints().filter(cp -> !isInvisible(cp)).toArray();
        int start = 0;
        int end = cps.length;
        while (start < end && isEdgeJunk(cps[start])) {
            start++;
        }
        while (end > start && isEdgeJunk(cps[end - 1])) {
            end--;
        }
        StringBuilder out = new StringBuilder(end - start);
        boolean inSpace = false;
        for (int i = start; i < end; i++) {
            int cp = cps[i];
            if (isWhitespace(cp)) {
                if (!inSpace) {
                    out.append(' ');
                }
                inSpace = true;
            } else {
                out.appendCodePoint(cp);
                inSpace = false;
            }
        }
        return out.toString();
    }

    /** Normalize each keyword, drop empties, de-duplicate keeping first-seen order. */
    public static List<String> keywordSet(Iterable<String> keywords) {
        Set<String> seen = new LinkedHashSet<>();
        for (String keyword : keywords) {
            String norm = normalize(keyword);
            if (!norm.isEmpty()) {
                seen.add(norm);
            }
        }
        return new ArrayList<>(seen);
    }

    /**
     * {@code S ∪ {normalize(text)}}, with {@code S} truncated to {@code kMax} first: what an
     * item (text = title) or a query (text = the query) matches with, as Python's
     * {@code representation}.
     */
    public static List<String> representation(List<String> keywords, String text, int kMax) {
        List<String> base = keywordSet(keywords);
        if (base.size() > kMax) {
            base = base.subList(0, kMax);
        }
        List<String> all = new ArrayList<>(base);
        all.add(text == null ? "" : text);
        return keywordSet(all);
    }
}
