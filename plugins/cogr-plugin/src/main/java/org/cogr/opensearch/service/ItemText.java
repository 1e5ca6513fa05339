/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.service;

/** What the item route takes per item: {@code {"id", "title", "description"}}. */
public record ItemText(String id, String title, String description) {
}
