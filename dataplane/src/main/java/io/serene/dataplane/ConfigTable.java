package io.serene.dataplane;

import io.serene.protocol.LateMode;
import io.serene.protocol.Status;
import io.serene.protocol.SyncConfig;

import java.util.Arrays;
import java.util.BitSet;

/**
 * The versioned sync-config table of every job: up to {@link #ENTRIES} entries per job, each in
 * force from its first round until the next entry's, sorted by first round. Preallocated; written
 * only by the switch thread. An install bumps the job's epoch, which the switch stamps on replies.
 */
final class ConfigTable {
    static final int ENTRIES = 8;
    private static final int UNUSED = Integer.MIN_VALUE;

    private final int words;
    private final int[] first;
    private final int[] bound;
    private final int[] quorum;
    private final long[] timeoutNs;
    private final byte[] late;
    private final long[] required;
    private final int[] count;
    private final int[] epoch;

    ConfigTable(final int maxJobs, final int words) {
        this.words = words;
        first = new int[maxJobs * ENTRIES];
        bound = new int[maxJobs * ENTRIES];
        quorum = new int[maxJobs * ENTRIES];
        timeoutNs = new long[maxJobs * ENTRIES];
        late = new byte[maxJobs * ENTRIES];
        required = new long[maxJobs * ENTRIES * words];
        count = new int[maxJobs];
        epoch = new int[maxJobs];
        Arrays.fill(first, UNUSED);
    }

    /** Bytes of the table's arrays (and the per-job "changed" flag): per job and entry 21 + 8W, per job 9 more. */
    static long bytes(final int maxJobs, final int words) {
        return (long) maxJobs * ENTRIES * (21L + 8L * words) + 9L * maxJobs;
    }

    long bytes() {
        return 4L * (first.length + bound.length + quorum.length) + 8L * timeoutNs.length + late.length
            + 8L * required.length + 4L * (count.length + epoch.length);
    }

    /** A new job starts with one entry, from round 0, and epoch 0. */
    void reset(final int j, final SyncConfig.Resolved initial) {
        Arrays.fill(first, j * ENTRIES, (j + 1) * ENTRIES, UNUSED);
        count[j] = 0;
        epoch[j] = 0;
        write(j, 0, 0, initial);
        count[j] = 1;
    }

    /** The entry in force for a round (rounds before the first entry use the first). */
    int entryFor(final int j, final int round) {
        final int base = j * ENTRIES;
        int e = 0;
        for (int i = 1; i < count[j]; i++) {
            if (first[base + i] <= round) {
                e = i;
            }
        }
        return e;
    }

    /**
     * Installs a config from {@code firstRound} on, replacing entries that start there or later;
     * entries no longer reachable (every round they cover is at most {@code releasedRound}) are
     * dropped to make room. Returns OK, or TABLE_FULL.
     */
    Status install(final int j, final int firstRound, final SyncConfig.Resolved config, final int releasedRound) {
        final int base = j * ENTRIES;
        int n = count[j];
        while (n > 0 && first[base + n - 1] >= firstRound) {
            n--;
        }
        // drop leading entries whose successor already starts at or before the oldest open round
        int dead = 0;
        while (dead + 1 < n && first[base + dead + 1] <= releasedRound + 1) {
            dead++;
        }
        if (n - dead >= ENTRIES) {
            return Status.TABLE_FULL;
        }
        for (int i = dead; i < n; i++) {
            copy(j, i, i - dead);
        }
        n -= dead;
        write(j, n, firstRound, config);
        count[j] = n + 1;
        epoch[j]++;
        return Status.OK;
    }

    int epoch(final int j) {
        return epoch[j];
    }

    int entries(final int j) {
        return count[j];
    }

    int firstRound(final int j, final int e) {
        return first[j * ENTRIES + e];
    }

    int bound(final int j, final int e) {
        return bound[j * ENTRIES + e];
    }

    int quorum(final int j, final int e) {
        return quorum[j * ENTRIES + e];
    }

    long timeoutNs(final int j, final int e) {
        return timeoutNs[j * ENTRIES + e];
    }

    LateMode lateMode(final int j, final int e) {
        return LateMode.values()[late[j * ENTRIES + e]];
    }

    /** Whether a contributor bitmap (at {@code bitmapOffset} in {@code bitmaps}) holds every required worker. */
    boolean hasRequired(final int j, final int e, final long[] bitmaps, final int bitmapOffset) {
        final int base = (j * ENTRIES + e) * words;
        for (int w = 0; w < words; w++) {
            final long need = required[base + w];
            if ((bitmaps[bitmapOffset + w] & need) != need) {
                return false;
            }
        }
        return true;
    }

    /** The smallest timeout of any entry of any job, or NO_TIMEOUT. */
    long minTimeoutNs(final int maxJobs) {
        long min = SyncConfig.NO_TIMEOUT;
        for (int j = 0; j < maxJobs; j++) {
            for (int e = 0; e < count[j]; e++) {
                min = Math.min(min, timeoutNs[j * ENTRIES + e]);
            }
        }
        return min;
    }

    private void write(final int j, final int e, final int firstRound, final SyncConfig.Resolved c) {
        final int i = j * ENTRIES + e;
        first[i] = firstRound;
        bound[i] = c.bound;
        quorum[i] = c.quorum;
        timeoutNs[i] = c.timeoutNs;
        late[i] = (byte) c.lateMode.ordinal();
        final long[] bits = c.required.toLongArray();
        for (int w = 0; w < words; w++) {
            required[i * words + w] = w < bits.length ? bits[w] : 0L;
        }
    }

    private void copy(final int j, final int from, final int to) {
        final int a = j * ENTRIES + from;
        final int b = j * ENTRIES + to;
        first[b] = first[a];
        bound[b] = bound[a];
        quorum[b] = quorum[a];
        timeoutNs[b] = timeoutNs[a];
        late[b] = late[a];
        System.arraycopy(required, a * words, required, b * words, words);
    }

    long requiredWord(final int j, final int e, final int w) {
        return required[(j * ENTRIES + e) * words + w];
    }

    /** The required set of an entry, for tests and telemetry. */
    BitSet required(final int j, final int e) {
        final int base = (j * ENTRIES + e) * words;
        return BitSet.valueOf(Arrays.copyOfRange(required, base, base + words));
    }
}
