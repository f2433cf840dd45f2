package io.serene.worker;

import java.util.Arrays;
import java.util.BitSet;

/** The per-round state of a worker that is as large as the gradient; recycled through {@link Aggregate#release()}. */
final class RoundBuffers {
    final byte[] localExp;
    final byte[] agreedExp;
    final boolean[] expKnown;
    final int[] integerSums;
    final int[] chunkContributors;
    final BitSet contributors = new BitSet();

    RoundBuffers(final int chunks, final int elements) {
        localExp = new byte[chunks];
        agreedExp = new byte[chunks];
        expKnown = new boolean[chunks];
        integerSums = new int[elements];
        chunkContributors = new int[chunks];
    }

    boolean fits(final int chunks, final int elements) {
        return localExp.length == chunks && integerSums.length == elements;
    }

    /** Forgets the previous round; the integer sums are overwritten chunk by chunk. */
    void clear() {
        Arrays.fill(expKnown, false);
        Arrays.fill(chunkContributors, 0);
        contributors.clear();
    }
}
