package io.serene.training;

/** How the learning rate moves over a run's rounds (by applied step, so every worker takes the same steps). */
public enum LrSchedule {
    /** The learning rate as given, every round. */
    CONSTANT,
    /** Decays to 0 over the run along a half cosine. */
    COSINE,
    /** Constant, then to 0 in a straight line over the last 20% of the rounds. */
    COOLDOWN;

    /** The schedule {@code value} names; an error naming {@code what} (a flag or a key) otherwise. */
    public static LrSchedule parse(final String what, final String value) {
        return Choice.parse(LrSchedule.class, what, value);
    }

    /** The name on the command line and in experiment files. */
    public String text() {
        return Choice.text(this);
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
