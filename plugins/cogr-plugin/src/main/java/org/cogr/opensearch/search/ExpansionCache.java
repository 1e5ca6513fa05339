/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.search;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * A small LRU of query expansions (text -> keywords and the model that made them), with a
 * time to live.
 *
 * <p>Why in the plugin as well as in the service: a cached expansion then costs no HTTP round
 * trip, which keeps a search through the pipeline close to a plain BM25 search. The TTL bounds
 * how long a search keeps using an expansion after the service switched to a new round.
 */
final class ExpansionCache {

    /** One cached expansion. */
    record Entry(java.util.List<String> keywords, String model, Integer round, long atNanos) {
    }

    private final int capacity;
    private final long ttlNanos;
    private final LongSupplier nanoClock;
    private final LinkedHashMap<String, Entry> entries;

    ExpansionCache(int capacity, long ttlNanos, LongSupplier nanoClock) {
        this.capacity = capacity;
        this.ttlNanos = ttlNanos;
        this.nanoClock = nanoClock;
        // ExpansionCache.Entry spelled out: inside a LinkedHashMap subclass a bare "Entry"
        // names the map's own inherited Entry type when compiled for Java 21 (OpenSearch 3.x).
        this.entries = new LinkedHashMap<String, ExpansionCache.Entry>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, ExpansionCache.Entry> eldest) {
                return size() > ExpansionCache.this.capacity;
            }
        };
    }

    /** The fresh entry for {@code text}, or null. */
    synchronized Entry get(String text) {
        if (capacity == 0) {
            return null;
        }
        Entry entry = entries.get(text);
        if (entry != null && nanoClock.getAsLong() - entry.atNanos() > ttlNanos) {
            entries.remove(text);
            return null;
        }
        return entry;
    }

    synchronized void put(String text, java.util.List<String> keywords, String model, Integer round) {
        if (capacity > 0) {
            entries.put(text, new Entry(keywords, model, round, nanoClock.getAsLong()));
        }
    }
}
