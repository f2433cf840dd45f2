package io.serene.worker;

import java.util.Arrays;

/** The per-round state of a worker that is as large as the gradient; recycled through {@link Aggregate#release()}. */
final class RoundBuffers {
    final byte[] localExp;
    final byte[] agreedExp;
    final boolean[] expKnown;
    final int[] integerSums;
    final int[] chunkContributors;
    final boolean[] chunkReleased;
    final boolean[] mineResolved;
    /** Chunks whose own values were folded into a later round: the round's aggregate does not retire them. */
    final boolean[] carried;
    final boolean[] expStepReleased;
    final float[] data;
    final long[] chunkBitmaps;
    final int words;

    RoundBuffers(final int chunks, final int elements, final int expSteps, final int words) {
        this.words = words;
        chunkBitmaps = new long[chunks * words];
        localExp = new byte[chunks];
        agreedExp = new byte[chunks];
        expKnown = new boolean[chunks];
        integerSums = new int[elements];
        chunkContributors = new int[chunks];
        chunkReleased = new boolean[chunks];
        mineResolved = new boolean[chunks];
        carried = new boolean[chunks];
        expStepReleased = new boolean[Math.max(1, expSteps)];
        data = new float[elements];
    }

    boolean fits(final int chunks, final int elements, final int expSteps, final int words) {
        return localExp.length == chunks && integerSums.length == elements && expStepReleased.length == Math.max(1, expSteps)
            && this.words == words;
    }

    /** Forgets the previous round; sums and data are overwritten before they are read. */
    void clear() {
        Arrays.fill(expKnown, false);
        Arrays.fill(chunkContributors, 0);
        Arrays.fill(chunkReleased, false);
        Arrays.fill(mineResolved, false);
        Arrays.fill(carried, false);
        Arrays.fill(expStepReleased, false);
        Arrays.fill(chunkBitmaps, 0L);
    }
}
