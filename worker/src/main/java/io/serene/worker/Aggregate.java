package io.serene.worker;

import java.util.BitSet;

/**
 * The released aggregate of one round as a worker received it: the dequantized sum, the integer
 * sums and per-chunk exponents it came from, and who contributed to each chunk.
 */
public final class Aggregate {
    private final int round;
    private final int chunkElements;
    private final float[] sum;
    private final int[] integerSums;
    private final byte[] exponents;
    private final int[] chunkContributors;
    private final BitSet contributors;
    private final boolean saturated;

    Aggregate(final int round, final int chunkElements, final float[] sum, final int[] integerSums,
              final byte[] exponents, final int[] chunkContributors, final BitSet contributors,
              final boolean saturated) {
        this.round = round;
        this.chunkElements = chunkElements;
        this.sum = sum;
        this.integerSums = integerSums;
        this.exponents = exponents;
        this.chunkContributors = chunkContributors;
        this.contributors = contributors;
        this.saturated = saturated;
    }

    public int round() {
        return round;
    }

    /** The dequantized sum of all contributions (not averaged). */
    public float[] sum() {
        return sum;
    }

    /** The integer sums exactly as the switch released them. */
    public int[] integerSums() {
        return integerSums;
    }

    /** The agreed exponent of chunk c. */
    public byte exponent(final int chunk) {
        return exponents[chunk];
    }

    public int chunks() {
        return exponents.length;
    }

    public int chunkElements() {
        return chunkElements;
    }

    /** How many workers contributed to chunk c. */
    public int chunkContributorCount(final int chunk) {
        return chunkContributors[chunk];
    }

    /** Workers that contributed to at least one chunk of the round. */
    public BitSet contributors() {
        return (BitSet) contributors.clone();
    }

    /** Fewest contributors of any chunk (all chunks have the same count under BSP). */
    public int contributorCount() {
        int min = Integer.MAX_VALUE;
        for (final int c : chunkContributors) {
            min = Math.min(min, c);
        }
        return min;
    }

    /** Whether any contribution or sum of this round was clamped. */
    public boolean saturated() {
        return saturated;
    }

    /** Writes the average (each chunk's sum divided by its contributor count) into dst. */
    public void averageInto(final float[] dst) {
        for (int i = 0; i < sum.length; i++) {
            dst[i] = sum[i] / chunkContributors[i / chunkElements];
        }
    }
}
