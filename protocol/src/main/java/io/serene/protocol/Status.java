package io.serene.protocol;

/** Result codes carried in the header's status field (JOIN_ACK, NACK) and returned by control operations. */
public enum Status {
    OK(0),
    /** The switch has no free job entry (its budget allows no more jobs). */
    TABLE_FULL(1),
    /** The job exists with another shape (worker count or elements per round). */
    SHAPE_MISMATCH(2),
    /** A field is out of range: worker id, worker count, element count. */
    BAD_KEY(3),
    /** The job is unknown to the switch. */
    UNKNOWN_JOB(4),
    /** The contribution is for a step or round too far ahead of what the switch holds. */
    AHEAD(5),
    /** The contribution is for a step whose slot has been reused; its result is gone. */
    STALE(6),
    /** The contribution arrived after its chunk was released without it (drop or fold it). */
    LATE(7),
    /** A config change names a first round some worker may already have started. */
    TOO_EARLY(8),
    /** A table insert whose key is taken (modify it instead). */
    DUPLICATE_ENTRY(9),
    /** A table modify or delete whose key has no entry. */
    NOT_FOUND(10),
    /** The worker id is joined from another address: a JOIN may not take it over. */
    IN_USE(11),
    /** The JOIN's MAC is not its worker's: the sender does not hold the worker's key. */
    BAD_MAC(12),
    /** JOIN_ACK to a REBUILD JOIN: the job is formed anew once every worker joined; join again. */
    PENDING(13),
    /** JOIN_ACK to an older incarnation of a worker: a newer one (restarted) joined since; this one must stop. */
    FENCED(14),
    /**
     * NACK to a resent contribution of a step still open: the switch holds this worker's part, the step waits for
     * others; the worker stops resending it and waits for the result.
     */
    HELD(15);

    private final int code;

    Status(final int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    public static Status fromCode(final int code) {
        for (final Status status : values()) {
            if (status.code == code) {
                return status;
            }
        }
        return null;
    }
}
