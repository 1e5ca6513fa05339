/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.student;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;

import org.cogr.opensearch.keywords.KeywordNormalizer;
import org.junit.Test;
import org.opensearch.common.xcontent.XContentHelper;
import org.opensearch.common.xcontent.json.JsonXContent;

/**
 * The shared student fixtures (tests/vectors/students/, written by
 * tests/make_student_vectors.py from the Python students): for every query and item of the
 * sample run, the Java student gives the same keywords, in the same order, and the same
 * representation as Python. A mismatch lists every failing text.
 */
public class StudentVectorsTest {

    static Path vectors() {
        return Path.of(System.getProperty("cogr.student.vectors", "../../tests/vectors/students"));
    }

    static Student student(String model, String side) throws IOException {
        try (InputStream in = new GZIPInputStream(Files.newInputStream(vectors().resolve(model).resolve(side + ".json.gz")))) {
            return StudentReader.read(in);
        }
    }

    static List<Map<String, Object>> expected(String model) throws IOException {
        List<Map<String, Object>> rows = new ArrayList<>();
        Path path = vectors().resolve(model).resolve("expected.jsonl.gz");
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(new GZIPInputStream(Files.newInputStream(path)), StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                if (!line.isBlank()) {
                    rows.add(XContentHelper.convertToMap(JsonXContent.jsonXContent, line, false));
                }
            }
        }
        return rows;
    }

    private static void checkModel(String model) throws IOException {
        Student query = student(model, "query");
        Student item = student(model, "item");
        List<String> mismatches = new ArrayList<>();
        int queries = 0;
        int items = 0;
        int withKeywords = 0;
        for (Map<String, Object> row : expected(model)) {
            List<String> keywords;
            List<String> representation;
            String what;
            if ("query".equals(row.get("side"))) {
                String text = (String) row.get("text");
                keywords = query.keywords(text);
                representation = KeywordNormalizer.representation(keywords, text, query.kMax());
                what = "query " + text;
                queries++;
            } else {
                String title = (String) row.get("title");
                keywords = item.keywords(Student.itemText(title, (String) row.get("description")));
                representation = KeywordNormalizer.representation(keywords, title, item.kMax());
                what = "item " + row.get("id");
                items++;
            }
            if (!keywords.isEmpty()) {
                withKeywords++;
            }
            if (!keywords.equals(row.get("keywords")) || !representation.equals(row.get("representation"))) {
                mismatches.add(what + ": " + keywords + " / " + representation + ", expected " + row.get("keywords") + " / " + row.get("representation"));
            }
        }
        assertTrue(model + ": queries " + queries + ", items " + items, queries > 100 && items > 300);
        assertTrue(model + ": only " + withKeywords + " texts with keywords", withKeywords > (queries + items) / 2);
        assertEquals(mismatches.size() + " mismatches:\n" + String.join("\n", mismatches.subList(0, Math.min(20, mismatches.size()))), 0, mismatches.size());
    }

    @Test
    public void knnStudentsGiveWhatPythonGives() throws IOException {
        checkModel("knn");
    }

    @Test
    public void forestStudentsGiveWhatPythonGives() throws IOException {
        checkModel("omikuji");
    }

    @Test
    public void anotherVersionIsRefusedInOneLine() {
        String json = "{\"format\": \"cogr-student\", \"version\": 2, \"normalization\": \"1\"}";
        try {
            StudentReader.read(new java.io.ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8)));
            fail("version 2 was read");
        } catch (IllegalArgumentException | IOException e) {
            assertEquals("student export: format cogr-student version 2 (expected cogr-student 1)", e.getMessage());
        }
    }

    @Test
    public void expMatchesTheJdkWithinAnUlp() {
        for (int i = -70000; i <= 0; i++) {
            double x = i / 100.0;
            double mine = CogrMath.exp(x);
            double jdk = StrictMath.exp(x);
            assertTrue(x + ": " + mine + " vs " + jdk, Math.abs(mine - jdk) <= 2 * Math.ulp(jdk));
        }
    }
}
