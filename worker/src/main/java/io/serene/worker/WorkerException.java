package io.serene.worker;

/** A worker could not do what was asked: the switch refused it, did not answer, or the call was invalid. */
public final class WorkerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public WorkerException(final String message) {
        super(message);
    }
}
