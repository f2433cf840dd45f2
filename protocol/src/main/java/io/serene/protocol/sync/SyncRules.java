package io.serene.protocol.sync;

/**
 * The bound rule of docs/design.md (invariant 2), written once: a worker may start round c only while
 * {@code R >= c - s - 1}, with s the bound in force for round c, and never further ahead of R than
 * the switch's release ring can track (G - 1 rounds beyond R + 1). The switch refuses a contribution
 * beyond it, the worker waits for it, the simulator checks it, the control plane picks hot-swap
 * rounds past it: all through these methods. Also PSP's seeded sample ({@link #sample}), which the
 * switch's release rule and the simulator's check draw alike. Integer arithmetic, no allocation.
 */
public final class SyncRules {
    private SyncRules() {
    }

    /**
     * The highest round a worker may start (or a switch accept) while R is {@code releasedRound},
     * under bound {@code bound} ({@link SyncConfig#UNBOUNDED} allowed), with a release ring of
     * {@code ring} rounds: R + 1 + min(s, G - 1).
     */
    public static long highestStartable(final int releasedRound, final int bound, final int ring) {
        return (long) releasedRound + 1 + Math.min(bound, ring - 1);
    }

    /** Whether round {@code round} may be started (or accepted): {@code round <= highestStartable}. */
    public static boolean mayStart(final int round, final int releasedRound, final int bound, final int ring) {
        return round <= highestStartable(releasedRound, bound, ring);
    }

    /**
     * The round whose release clears round {@code round} under bound {@code bound}: c - s - 1 (may be
     * negative: cleared from the start); {@link Long#MIN_VALUE} when unbounded (no round gates it).
     */
    public static long gateRound(final int round, final int bound) {
        return bound == SyncConfig.UNBOUNDED ? Long.MIN_VALUE : (long) round - 1 - bound;
    }

    /**
     * The first round a config change may name while R is {@code releasedRound}, the largest bound
     * in force from R + 1 on is {@code maxBound} and the newest round any worker sent a packet for is
     * {@code newestArrival}: past every round a worker may have started (hot-swap, invariant 5).
     */
    public static int earliestSwapRound(final int releasedRound, final int maxBound, final int ring, final int newestArrival) {
        return (int) Math.max(newestArrival + 1L, highestStartable(releasedRound, maxBound, ring) + 1);
    }

    /**
     * Whether a worker sits out open round {@code round} (the training loop, the simulator and
     * {@code auto}'s replay of a config follow it): under a timeout ({@code timeoutNs}, or
     * {@link SyncConfig#NO_TIMEOUT}), round - 1 was released without it ({@code leftOut}: the newest
     * round released without it) and it heard that release ({@code released} is R as it last heard)
     * more than the timeout before {@code nowNs} ({@code heardNs}: when it heard it). A worker that
     * contributed to round - 1 never sits out, so some worker computes every round; nor does any
     * worker sit out round 0 (no round before it went without anyone). Never the job's
     * last round ({@code lastRound}): no later result would tell the worker of its release if the one
     * multicast to it were lost.
     */
    public static boolean sitsOut(final int round, final int released, final int leftOut, final long heardNs, final long nowNs,
                                  final long timeoutNs, final int lastRound) {
        return timeoutNs != SyncConfig.NO_TIMEOUT && round > 0 && released == round - 1 && leftOut == round - 1
            && nowNs - heardNs > timeoutNs && round < lastRound;
    }

    /**
     * The staleness of round {@code round} started while R is {@code releasedRound}: how many earlier
     * rounds are missing from the model it was computed on (docs/design.md, "Metrics").
     */
    public static int staleness(final int round, final int releasedRound) {
        return Math.max(0, round - 1 - releasedRound);
    }

    /**
     * The entry of a config list in force for a round: the newest one whose first round is at or
     * below it; the oldest covers every earlier round. The list is {@code count} entries oldest
     * first, kept in a ring of {@code capacity} from {@code head} at {@code base} of
     * {@code firstRounds} (a list kept in place has head 0). Returns the entry's ring index
     * (0 .. capacity - 1).
     */
    public static int entryFor(final int[] firstRounds, final int base, final int head, final int count,
                               final int capacity, final int round) {
        int e = head % capacity;
        for (int i = 1; i < count; i++) {
            final int p = (head + i) % capacity;
            if (firstRounds[base + p] <= round) {
                e = p;
            }
        }
        return e;
    }

    /**
     * PSP's sample (probabilistic synchronous parallel, Wang et al. 2017): {@code count} of the
     * workers set in {@code from} (words {@code fromOffset ..} of it, {@code words} long), chosen
     * uniformly for round {@code round} of a job seeded by {@code seed}, into {@code out} at
     * {@code outOffset} (cleared first). Every chunk of a round gets the same sample, the switch and
     * the simulator the same one. All of {@code from} when it has no more than {@code count} workers.
     * Floyd's algorithm over the set's positions with a SplitMix64 stream; no allocation.
     */
    public static void sample(final long seed, final int round, final long[] from, final int fromOffset, final int words,
                              final int count, final long[] out, final int outOffset) {
        int n = 0;
        for (int w = 0; w < words; w++) {
            out[outOffset + w] = 0L;
            n += Long.bitCount(from[fromOffset + w]);
        }
        if (count >= n) {
            System.arraycopy(from, fromOffset, out, outOffset, words);
            return;
        }
        long state = seed * 0x9E3779B97F4A7C15L + round;
        for (int j = n - count; j < n; j++) {
            state += 0x9E3779B97F4A7C15L;
            final int t = (int) Long.remainderUnsigned(mix(state), j + 1);
            final int pick = position(from, fromOffset, words, t);
            if ((out[outOffset + (pick >>> 6)] & (1L << (pick & 63))) == 0) {
                out[outOffset + (pick >>> 6)] |= 1L << (pick & 63);
            } else {
                final int last = position(from, fromOffset, words, j);
                out[outOffset + (last >>> 6)] |= 1L << (last & 63);
            }
        }
    }

    /** The worker at position {@code index} (from 0) among those set in {@code from}. */
    private static int position(final long[] from, final int fromOffset, final int words, final int index) {
        int left = index;
        for (int w = 0; w < words; w++) {
            final long word = from[fromOffset + w];
            final int bits = Long.bitCount(word);
            if (left < bits) {
                long x = word;
                for (int i = 0; i < left; i++) {
                    x &= x - 1;
                }
                return (w << 6) + Long.numberOfTrailingZeros(x);
            }
            left -= bits;
        }
        throw new IllegalArgumentException("no worker at position " + index);
    }

    /** SplitMix64's finalizer. */
    private static long mix(final long z0) {
        long z = (z0 ^ (z0 >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
