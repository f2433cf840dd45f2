package io.serene.training;

/** How long a worker trains: {@code --rounds}, or E passes over its shard ({@code --epochs}), checked once for every caller. */
public final class RunLength {
    private RunLength() {
    }

    /** Rejects a non-positive batch, rounds or epochs, a negative evaluation period, or rounds and epochs both given. */
    public static void check(final int batch, final int evalEvery, final Integer rounds, final Double epochs) {
        if (batch <= 0 || evalEvery < 0 || (rounds != null && rounds <= 0) || (epochs != null && !(epochs > 0))) {
            throw new IllegalArgumentException("--rounds, --epochs and --batch must be positive and --eval-every >= 0");
        }
        if (rounds != null && epochs != null) {
            throw new IllegalArgumentException("give --rounds or --epochs, not both");
        }
    }

    /** Rounds for a run: {@code rounds}, else {@code epochs} passes over the shard (one of them is given). */
    public static int rounds(final int shard, final int batch, final Integer rounds, final Double epochs) {
        if (rounds != null) {
            return rounds;
        }
        final long perEpoch = (shard + batch - 1) / batch;
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, Math.round(epochs * perEpoch)));
    }
}
