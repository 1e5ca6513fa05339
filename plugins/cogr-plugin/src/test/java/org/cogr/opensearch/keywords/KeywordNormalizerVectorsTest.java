/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.keywords;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.Test;
import org.opensearch.common.xcontent.XContentHelper;
import org.opensearch.common.xcontent.json.JsonXContent;

/**
 * Runs the shared vectors (tests/vectors/normalize.jsonl, also run by the Python tests) so
 * that Java and Python normalize every string alike; a mismatch lists every failing vector.
 */
public class KeywordNormalizerVectorsTest {

    private static Path vectors() {
        String path = System.getProperty("cogr.vectors", "../../tests/vectors/normalize.jsonl");
        return Path.of(path);
    }

    @Test
    public void everySharedVectorAgreesWithPython() throws IOException {
        List<String> lines = Files.readAllLines(vectors(), StandardCharsets.UTF_8);
        List<String> mismatches = new ArrayList<>();
        int checked = 0;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).trim();
            if (line.isEmpty()) {
                continue;
            }
            Map<String, Object> vector = XContentHelper.convertToMap(JsonXContent.jsonXContent, line, false);
            String input = (String) vector.get("input");
            String expected = expected(vector);
            String actual = KeywordNormalizer.normalize(input);
            if (!expected.equals(actual)) {
                mismatches.add("line " + (i + 1) + ": " + escape(input) + " -> " + escape(actual) + ", expected " + escape(expected));
            }
            checked++;
        }
        assertTrue("no vectors read from " + vectors(), checked > 0);
        assertEquals(String.join("\n", mismatches), 0, mismatches.size());
    }

    @Test
    public void normalizingTwiceChangesNothing() throws IOException {
        for (String line : Files.readAllLines(vectors(), StandardCharsets.UTF_8)) {
            if (line.isBlank()) {
                continue;
            }
            String expected = expected(XContentHelper.convertToMap(JsonXContent.jsonXContent, line, false));
            assertEquals(expected, KeywordNormalizer.normalize(expected));
        }
    }

    @Test
    public void representationTruncatesThenAddsTheText() {
        List<String> keywords = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            keywords.add("Kw " + i);
        }
        keywords.add(0, "kw 0");  // duplicate after normalization
        List<String> rep = KeywordNormalizer.representation(keywords, "  Red Shoes! ", 30);
        assertEquals(31, rep.size());
        assertEquals("kw 0", rep.get(0));
        assertEquals("kw 29", rep.get(29));
        assertEquals("red shoes", rep.get(30));
        // the text already in the set is not repeated; an empty text adds nothing
        assertEquals(List.of("red shoes"), KeywordNormalizer.representation(List.of("RED shoes"), "red shoes", 30));
        assertEquals(List.of("a"), KeywordNormalizer.representation(List.of("a", "", "!!"), "  ", 30));
    }

    /** {@code "expected": null} means the input normalizes to nothing (dropped): "" here. */
    private static String expected(Map<String, Object> vector) {
        Object expected = vector.get("expected");
        return expected == null ? "" : (String) expected;
    }

    private static String escape(String s) {
        StringBuilder out = new StringBuilder("\"");
        s.codePoints().forEach(cp -> {
            if (cp < 0x20 || cp > 0x7e) {
                out.append(String.format("\\u{%x}", cp));
            } else {
                out.appendCodePoint(cp);
            }
        });
        return out.append('"').toString();
    }
}
