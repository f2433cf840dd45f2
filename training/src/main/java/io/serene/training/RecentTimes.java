package io.serene.training;

import java.util.Arrays;

/** The last few durations of something a worker does, and their median. */
final class RecentTimes {
    private final long[] ring;
    private final long[] sorted;
    private int count;

    RecentTimes(final int size) {
        if (size < 1) {
            throw new IllegalArgumentException("keep at least one time, was " + size);
        }
        ring = new long[size];
        sorted = new long[size];
    }

    void add(final long ns) {
        ring[count++ % ring.length] = ns;
    }

    /** The median of the kept times (the lower one of an even count); 0 before the first. */
    long typicalNs() {
        final int n = Math.min(count, ring.length);
        if (n == 0) {
            return 0;
        }
        System.arraycopy(ring, 0, sorted, 0, n);
        Arrays.sort(sorted, 0, n);
        return sorted[(n - 1) / 2];
    }
}
