package io.serene.dataplane;

import io.serene.protocol.Status;
import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncRules;
import io.serene.protocol.table.TableModel;

import java.util.Arrays;
import java.util.BitSet;
import java.util.Locale;

/**
 * The versioned sync-config table: one list of up to {@link #ENTRIES} entries per job and worker
 * group ({@link #GROUPS} per job; list index {@code job * GROUPS + group}), each entry in force from
 * its first round until the next entry's, sorted by first round. The entries of a list form a
 * ring: an entry never moves while rounds use it, so a slot can keep the index of the entry it was
 * opened under. Preallocated; written only by the switch thread (which keeps the job's epoch).
 *
 * <p>An entry stores its required set over the whole job (every worker not excluded, or none) and
 * its quorum as written ({@link SyncConfig#QUORUM_OF_REQUIRED} allowed); a release check intersects
 * both with the group's members, so an entry stays valid for whichever workers the group holds.
 */
final class ConfigTable {
    static final int ENTRIES = TableModel.ENTRIES;
    /** Worker groups per job. */
    static final int GROUPS = TableModel.GROUPS;
    private static final int UNUSED = Integer.MIN_VALUE;

    private final int words;
    private final int[] first;
    private final int[] bound;
    private final int[] quorum;
    private final long[] timeoutNs;
    private final byte[] late;
    /** PSP's sample size per entry (0: every required worker). */
    private final int[] sample;
    /** WBSP: the entry's workers keep computing while they wait ({@link SyncConfig#busy()}). */
    private final boolean[] busy;
    private final long[] required;
    private final int[] count;
    private final int[] head;

    ConfigTable(final int maxJobs, final int words) {
        this.words = words;
        final int lists = maxJobs * GROUPS;
        first = new int[lists * ENTRIES];
        bound = new int[lists * ENTRIES];
        quorum = new int[lists * ENTRIES];
        timeoutNs = new long[lists * ENTRIES];
        late = new byte[lists * ENTRIES];
        sample = new int[lists * ENTRIES];
        busy = new boolean[lists * ENTRIES];
        required = new long[lists * ENTRIES * words];
        count = new int[lists];
        head = new int[lists];
        Arrays.fill(first, UNUSED);
    }

    /** Bytes of the table's arrays: per job, group and entry 26 + 8W, per job and group 8 more. */
    static long bytes(final int maxJobs, final int words) {
        return (long) maxJobs * GROUPS * (ENTRIES * (26L + 8L * words) + 8L);
    }

    long bytes() {
        return 4L * (first.length + bound.length + quorum.length + sample.length) + 8L * timeoutNs.length + late.length + busy.length
            + 8L * required.length + 4L * (count.length + head.length);
    }

    /** The list of a job's group. */
    static int list(final int j, final int group) {
        return j * GROUPS + group;
    }

    /** The physical index of the job's i-th live entry (0 = oldest); entry accessors take physical indexes. */
    int at(final int j, final int i) {
        return (head[j] + i) % ENTRIES;
    }

    /** A new job's list starts with one entry, from round 0. */
    void reset(final int j, final SyncConfig initial, final int workers) {
        Arrays.fill(first, j * ENTRIES, (j + 1) * ENTRIES, UNUSED);
        count[j] = 0;
        head[j] = 0;
        write(j, 0, 0, initial, workers);
        count[j] = 1;
    }

    /** The (physical) index of the entry in force for a round; rounds before the oldest use it. */
    int entryFor(final int j, final int round) {
        return SyncRules.entryFor(first, j * ENTRIES, head[j], count[j], ENTRIES, round);
    }

