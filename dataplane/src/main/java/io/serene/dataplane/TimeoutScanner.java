package io.serene.dataplane;

import io.serene.protocol.sync.SyncConfig;

/**
 * The timeout scanner, a model of a packet generator walking the slot pool: each timer call
 * visits the share of all slots the time since the last call allows (a full sweep per
 * {@code sweepNs}, a quarter of the smallest timeout in force, at least 0.1 ms), so a pending
 * chunk is looked at again within a quarter of its timeout.
 */
final class TimeoutScanner {
    private long sweepNs = SyncConfig.NO_TIMEOUT;
    private int cursor;
    private long lastScanNs = Long.MIN_VALUE;

    /** Re-arms from the smallest timeout of any config table entry. */
    void update(final ConfigTable configs) {
        sweepNs = sweepNs(configs.minTimeoutNs());
    }

    /** How often a full sweep runs for the smallest timeout {@code minTimeoutNs} in force ({@link SyncConfig#NO_TIMEOUT}: never). */
    static long sweepNs(final long minTimeoutNs) {
        return minTimeoutNs == SyncConfig.NO_TIMEOUT ? SyncConfig.NO_TIMEOUT : Math.max(100_000L, minTimeoutNs / 4);
    }

    /** Whether some entry has a timeout, so the scanner runs. */
    boolean armed() {
        return sweepNs != SyncConfig.NO_TIMEOUT;
    }

    /** How many of {@code slots} slots to visit now; call {@link #next} that many times. */
    long visits(final long nowNs, final int slots) {
        final long elapsed = lastScanNs == Long.MIN_VALUE ? sweepNs : Math.max(0, nowNs - lastScanNs);
        lastScanNs = nowNs;
        return Math.min(slots, elapsed >= sweepNs ? slots : elapsed * slots / sweepNs + 1);
    }

    /** The next slot to visit, round robin. */
    int next(final int slots) {
        final int idx = cursor;
        cursor = cursor + 1 == slots ? 0 : cursor + 1;
        return idx;
    }

    /** When the timer should run again. */
    long nextDeadline(final long nowNs) {
        return nowNs + Math.max(1, sweepNs / 16);
    }
}
