/*
 * cogr-search: a start failure of a local node launcher.
 */
package org.cogr.launcher;

/** A start failure that must be reported as one line on stderr and a given exit status. */
public final class StartFailure extends Exception {

    private final int exitStatus;

    public StartFailure(String message, int exitStatus) {
        super(message);
        this.exitStatus = exitStatus;
    }

    public int exitStatus() {
        return exitStatus;
    }
}
