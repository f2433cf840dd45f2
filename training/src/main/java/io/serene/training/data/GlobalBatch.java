package io.serene.training.data;

/**
 * Keeps the samples a round carries near N x B when rounds are released with fewer contributions
 * (a worker excluded, fastest-k, a timeout): each worker's next batch is B x N over the mean
 * contributor count of the last few applied rounds, at most 2 B. Under BSP every round has N
 * contributions and the batch stays exactly B; a straggler's late gradients, folded into later
 * rounds, count there, so the mean is the samples-per-round rate, not the on-time count.
 */
public final class GlobalBatch {
    /** Applied rounds the mean is taken over. */
    public static final int WINDOW = 8;
    /** The most a batch grows: at most this many times B. */
    public static final int MAX_GROWTH = 2;

    private final int batch;
    private final int workers;
    private final boolean enabled;
    private final int[] counts = new int[WINDOW];
    private int seen;
    private int sum;

    /**
     * @param batch each worker's batch when every worker contributes (B)
     * @param workers the job's workers (N)
     * @param enabled false: always B
     */
    public GlobalBatch(final int batch, final int workers, final boolean enabled) {
        if (batch <= 0 || workers <= 0) {
            throw new IllegalArgumentException("batch and workers must be positive, were " + batch + " and " + workers);
        }
        this.batch = batch;
        this.workers = workers;
        this.enabled = enabled;
    }

    /** The largest batch {@link #next} gives. */
    public int max() {
        return enabled ? MAX_GROWTH * batch : batch;
    }

    /** A round's aggregate was applied with this many contributions (its fewest over chunks). */
    public void applied(final int contributors) {
        final int c = Math.max(1, Math.min(workers, contributors));
        final int at = seen % WINDOW;
        sum += c - (seen >= WINDOW ? counts[at] : 0);
        counts[at] = c;
        seen++;
    }

    /** What a checkpoint keeps: the applied rounds seen, then the window of contributor counts. */
    public int[] state() {
        final int[] state = new int[WINDOW + 1];
        state[0] = seen;
        System.arraycopy(counts, 0, state, 1, WINDOW);
        return state;
    }

    /** Back to a {@link #state()}. */
    public void restore(final int[] state) {
        if (state.length != WINDOW + 1 || state[0] < 0) {
            throw new IllegalArgumentException("a global batch state has " + (WINDOW + 1) + " entries, seen >= 0");
        }
        seen = state[0];
        System.arraycopy(state, 1, counts, 0, WINDOW);
        sum = 0;
        for (int i = 0; i < Math.min(seen, WINDOW); i++) {
            sum += counts[i];
        }
    }

    /** The batch of the next gradient: B, or B x N / mean contributions, rounded, at most 2 B. */
    public int next() {
        if (!enabled || seen == 0) {
            return batch;
        }
        final int n = Math.min(seen, WINDOW);
        // B x N / (sum / n), rounded to the nearest integer
        final long scaled = (2L * batch * workers * n + sum) / (2L * sum);
        return (int) Math.min(max(), Math.max(batch, scaled));
    }
}
