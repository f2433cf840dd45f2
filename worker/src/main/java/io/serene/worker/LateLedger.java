package io.serene.worker;

import io.serene.protocol.Counters;
import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.StepLayout;

import java.util.Arrays;

/**
 * What becomes of this worker's values for a chunk released without them (late, excluded, beyond
 * a quorum): under {@code fold} they are added to its next submitted round's gradient (error
 * feedback: no gradient is lost), under {@code drop} they are discarded and counted.
 *
 * <p>It also keeps the read-my-writes rule (docs/design.md, the synchronization contract, as in SSP, Ho et al. 2013): which
 * of this worker's own values a delivered round retires from its unreleased writes. A round's
 * aggregate retires the submitted values (folded values included) of every chunk that holds them or
 * dropped them; a folded chunk's values travel on in the round they were folded into and are retired
 * with it. So a caller that adds each gradient it contributes and subtracts each applied aggregate's
 * {@link Aggregate#ownRetiredInto} holds exactly its writes not in any applied aggregate, each
 * counted once.
 */
final class LateLedger {
    private final Counters<WorkerCounter> counters;
    private final float[] fold;
    private boolean pending;

    LateLedger(final Counters<WorkerCounter> counters, final int elements) {
        this.counters = counters;
        this.fold = new float[elements];
    }

    /** Resolves this worker's values for a chunk of a round released without them, as the round's late mode says. */
    void late(final RoundBuffers round, final StepLayout layout, final int chunk, final LateMode mode) {
        round.mineResolved[chunk] = true;
        if (mode == LateMode.DROP) {
            counters.increment(WorkerCounter.DROPPED_CHUNKS);
            return;
        }
        final int from = chunk * layout.chunkElements();
        for (int i = from; i < from + layout.chunkLength(chunk); i++) {
            fold[i] += round.data[i];
        }
        round.carried[chunk] = true;
        pending = true;
        counters.increment(WorkerCounter.FOLDED_CHUNKS);
    }

    /** Copies the values waiting to be folded into {@code dst} (zeros if none); false if there are none. */
    boolean copyInto(final float[] dst) {
        if (!pending) {
            Arrays.fill(dst, 0f);
            return false;
        }
        System.arraycopy(fold, 0, dst, 0, fold.length);
        return true;
    }

    /** Adds values to fold into the next submitted round (what a checkpoint kept of a ledger). */
    void add(final float[] values) {
        for (int i = 0; i < fold.length; i++) {
            if (values[i] != 0f) {
                fold[i] += values[i];
                pending = true;
            }
        }
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

    /** The own values a delivered round retires (see the class comment), into {@code dst}. */
    static void retiredInto(final RoundBuffers round, final int chunkElements, final float[] dst) {
        final int elements = Math.min(dst.length, round.data.length);
        for (int c = 0; c < round.carried.length; c++) {
            final int from = c * chunkElements;
            final int to = Math.min(elements, from + chunkElements);
            if (round.carried[c]) {
                Arrays.fill(dst, from, to, 0f);
            } else {
                System.arraycopy(round.data, from, dst, from, to - from);
            }
        }
    }
}
