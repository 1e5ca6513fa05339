/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.service;

/**
 * The expansion service could not be reached, timed out, or answered something other than
 * the contract; the message is one line naming the URL and what went wrong.
 */
public class ExpansionServiceException extends RuntimeException {

    public ExpansionServiceException(String message) {
        super(message);
    }

    public ExpansionServiceException(String message, Throwable cause) {
        super(message, cause);
    }
}
