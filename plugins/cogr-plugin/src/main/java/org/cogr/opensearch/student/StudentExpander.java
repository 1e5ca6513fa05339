/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.student;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.cogr.opensearch.service.Expander;
import org.cogr.opensearch.service.Expansion;
import org.cogr.opensearch.service.ItemText;
import org.opensearch.common.unit.TimeValue;

/**
 * Expansion by a stored student inside the node (no service): {@code model} is the model id
 * ({@code run+r<round>+student-<digest>}), which is also the {@code cogr_model} tag written
 * on documents, as sync writes it. Expanding is a few hundred microseconds of CPU per text,
 * done on the calling thread once the student is loaded.
 */
public final class StudentExpander implements Expander {

    private final StudentStore store;
    private final String modelId;
    private final String run;
    private final Integer round;

    public StudentExpander(StudentStore store, String modelId, String run, Integer round) {
        this.store = store;
        this.modelId = modelId;
        this.run = run;
        this.round = round;
    }

    public String modelId() {
        return modelId;
    }

    @Override
    public CompletableFuture<Expansion> expandQueries(List<String> texts, TimeValue timeout) {
        return store.get(modelId).thenApply(student -> {
            List<List<String>> out = new ArrayList<>(texts.size());
            for (String text : texts) {
                out.add(student.keywords(text));
            }
            return new Expansion(out, run, round, modelId);
        });
    }

    @Override
    public CompletableFuture<Expansion> expandItems(List<ItemText> items, TimeValue timeout) {
        return store.get(modelId).thenApply(student -> {
            List<List<String>> out = new ArrayList<>(items.size());
            for (ItemText item : items) {
                out.add(student.keywords(Student.itemText(item.title(), item.description())));
            }
            return new Expansion(out, run, round, modelId);
        });
    }

    /** The model id when the student loads (so enriched documents are skipped), else null. */
    @Override
    public CompletableFuture<String> model(TimeValue timeout) {
        return store.get(modelId).handle((student, error) -> error == null ? modelId : null);
    }
}
