package io.serene.worker;

/**
 * A worker could not do what was asked: the switch refused it, did not answer, or the call was
 * invalid; {@link #lost()} says whether it lost the job or its place in it, from which the caller
 * may join again from checkpoints.
 */
public final class WorkerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** What a worker lost that joining again from checkpoints can bring back. */
    public enum Lost {
        /** Nothing of the kind: the failure is of another sort. */
        NOTHING,
        /**
         * The job: the switch no longer has it (it restarted, the job's lease ran out, or a worker back
         * from a checkpoint rebuilds it); every worker joins again, offering its own checkpoints.
         */
        JOB,
        /**
         * Its place in the job: the job went on past rounds whose results this worker never got; it
         * joins again as a restarted worker does, from the newest checkpoint any worker holds.
         */
        PLACE
    }

    private final Lost lost;

    public WorkerException(final String message) {
        this(message, Lost.NOTHING);
    }

    public WorkerException(final String message, final Lost lost) {
        super(message);
        this.lost = lost;
    }

    /** What the worker lost that a REBUILD JOIN from checkpoints can bring back. */
    public Lost lost() {
        return lost;
    }
}
