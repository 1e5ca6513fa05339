/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.service;

import java.util.function.Consumer;
import java.util.function.Supplier;

import org.opensearch.common.util.concurrent.ThreadContext;

/**
 * Brings the completion of a service call back onto an OpenSearch thread, with the thread
 * context of the request that started it.
 *
 * <p>Why: the JDK HTTP client completes its futures on its own threads, which carry no
 * OpenSearch thread context (request headers, security identity) and must not run search or
 * indexing work. {@link #capture()} is called on the request's thread before the call; the
 * returned {@link Resumer} runs the continuation on the generic pool with that context
 * restored.
 */
public final class ResumeOnNode {

    private final ThreadContext threadContext;
    private final Consumer<Runnable> executor;

    public ResumeOnNode(ThreadContext threadContext, Consumer<Runnable> executor) {
        this.threadContext = threadContext;
        this.executor = executor;
    }

    /** Remember the current thread context; call on the request's thread. */
    public Resumer capture() {
        return new Resumer(threadContext.newRestorableContext(false));
    }

    /** Runs continuations with a captured context on the node's generic pool. */
    public final class Resumer {
        private final Supplier<ThreadContext.StoredContext> context;

        private Resumer(Supplier<ThreadContext.StoredContext> context) {
            this.context = context;
        }

        /**
         * Runs {@code then} with the future's outcome: at once on this thread when the future is
         * already complete (a loaded student answers without waiting), else on the generic
         * pool with the captured context when it completes.
         */
        public <T> void when(java.util.concurrent.CompletableFuture<T> future, java.util.function.BiConsumer<T, Throwable> then) {
            if (future.isDone()) {
                T value = null;
                Throwable error = null;
                try {
                    value = future.join();
                } catch (RuntimeException e) {
                    error = e;
                }
                then.accept(value, error);
                return;
            }
            future.whenComplete((value, error) -> resume(() -> then.accept(value, error)));
        }

        public void resume(Runnable continuation) {
            executor.accept(() -> {
                try (ThreadContext.StoredContext ignored = context.get()) {
                    continuation.run();
                }
            });
        }
    }
}
