package io.serene.worker;

/**
 * A worker could not do what was asked: the switch refused it, did not answer, or the call was
 * invalid; {@link #jobLost()}: the switch no longer has the job (it restarted, or a worker back from
 * a checkpoint rebuilds it), so the caller may join again from its checkpoints.
 */
public final class WorkerException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final boolean jobLost;

    public WorkerException(final String message) {
        this(message, false);
    }

    public WorkerException(final String message, final boolean jobLost) {
        super(message);
        this.jobLost = jobLost;
    }

    /** Whether the switch no longer has the job (a REBUILD JOIN from checkpoints can bring it back). */
    public boolean jobLost() {
        return jobLost;
    }
}
