package io.serene.dataplane;

import io.serene.protocol.Flags;
import io.serene.protocol.Packet;
import io.serene.protocol.sync.StepLayout;

import java.util.Arrays;

/**
 * The aggregation registers: per job two shadow sets of P slots, each holding one chunk's int32
 * sums (or exponent maxima), its contributor bitmap and the step it serves. Register index
 * {@code (job * 2 + set) * P + slot}; bitmaps at {@code index * W}, sums at {@code index * K}.
 * Preallocated; written by the switch thread only.
 */
final class SlotPool {
    static final long NO_SEQ = -1L;
    /** Slot flag kept in the switch only: a contribution lay outside the job's scale, so adds saturate. */
    static final int OUT_OF_SCALE = 0x40;

    private final int poolSize;
    private final int words;
    private final int chunkElements;

    final long[] seq;
    final long[] firstNs;
    /** [index * GROUPS + group]: the config entry the slot opened under. */
    final byte[] entry;
    final int[] count;
    final int[] round;
    final int[] chunk;
    final int[] length;
    final byte[] exponent;
    final boolean[] released;
    final byte[] flags;
    final long[] bitmap;
    final int[] sums;

    SlotPool(final int maxJobs, final int poolSize, final int words, final int chunkElements) {
        this.poolSize = poolSize;
        this.words = words;
        this.chunkElements = chunkElements;
        final int slots = maxJobs * 2 * poolSize;
        seq = new long[slots];
        firstNs = new long[slots];
        entry = new byte[slots * ConfigTable.GROUPS];
        count = new int[slots];
        round = new int[slots];
        chunk = new int[slots];
        length = new int[slots];
        exponent = new byte[slots];
        released = new boolean[slots];
        flags = new byte[slots];
        bitmap = new long[slots * words];
        sums = new int[slots * chunkElements];
        Arrays.fill(seq, NO_SEQ);
    }

    long bytes() {
        return 8L * seq.length + 8L * firstNs.length + entry.length
            + 4L * (count.length + round.length + chunk.length + length.length)
            + exponent.length + released.length + flags.length
            + 8L * bitmap.length + 4L * sums.length;
    }

    /** Slots of all jobs. */
    int slots() {
        return seq.length;
    }

    /** The job a register index belongs to. */
    int jobOf(final int idx) {
        return idx / (2 * poolSize);
    }

    /** The register index of a job's slot in a shadow set. */
    int index(final int j, final int set, final int slot) {
        return (j * 2 + set) * poolSize + slot;
    }

    /** The register index of the slot step seq of the job uses. */
    int index(final int j, final long step) {
        return index(j, StepLayout.shadowSet(step, poolSize), StepLayout.slot(step, poolSize));
    }

    /** Frees every slot of a job. */
    void clearJob(final int j) {
        Arrays.fill(seq, j * 2 * poolSize, (j + 1) * 2 * poolSize, NO_SEQ);
        Arrays.fill(released, j * 2 * poolSize, (j + 1) * 2 * poolSize, false);
    }

    /** Whether the slot's previous use (step seq - P, the other set) was released, as reusing it requires. */
    boolean previousUseReleased(final int j, final int set, final int slot, final long step) {
        final long previous = StepLayout.previousUse(step, poolSize);
        if (previous < 0) {
            return true;
        }
        final int other = index(j, set ^ 1, slot);
        return seq[other] == previous && released[other];
    }

    /** Opens a slot for a new step. */
    void reset(final int idx, final long step, final int stepRound, final int stepChunk, final int n, final int payload) {
        seq[idx] = step;
        count[idx] = 0;
        round[idx] = stepRound;
        chunk[idx] = stepChunk;
        length[idx] = n;
        exponent[idx] = Packet.NO_EXPONENT;
        released[idx] = false;
        flags[idx] = (byte) payload;
        Arrays.fill(bitmap, idx * words, idx * words + words, 0L);
        // sums start at 0, exponent maxima below any exponent
        Arrays.fill(sums, idx * chunkElements, idx * chunkElements + n, payload == Flags.EXPONENTS ? Integer.MIN_VALUE : 0);
    }

    /** Takes the element-wise maxima of a contribution of exponents. */
    void maxInto(final int idx, final int[] contribution, final int n) {
        final int base = idx * chunkElements;
        for (int i = 0; i < n; i++) {
            sums[base + i] = Math.max(sums[base + i], contribution[i]);
        }
    }

    /**
     * Whether a contribution lies outside the job's scale {@code limit} = 2^Q. While every
     * contribution to a slot lies within it (Q = 30 - ceil(log2 N), what a correct worker sends), N
     * of them sum to at most 2^30 and plain addition cannot overflow. Branch-free; vectorizes.
     */
    static boolean outOfScale(final int[] contribution, final int n, final int limit) {
        int outside = 0;
        for (int i = 0; i < n; i++) {
            final int b = contribution[i];
            outside |= (b + limit) | (limit - b); // negative iff b < -limit or b > limit
        }
        return outside < 0;
    }

    /** Plain addition, for contributions within the scale (vectorizes). */
    void add(final int idx, final int[] contribution, final int n) {
        final int base = idx * chunkElements;
        for (int i = 0; i < n; i++) {
            sums[base + i] += contribution[i];
        }
    }

    /** Adds with saturation toward the first operand's sign instead of wrapping; true if any element saturated. */
    boolean saturatingAdd(final int idx, final int[] contribution, final int n) {
        final int base = idx * chunkElements;
        int overflow = 0;
        for (int i = 0; i < n; i++) {
            final int a = sums[base + i];
            final int b = contribution[i];
            final int r = a + b;
            // overflow iff both operands share a sign the result lacks
            final int ov = ((a ^ r) & (b ^ r)) >> 31;
            sums[base + i] = (r & ~ov) | (((a >> 31) ^ Integer.MAX_VALUE) & ov);
            overflow |= ov;
        }
        return overflow != 0;
    }

    /** Whether worker w contributed to the slot. */
    boolean holds(final int idx, final int worker) {
        return (bitmap[idx * words + (worker >>> 6)] & (1L << (worker & 63))) != 0;
    }

    /** How many of the workers in {@code members} (W words at {@code m}) contributed to the slot. */
    int countIn(final int idx, final long[] members, final int m) {
        int n = 0;
        for (int w = 0; w < words; w++) {
            n += Long.bitCount(bitmap[idx * words + w] & members[m + w]);
        }
        return n;
    }
}
