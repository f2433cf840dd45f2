package io.serene.dataplane;

import java.util.Arrays;
import java.util.BitSet;

/**
 * The {@code worker_group} table and what follows from it: each worker's group, which workers
 * have an explicit entry, each group's members as a bitmap (at {@code list(j, g) * W}) and the
 * mask of groups with members. Preallocated; written by the switch thread only.
 */
final class GroupTable {
    private final int maxWorkers;
    private final int words;

    /** [j * N + w]: the worker's group. */
    final byte[] group;
    /** [j * W + word]: workers with an explicit worker_group entry. */
    final long[] explicit;
    /** [(j * GROUPS + g) * W + word]. */
    final long[] members;
    /** [j]: bitmask of the groups with members. */
    final int[] mask;

    GroupTable(final int maxJobs, final int maxWorkers, final int words) {
        this.maxWorkers = maxWorkers;
        this.words = words;
        group = new byte[maxJobs * maxWorkers];
        explicit = new long[maxJobs * words];
        members = new long[maxJobs * ConfigTable.GROUPS * words];
        mask = new int[maxJobs];
    }

    long bytes() {
        return group.length + 8L * (explicit.length + members.length) + 4L * mask.length;
    }

    /** A new job: every worker in group 0, then the context's entries ({@code setup[w]} for worker w). */
    void reset(final int j, final int workers, final int[] setup) {
        Arrays.fill(group, j * maxWorkers, (j + 1) * maxWorkers, (byte) 0);
        Arrays.fill(explicit, j * words, (j + 1) * words, 0L);
        Arrays.fill(members, ConfigTable.list(j, 0) * words, ConfigTable.list(j + 1, 0) * words, 0L);
        for (int w = 0; w < workers; w++) {
            members[ConfigTable.list(j, 0) * words + (w >>> 6)] |= 1L << (w & 63);
        }
        mask[j] = 1;
        for (int w = 0; w < Math.min(workers, setup.length); w++) {
            if (setup[w] != 0) {
                move(j, w, 0, setup[w]);
                explicit[j * words + (w >>> 6)] |= 1L << (w & 63);
            }
        }
    }

    /** The group of worker w of job j. */
    int of(final int j, final int w) {
        return group[j * maxWorkers + w];
    }

    /** Whether group g of job j has members. */
    boolean inUse(final int j, final int g) {
        return (mask[j] & (1 << g)) != 0;
    }

    /** Whether the job's workers are all in one group (group 0). */
    boolean single(final int j) {
        return mask[j] == 1;
    }

    /** Where group g's member bitmap starts in {@link #members}. */
    int membersAt(final int j, final int g) {
        return ConfigTable.list(j, g) * words;
    }

    boolean isExplicit(final int j, final int w) {
        return (explicit[j * words + (w >>> 6)] & (1L << (w & 63))) != 0;
    }

    void setExplicit(final int j, final int w, final boolean value) {
        if (value) {
            explicit[j * words + (w >>> 6)] |= 1L << (w & 63);
        } else {
            explicit[j * words + (w >>> 6)] &= ~(1L << (w & 63));
        }
    }

    /** Moves worker w from one group to another, keeping members and the mask. */
    void move(final int j, final int w, final int from, final int to) {
        final long bit = 1L << (w & 63);
        members[ConfigTable.list(j, from) * words + (w >>> 6)] &= ~bit;
        members[ConfigTable.list(j, to) * words + (w >>> 6)] |= bit;
        group[j * maxWorkers + w] = (byte) to;
        int m = 0;
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            for (int i = 0; i < words; i++) {
                if (members[ConfigTable.list(j, g) * words + i] != 0) {
                    m |= 1 << g;
                }
            }
        }
        mask[j] = m;
    }

    /** Group g's members (allocates; for control operations). */
    BitSet membersOf(final int j, final int g) {
        final int base = membersAt(j, g);
        return BitSet.valueOf(Arrays.copyOfRange(members, base, base + words));
    }
}
