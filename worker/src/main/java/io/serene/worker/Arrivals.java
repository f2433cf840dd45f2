package io.serene.worker;

import java.util.Arrays;

/**
 * When a worker expects its pending aggregates, from its own last rounds: the median time from
 * sending a contribution to its aggregate's arrival, and the median time it computes a gradient.
 * Two rules read it: a worker that may compute ahead waits for a pending aggregate until it is late
 * (a compute time past its expected arrival: {@link #lateNs}); under WBSP a worker waiting for
 * clearance computes another gradient only if it expects to be done before the aggregate arrives
 * ({@link #fitsAnother}), so it never holds up a release it could have had. Not thread-safe.
 */
public final class Arrivals {
    private final Recent compute = new Recent(5);
    private final Recent latency = new Recent(9);

    /** A gradient took {@code ns} to compute (injected straggling included). */
    public void computed(final long ns) {
        compute.add(ns);
    }

    /** A contribution sent at {@code sentNs} had its aggregate arrive at {@code arrivedNs} (on the run's clock). */
    public void arrived(final long sentNs, final long arrivedNs) {
        latency.add(Math.max(0, arrivedNs - sentNs));
    }

    /** The median compute time of the last rounds; 0 before the first. */
    public long typicalComputeNs() {
        return compute.median();
    }

    /** When the aggregate of a contribution sent at {@code sentNs} is expected: after the median latency. */
    public long expectedNs(final long sentNs) {
        return sentNs + latency.median();
    }

    /** When an aggregate of a contribution sent at {@code sentNs} counts as late: a compute time after it was expected. */
    public long lateNs(final long sentNs) {
        return expectedNs(sentNs) + typicalComputeNs();
    }

    /**
     * Whether one more gradient, started at {@code nowNs}, is expected to be done before the
     * aggregate of a contribution sent at {@code sentNs}: not when this worker's last gradient took
     * longer than each of its other recent ones (it straggled, so the others are likely waiting for
     * it and the aggregate comes as soon as its contribution is in), and not when another compute time would
     * run past the shortest recent latency (the soonest the aggregate is likely to come: a gradient
     * still computing then would hold up the next round).
     */
    public boolean fitsAnother(final long nowNs, final long sentNs) {
        return !compute.newestAboveTheRest() && nowNs + typicalComputeNs() <= sentNs + latency.min();
    }

    /** The last few durations and their median (the lower one of an even count; 0 before the first). */
    private static final class Recent {
        private final long[] ring;
        private final long[] sorted;
        private int count;

        Recent(final int size) {
            ring = new long[size];
            sorted = new long[size];
        }

        void add(final long ns) {
            ring[count++ % ring.length] = ns;
        }

        /** Whether the newest time is above every other kept one (false with fewer than two). */
        boolean newestAboveTheRest() {
            final int n = Math.min(count, ring.length);
            if (n < 2) {
                return false;
            }
            final int newest = (count - 1) % ring.length;
            for (int i = 0; i < n; i++) {
                if (i != newest && ring[i] >= ring[newest]) {
                    return false;
                }
            }
            return true;
        }

        long min() {
            final int n = Math.min(count, ring.length);
            long m = n == 0 ? 0 : Long.MAX_VALUE;
            for (int i = 0; i < n; i++) {
                m = Math.min(m, ring[i]);
            }
            return m;
        }

        long median() {
            final int n = Math.min(count, ring.length);
            if (n == 0) {
                return 0;
            }
            System.arraycopy(ring, 0, sorted, 0, n);
            Arrays.sort(sorted, 0, n);
            return sorted[(n - 1) / 2];
        }
    }
}
