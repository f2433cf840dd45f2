package io.serene.training;

/**
 * The model a worker computes a round's gradient on when it computes ahead: before the
 * aggregates of its last rounds are applied (under a bound s &gt; 0; never under BSP, where nothing
 * is pending). Each pending round's step is taken as it will be (its momentum and learning rate,
 * the velocity carried on), with what the worker knows of that round's aggregate.
 */
public enum ComputeOn {
    /** The model as applied: the pending rounds left out. */
    APPLIED,
    /**
     * Read-my-writes (Ho et al. 2013): the pending rounds with this worker's own gradients, scaled
     * by 1 / N as they appear in an averaged aggregate; the others' unknown (zero).
     */
    OWN,
    /**
     * {@link #OWN} with the others' gradients of each pending round predicted as the last applied
     * aggregate ((N - 1) / N of it): the step the round will most likely take.
     */
    PREDICTED;

    public static ComputeOn parse(final String what, final String value) {
        return Choice.parse(ComputeOn.class, what, value);
    }

    public String text() {
        return Choice.text(this);
    }
}
