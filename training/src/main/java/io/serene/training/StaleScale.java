package io.serene.training;

/**
 * How a worker weighs a gradient it computed ahead of its pending rounds before it contributes it:
 * a staleness-aware step (Zhang et al., IJCAI 2016). The weight is applied to the worker's own
 * contribution, so every worker still applies the same aggregate with the same step.
 */
public enum StaleScale {
    /** Every gradient at full weight. */
    NONE,
    /** A gradient computed with τ rounds pending counts 1 / (1 + τ). */
    INVERSE;

    public static StaleScale parse(final String what, final String value) {
        return Choice.parse(StaleScale.class, what, value);
    }

    public String text() {
        return Choice.text(this);
    }

    /** The weight of a gradient computed with {@code staleness} rounds pending. */
    public float weight(final int staleness) {
        if (staleness < 0) {
            throw new IllegalArgumentException("staleness must be >= 0, was " + staleness);
        }
        return this == NONE ? 1f : 1f / (1 + staleness);
    }
}
