package io.serene.dataplane;

import io.serene.protocol.LateMode;
import io.serene.protocol.Status;
import io.serene.protocol.SyncConfig;

import java.util.Arrays;
import java.util.BitSet;

/**
 * The versioned sync-config table of every job: up to {@link #ENTRIES} entries per job, each in
 * force from its first round until the next entry's, sorted by first round. The entries of a job
 * form a ring: an entry never moves while it lives, so a slot can keep the index of the entry it
 * was opened under. Preallocated; written only by the switch thread. An install bumps the job's
 * epoch, which the switch stamps on replies.
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
    private final int[] head;
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
        head = new int[maxJobs];
        epoch = new int[maxJobs];
        Arrays.fill(first, UNUSED);
    }

    /** Bytes of the table's arrays (and the per-job "changed" flag): per job and entry 21 + 8W, per job 13 more. */
    static long bytes(final int maxJobs, final int words) {
        return (long) maxJobs * ENTRIES * (21L + 8L * words) + 13L * maxJobs;
    }

    long bytes() {
        return 4L * (first.length + bound.length + quorum.length) + 8L * timeoutNs.length + late.length
            + 8L * required.length + 4L * (count.length + head.length + epoch.length);
    }

    /** The physical index of the job's i-th live entry (0 = oldest); entry accessors take physical indexes. */
    int at(final int j, final int i) {
        return (head[j] + i) % ENTRIES;
    }

    /** A new job starts with one entry, from round 0, and epoch 0. */
    void reset(final int j, final SyncConfig.Resolved initial) {
        Arrays.fill(first, j * ENTRIES, (j + 1) * ENTRIES, UNUSED);
        count[j] = 0;
        head[j] = 0;
        epoch[j] = 0;
        write(j, 0, 0, initial);
        count[j] = 1;
    }

    /** The (physical) index of the entry in force for a round; rounds before the oldest use it. */
    int entryFor(final int j, final int round) {
        final int base = j * ENTRIES;
        int e = at(j, 0);
        for (int i = 1; i < count[j]; i++) {
            final int p = at(j, i);
            if (first[base + p] <= round) {
                e = p;
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
        // replaced: entries starting at or after the new first round (the newest end of the ring)
        while (n > 1 && first[base + at(j, n - 1)] >= firstRound) {
            n--;
        }
        if (n == 1 && first[base + at(j, 0)] >= firstRound) {
            n = 0;
        }
        final int freed = releasable(j, n, releasedRound);
        n -= freed;
        if (n >= ENTRIES) {
            return Status.TABLE_FULL;
        }
        final int h = (head[j] + freed) % ENTRIES;
        head[j] = h;
        write(j, (h + n) % ENTRIES, firstRound, config);
        count[j] = n + 1;
        epoch[j]++;
        return Status.OK;
    }

    /**
     * How many of the oldest of the job's first {@code n} entries are no longer reachable: every
     * round they cover is released (their successor starts by R + 1). One entry always stays.
     */
    private int releasable(final int j, final int n, final int releasedRound) {
        int freed = 0;
        while (n - freed > 1 && first[j * ENTRIES + (head[j] + freed + 1) % ENTRIES] <= releasedRound + 1) {
            freed++;
        }
        return freed;
    }

    /** The physical index of the job's entry starting exactly at {@code firstRound}, or -1. */
    int find(final int j, final int firstRound) {
        for (int i = 0; i < count[j]; i++) {
            final int p = at(j, i);
            if (first[j * ENTRIES + p] == firstRound) {
                return p;
            }
        }
        return -1;
    }

    /**
     * Inserts an entry at its place in round order (the caller checks no round has used the entries
     * after it; they move up one place), after dropping entries no longer reachable as
     * {@link #install} does. Returns OK or TABLE_FULL; the caller checks the key is free.
     */
    Status insert(final int j, final int firstRound, final SyncConfig.Resolved config, final int releasedRound) {
        final int base = j * ENTRIES;
        final int freed = releasable(j, count[j], releasedRound);
        final int n = count[j] - freed;
        if (n >= ENTRIES) {
            return Status.TABLE_FULL;
        }
        head[j] = (head[j] + freed) % ENTRIES;
        count[j] = n;
        int at = n;
        while (at > 0 && first[base + at(j, at - 1)] > firstRound) {
            at--;
        }
        for (int k = n; k > at; k--) {
            copy(j, at(j, k - 1), at(j, k));
        }
        write(j, at(j, at), firstRound, config);
        count[j] = n + 1;
        epoch[j]++;
        return Status.OK;
    }

    /** Replaces the value of an entry no round has used yet (the caller checks), keeping its first round. */
    void modify(final int j, final int e, final SyncConfig.Resolved config) {
        write(j, e, first[j * ENTRIES + e], config);
        epoch[j]++;
    }

    /**
     * Deletes the entry at logical position {@code i} (not the oldest; no round has used it or any
     * later one, the caller checks): later entries move down one place.
     */
    void delete(final int j, final int i) {
        final int n = count[j];
        for (int k = i; k < n - 1; k++) {
            copy(j, at(j, k + 1), at(j, k));
        }
        first[j * ENTRIES + at(j, n - 1)] = UNUSED;
        count[j] = n - 1;
        epoch[j]++;
    }

    /** The logical position (0 = oldest) of a physical index. */
    int position(final int j, final int e) {
        return Math.floorMod(e - head[j], ENTRIES);
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

    /** The smallest timeout of any live entry of any job, or NO_TIMEOUT. */
    long minTimeoutNs(final int maxJobs) {
        long min = SyncConfig.NO_TIMEOUT;
        for (int j = 0; j < maxJobs; j++) {
            for (int i = 0; i < count[j]; i++) {
                min = Math.min(min, timeoutNs[j * ENTRIES + at(j, i)]);
            }
        }
        return min;
    }

    /** The largest bound among the entry in force for {@code round} and every later one. */
    int maxBoundFrom(final int j, final int round) {
        int max = 0;
        boolean reached = false;
        for (int i = count[j] - 1; i >= 0; i--) {
            final int p = at(j, i);
            if (!reached) {
                max = Math.max(max, bound[j * ENTRIES + p]);
                reached = first[j * ENTRIES + p] <= round;
            }
        }
        return max;
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


    long requiredWord(final int j, final int e, final int w) {
        return required[(j * ENTRIES + e) * words + w];
    }

    /** An entry as text for operators: bound, required workers, quorum, timeout, late mode. */
    String describe(final int j, final int e) {
        final int b = bound(j, e);
        final long t = timeoutNs(j, e);
        return "bound=" + (b == SyncConfig.UNBOUNDED ? "unbounded" : Integer.toString(b))
            + " required=" + required(j, e) + " quorum=" + quorum(j, e)
            + " timeout=" + (t == SyncConfig.NO_TIMEOUT ? "none" : (t / 1_000_000.0) + "ms")
            + " late=" + lateMode(j, e).name().toLowerCase(java.util.Locale.ROOT);
    }

    /** The required set of an entry, for tests and telemetry. */
    BitSet required(final int j, final int e) {
        final int base = (j * ENTRIES + e) * words;
        return BitSet.valueOf(Arrays.copyOfRange(required, base, base + words));
    }
}
