package io.serene.training;

/**
 * How long a worker that may compute ahead (under a bound s &gt; 0) waits for its pending rounds'
 * aggregates first. The bound says how stale a model may be, not how stale it should be: reading
 * fresher values is always allowed (Ho et al. 2013), and a stale gradient costs accuracy, so a
 * worker computes ahead only when the wait would be long (in the spirit of DSSP, Zhao et al. 2019).
 */
public enum FreshWait {
    /**
     * Up to the worker's own typical compute time (the median of its last rounds'): an aggregate
     * later than one round's work is waiting for a straggler, and the worker goes on with the
     * model it has; one sooner is worth the wait (its work would be stale otherwise).
     */
    COMPUTE,
    /** Not at all: compute ahead as soon as the bound lets the worker. */
    NONE;

    public static FreshWait parse(final String what, final String value) {
        return Choice.parse(FreshWait.class, what, value);
    }

    public String text() {
        return Choice.text(this);
    }
}
