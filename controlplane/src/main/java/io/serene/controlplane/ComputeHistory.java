package io.serene.controlplane;

import java.util.Arrays;

/**
 * Each worker's last samples of one per-round measure (compute times; for the {@code auto} policy
 * also its finished rounds' compute times and arrival offsets, taken alike so they pair up), one
 * sample per round it contributed to (while R waits, a worker's last time repeats in every
 * telemetry sample: it is taken once, when its clock moves). Per-worker rules read the median of
 * the last few ({@code smooth N}); the {@code auto} policy replays a window of them ({@link #window}).
 */
final class ComputeHistory {
    private final long[][] samples;
    private final int[] taken;
    private final int[] takenAtClock;

    ComputeHistory(final int workers, final int capacity) {
        this.samples = new long[workers][capacity];
        this.taken = new int[workers];
        this.takenAtClock = new int[workers];
    }

    /**
     * Takes in each worker's last sample, if it is of a round ({@code clocks[w]}) other than the last
     * one taken; none before the worker's first round (clock -1).
     */
    void record(final int[] clocks, final long[] iterationNs) {
        final int n = Math.min(samples.length, iterationNs.length);
        for (int w = 0; w < n; w++) {
            final int clock = w < clocks.length ? clocks[w] : -1;
            if (clock < 0 || taken[w] > 0 && clock == takenAtClock[w]) {
                continue;
            }
            takenAtClock[w] = clock;
            samples[w][taken[w] % samples[w].length] = iterationNs[w];
            taken[w]++;
        }
    }

    /** How many samples every worker has (at most the capacity). */
    int available() {
        int n = Integer.MAX_VALUE;
        for (int w = 0; w < samples.length; w++) {
            n = Math.min(n, Math.min(taken[w], samples[w].length));
        }
        return samples.length == 0 ? 0 : n;
    }

    /** Worker {@code w}'s last {@code n} samples (fewer if it has fewer), oldest first. */
    long[] recent(final int w, final int n) {
        final int capacity = samples[w].length;
        final int count = Math.min(n, Math.min(taken[w], capacity));
        final long[] out = new long[count];
        for (int i = 0; i < count; i++) {
            out[i] = samples[w][(taken[w] - count + i) % capacity];
        }
        return out;
    }

    /** The median of worker {@code w}'s last {@code n} samples (0 before its first). */
    long median(final int w, final int n) {
        final long[] recent = recent(w, n);
        Arrays.sort(recent);
        return recent.length == 0 ? 0 : recent[recent.length / 2];
    }

    /**
     * The last {@code n} samples of every worker as rounds: {@code times[r][w]}, oldest first (the
     * i-th newest sample of each worker in one row); null while a worker has fewer than {@code n}.
     */
    long[][] window(final int n) {
        final long[][] times = new long[n][samples.length];
        for (int w = 0; w < samples.length; w++) {
            final long[] recent = recent(w, n);
            if (recent.length < n) {
                return null;
            }
            for (int r = 0; r < n; r++) {
                times[r][w] = recent[r];
            }
        }
        return times;
    }
}