    /**
     * Installs a config from {@code firstRound} on, replacing entries that start there or later;
     * entries no longer reachable (every round they cover is at most {@code releasedRound}) are
     * dropped to make room. Returns OK, or TABLE_FULL.
     */
    Status install(final int j, final int firstRound, final SyncConfig config, final int workers, final int releasedRound) {
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
        write(j, (h + n) % ENTRIES, firstRound, config, workers);
        count[j] = n + 1;
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
    Status insert(final int j, final int firstRound, final SyncConfig config, final int workers, final int releasedRound) {
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
        write(j, at(j, at), firstRound, config, workers);
        count[j] = n + 1;
        return Status.OK;
    }

    /** Replaces the value of an entry no round has used yet (the caller checks), keeping its first round. */
    void modify(final int j, final int e, final SyncConfig config, final int workers) {
        write(j, e, first[j * ENTRIES + e], config, workers);
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

    int entries(final int j) {
        return count[j];
    }

    int firstRound(final int j, final int e) {
        return first[j * ENTRIES + e];
    }

    int bound(final int j, final int e) {
        return bound[j * ENTRIES + e];
    }

    /** The quorum as written: a count, or {@link SyncConfig#QUORUM_OF_REQUIRED}. */
    int writtenQuorum(final int j, final int e) {
        return quorum[j * ENTRIES + e];
    }

    /**
     * The quorum for a group of {@code members} (at {@code offset}): as written, or the count of its
     * required members (of PSP's sample of them, at most).
     */
    int quorum(final int j, final int e, final long[] members, final int offset) {
        final int k = quorum[j * ENTRIES + e];
        if (k != SyncConfig.QUORUM_OF_REQUIRED) {
            return k;
        }
        final int base = (j * ENTRIES + e) * words;
        int n = 0;
        for (int w = 0; w < words; w++) {
            n += Long.bitCount(required[base + w] & members[offset + w]);
        }
        final int b = sample[j * ENTRIES + e];
        return b > 0 ? Math.min(b, n) : n;
    }

    /** PSP's sample size of an entry; 0: a release waits for every required worker. */
    int sample(final int j, final int e) {
        return sample[j * ENTRIES + e];
    }

    /** Whether the entry is WBSP's: its workers keep computing while they wait. */
    boolean busy(final int j, final int e) {
        return busy[j * ENTRIES + e];
    }

    long timeoutNs(final int j, final int e) {
        return timeoutNs[j * ENTRIES + e];
    }

    LateMode lateMode(final int j, final int e) {
        return LateMode.fromWireCode(late[j * ENTRIES + e]);
    }

    /**
     * Whether a contributor bitmap (at {@code bitmapOffset} in {@code bitmaps}) holds every required
     * member of a group ({@code members} at {@code offset}).
     */
    boolean hasRequired(final int j, final int e, final long[] bitmaps, final int bitmapOffset,
                        final long[] members, final int offset) {
        final int base = (j * ENTRIES + e) * words;
        for (int w = 0; w < words; w++) {
            final long need = required[base + w] & members[offset + w];
            if ((bitmaps[bitmapOffset + w] & need) != need) {
                return false;
            }
        }
        return true;
    }

    /** The smallest timeout of any live entry of any list, or NO_TIMEOUT. */
    long minTimeoutNs() {
        long min = SyncConfig.NO_TIMEOUT;
        for (int j = 0; j < count.length; j++) {
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

    /** Writes an entry: its required set over all of the job's {@code workers} (the caller checked it fits). */
    private void write(final int j, final int e, final int firstRound, final SyncConfig c, final int workers) {
        final int i = j * ENTRIES + e;
        first[i] = firstRound;
        bound[i] = c.bound();
        quorum[i] = c.quorum();
        timeoutNs[i] = c.timeoutNs();
        late[i] = (byte) c.lateMode().wireCode();
        sample[i] = c.sample();
        busy[i] = c.busy();
        final long[] bits = c.resolve(workers).required.toLongArray();
        for (int w = 0; w < words; w++) {
            required[i * words + w] = w < bits.length ? bits[w] : 0L;
        }
    }

    /** A word of the required members of a group ({@code members} at {@code offset}). */
    long requiredWord(final int j, final int e, final int w, final long[] members, final int offset) {
        return required[(j * ENTRIES + e) * words + w] & members[offset + w];
    }

    /** An entry as text for operators: bound, required members, quorum, timeout, late mode. */
    String describe(final int j, final int e, final long[] members, final int offset) {
        final int b = bound(j, e);
        final long t = timeoutNs(j, e);
        return "bound=" + (b == SyncConfig.UNBOUNDED ? "unbounded" : Integer.toString(b))
            + " required=" + required(j, e, members, offset) + " quorum=" + quorum(j, e, members, offset)
            + (sample(j, e) > 0 ? " sample=" + sample(j, e) : "")
            + " timeout=" + (t == SyncConfig.NO_TIMEOUT ? "none" : (t / 1_000_000.0) + "ms")
            + " late=" + lateMode(j, e).name().toLowerCase(Locale.ROOT) + (busy(j, e) ? " busy" : "");
    }

    /** The required members of a group under an entry, for tests and telemetry. */
    BitSet required(final int j, final int e, final long[] members, final int offset) {
        final long[] bits = new long[words];
        for (int w = 0; w < words; w++) {
            bits[w] = requiredWord(j, e, w, members, offset);
        }
        return BitSet.valueOf(bits);
    }
}
