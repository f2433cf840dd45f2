package io.serene.training;

/** The momentum an aggregate is applied with under a bound s > 0. */
public enum StaleMomentum {
    /**
     * {@link #FIXED} for a worker that computes ahead on the model its pending steps lead to
     * ({@link ComputeOn#OWN}, {@link ComputeOn#PREDICTED}: the velocity's staleness is accounted for
     * there), {@link #COMPENSATE} for one that computes on the applied model.
     */
    AUTO,
    /** max(0, m - s / (s + 1)): asynchrony acts as momentum of its own. */
    COMPENSATE,
    /** m, whatever the bound. */
    FIXED;

    public static StaleMomentum parse(final String what, final String value) {
        return Choice.parse(StaleMomentum.class, what, value);
    }

    public String text() {
        return Choice.text(this);
    }

    /** The rule this one stands for when a worker computes on {@code computeOn} ({@link #AUTO} resolved). */
    public StaleMomentum resolve(final ComputeOn computeOn) {
        return this != AUTO ? this : computeOn == ComputeOn.APPLIED ? COMPENSATE : FIXED;
    }

    /** The momentum for a round applied under {@code bound}, from the model's {@code momentum} (a resolved rule). */
    public float momentum(final float momentum, final int bound) {
        if (this == AUTO) {
            throw new IllegalStateException("resolve AUTO first");
        }
        if (this == FIXED || bound <= 0) {
            return momentum;
        }
        return Math.max(0f, momentum - (float) bound / (bound + 1f));
    }
}
