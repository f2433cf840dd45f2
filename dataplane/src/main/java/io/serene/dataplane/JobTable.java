package io.serene.dataplane;

import java.util.Arrays;

/**
 * Exact-match table from job id to job index: open addressing with linear probing and
 * backward-shift deletion over preallocated power-of-two arrays; no allocation after start.
 */
final class JobTable {
    static final int MISSING = -1;

    private final int[] keys;
    private final int[] values;
    private final boolean[] used;
    private final int mask;
    private int size;

    /** Entries of the table for {@code capacity} jobs: the smallest power of two holding twice as many. */
    static int length(final int capacity) {
        int length = 2;
        while (length < capacity * 2) {
            length <<= 1;
        }
        return length;
    }

    JobTable(final int capacity) {
        final int length = length(capacity);
        keys = new int[length];
        values = new int[length];
        used = new boolean[length];
        mask = length - 1;
        Arrays.fill(values, MISSING);
    }

    int get(final int key) {
        int i = hash(key) & mask;
        while (used[i]) {
            if (keys[i] == key) {
                return values[i];
            }
            i = (i + 1) & mask;
        }
        return MISSING;
    }

    void put(final int key, final int value) {
        int i = hash(key) & mask;
        while (used[i]) {
            if (keys[i] == key) {
                values[i] = value;
                return;
            }
            i = (i + 1) & mask;
        }
        used[i] = true;
        keys[i] = key;
        values[i] = value;
        size++;
    }

    void remove(final int key) {
        int i = hash(key) & mask;
        while (used[i]) {
            if (keys[i] == key) {
                used[i] = false;
                values[i] = MISSING;
                size--;
                shiftBack(i);
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /** Bytes held by the table's arrays. */
    long bytes() {
        return 9L * keys.length;
    }

    int size() {
        return size;
    }

    private void shiftBack(final int removed) {
        int gap = removed;
        int i = (removed + 1) & mask;
        while (used[i]) {
            final int home = hash(keys[i]) & mask;
            // move the entry into the gap unless its home lies cyclically in (gap, i]
            final boolean homeBetween = gap <= i ? (home > gap && home <= i) : (home > gap || home <= i);
            if (!homeBetween) {
                keys[gap] = keys[i];
                values[gap] = values[i];
                used[gap] = true;
                used[i] = false;
                values[i] = MISSING;
                gap = i;
            }
            i = (i + 1) & mask;
        }
    }

    private static int hash(final int key) {
        final int h = key * 0x9E3779B9;
        return h ^ (h >>> 16);
    }
}
