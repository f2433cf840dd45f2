package io.serene.worker;

import java.util.Arrays;
import java.util.BitSet;
import java.util.Queue;

/**
 * The released aggregate of one round as a worker received it: the integer sums the switch
 * released, the per-chunk agreed exponents, and who contributed to each chunk. The float views
 * ({@link #sumInto}, {@link #averageInto}) are computed on demand by the caller's thread.
 * {@link #release()} hands the buffers back to the worker for a later round; the aggregate must not
 * be used after that.
 */
public final class Aggregate {
    private final int round;
    private final int chunkElements;
    private final int scaleBits;
    private final int elements;
    private final int chunks;
    private final RoundBuffers buffers;
    private final boolean saturated;
    private final Queue<RoundBuffers> pool;
    private volatile boolean released;

    Aggregate(final int round, final int chunkElements, final int scaleBits, final int elements, final int chunks,
              final RoundBuffers buffers, final boolean saturated, final Queue<RoundBuffers> pool) {
        this.round = round;
        this.chunkElements = chunkElements;
        this.scaleBits = scaleBits;
        this.elements = elements;
        this.chunks = chunks;
        this.buffers = buffers;
        this.saturated = saturated;
        this.pool = pool;
    }

    public int round() {
        return round;
    }

    public int elements() {
        return elements;
    }

    /** The integer sums exactly as the switch released them (a live view; do not modify). */
    public int[] integerSums() {
        return live().integerSums;
    }

    /** The agreed exponent of chunk c. */
    public byte exponent(final int chunk) {
        return live().agreedExp[chunk];
    }

    public int chunks() {
        return chunks;
    }

    public int chunkElements() {
        return chunkElements;
    }

    /** How many workers contributed to chunk c. */
    public int chunkContributorCount(final int chunk) {
        return live().chunkContributors[chunk];
    }

    /** The workers whose contributions are in chunk c. */
    public BitSet chunkContributors(final int chunk) {
        final RoundBuffers b = live();
        return BitSet.valueOf(Arrays.copyOfRange(b.chunkBitmaps, chunk * b.words, (chunk + 1) * b.words));
    }

    /** Workers that contributed to at least one chunk of the round. */
    public BitSet contributors() {
        final RoundBuffers b = live();
        final long[] words = new long[b.words];
        // the chunks' bitmaps one after another, b.words each
        for (int i = 0; i < b.chunkBitmaps.length; i++) {
            words[i % b.words] |= b.chunkBitmaps[i];
        }
        return BitSet.valueOf(words);
    }

    /**
     * A hash of everything the switch released for the round: the integer sums, the agreed
     * exponents and each chunk's contributors. Workers that received the same aggregate have the
     * same fingerprint (the simulator's agreement check compares them without copying the sets).
     */
    public long fingerprint() {
        final RoundBuffers b = live();
        return ((Arrays.hashCode(b.integerSums) * 31L + Arrays.hashCode(b.agreedExp)) << 32) ^ Arrays.hashCode(b.chunkBitmaps);
    }

    /** Fewest contributors of any chunk (all chunks have the same count under BSP). */
    public int contributorCount() {
        int min = Integer.MAX_VALUE;
        for (int c = 0; c < chunks; c++) {
            min = Math.min(min, live().chunkContributors[c]);
        }
        return min;
    }

    /** Whether any contribution or sum of this round was clamped. */
    public boolean saturated() {
        return saturated;
    }

    /** Writes the dequantized sum of all contributions into dst. */
    public void sumInto(final float[] dst) {
        final RoundBuffers b = live();
        for (int c = 0; c < chunks; c++) {
            final double factor = BlockFloat.dequantizeFactor(b.agreedExp[c], scaleBits);
            final int end = Math.min(elements, (c + 1) * chunkElements);
            for (int i = c * chunkElements; i < end; i++) {
                dst[i] = (float) (b.integerSums[i] * factor);
            }
        }
    }

    /** The dequantized sum as a new array. */
    public float[] sum() {
        final float[] dst = new float[elements];
        sumInto(dst);
        return dst;
    }

    /** Writes the average (each chunk's sum divided by its contributor count) into dst. */
    public void averageInto(final float[] dst) {
        final RoundBuffers b = live();
        for (int c = 0; c < chunks; c++) {
            final double factor = BlockFloat.dequantizeFactor(b.agreedExp[c], scaleBits);
            final int count = Math.max(1, b.chunkContributors[c]);
            final int end = Math.min(elements, (c + 1) * chunkElements);
            for (int i = c * chunkElements; i < end; i++) {
                dst[i] = (float) (b.integerSums[i] * factor) / count;
            }
        }
    }

    /**
     * This worker's own values the round retires from its unreleased writes (read-my-writes): the
     * values it submitted for the round (with the late values folded into them) in every chunk that
     * holds them or dropped them, zero where they were folded into a later round. Adding each
     * contributed gradient and subtracting this for each applied aggregate leaves exactly the own
     * writes not yet in an applied aggregate.
     */
    public void ownRetiredInto(final float[] dst) {
        if (dst.length != elements) {
            throw new IllegalArgumentException("need " + elements + " elements, got " + dst.length);
        }
        LateLedger.retiredInto(live(), chunkElements, dst);
    }

    /** Returns the buffers to the worker for reuse; idempotent. */
    public void release() {
        if (!released) {
            released = true;
            pool.offer(buffers);
        }
    }

    private RoundBuffers live() {
        if (released) {
            throw new IllegalStateException("aggregate of round " + round + " was released");
        }
        return buffers;
    }
}
