package io.serene.training;

/** The momentum an aggregate is applied with under a bound s > 0. */
public enum StaleMomentum {
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

    /** The momentum for a round applied under {@code bound}, from the model's {@code momentum}. */
    public float momentum(final float momentum, final int bound) {
        if (this == FIXED || bound <= 0) {
            return momentum;
        }
        return Math.max(0f, momentum - (float) bound / (bound + 1f));
    }
}
