package io.serene.worker;

import io.serene.protocol.Counters;
import io.serene.protocol.sync.LateMode;

import java.util.Arrays;

/**
 * What becomes of this worker's values for a chunk released without them (late, excluded, beyond
 * a quorum): under {@code fold} they are added to its next submitted round's gradient (error
 * feedback: no gradient is lost), under {@code drop} they are discarded and counted.
 */
final class LateLedger {
    private final Counters<WorkerCounter> counters;
    private final float[] fold;
    private boolean pending;

    LateLedger(final Counters<WorkerCounter> counters, final int elements) {
        this.counters = counters;
        this.fold = new float[elements];
    }

    /** Resolves elements {@code from .. to - 1} of a round's data as the round's late mode says. */
    void late(final float[] data, final int from, final int to, final LateMode mode) {
        if (mode == LateMode.DROP) {
            counters.increment(WorkerCounter.DROPPED_CHUNKS);
            return;
        }
        for (int i = from; i < to; i++) {
            fold[i] += data[i];
        }
        pending = true;
        counters.increment(WorkerCounter.FOLDED_CHUNKS);
    }

    /** Adds the folded values into a gradient being submitted and clears them; false if there were none. */
    boolean foldInto(final float[] data) {
        if (!pending) {
            return false;
        }
        for (int i = 0; i < data.length; i++) {
            data[i] += fold[i];
        }
        Arrays.fill(fold, 0f);
        pending = false;
        return true;
    }
}
