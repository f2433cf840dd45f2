package io.serene.training;

/** How the learning rate moves over a run's rounds (by applied step, so every worker takes the same steps). */
public enum LrSchedule {
    /** The learning rate as given, every round. */
    CONSTANT,
    /** Decays to 0 over the run along a half cosine. */
    COSINE,
    /** Constant, then to 0 in a straight line over the last 20% of the rounds. */
    COOLDOWN;

    /** The share of a run's steps a cooldown takes. */
    public static final double COOLDOWN_SHARE = 0.2;

    /** The schedule {@code value} names; an error naming {@code what} (a flag or a key) otherwise. */
    public static LrSchedule parse(final String what, final String value) {
        return Choice.parse(LrSchedule.class, what, value);
    }

    /** The name on the command line and in experiment files. */
    public String text() {
        return Choice.text(this);
    }

    /**
     * The rate of step {@code step} (from 0) of a schedule over {@code steps} steps (0: a constant rate)
     * from {@code base}. Cosine: base x (1 + cos(pi t / T)) / 2. Cooldown: base until the last
     * C = {@link #COOLDOWN_SHARE} x T steps, then base x (T - t) / (C + 1), so the last step still moves. From T on: 0.
     */
    public float rate(final float base, final int step, final int steps) {
        if (this == CONSTANT || steps <= 0) {
            return base;
        }
        if (this == COOLDOWN) {
            final int c = (int) Math.round(COOLDOWN_SHARE * steps);
            if (step < steps - c) {
                return base;
            }
            return step >= steps ? 0f : (float) ((double) base * (steps - step) / (c + 1));
        }
        return (float) (base * 0.5 * (1 + Math.cos(Math.PI * Math.min(step, steps) / steps)));
    }

    /** Sets the schedule on a model for a run of {@code rounds}. */
    public void applyTo(final DjlModel net, final int rounds) {
        if (this == COSINE) {
            net.cosineDecay(rounds);
        } else if (this == COOLDOWN) {
            net.cooldown(rounds);
        }
    }
}
