package io.serene.worker;

import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;

/**
 * What a worker does with a round, decided here once for the training loop ({@code TrainingLoop})
 * and the simulator ({@code ScenarioRunner}), so the two cannot drift apart. Round r is cleared
 * (the bound allows it); R is the released round as the worker last heard.
 * <ol>
 *   <li>While r waits for clearance under WBSP, the worker computes another gradient whenever it
 *       expects to be done before its newest pending aggregate arrives ({@link #computesWhileWaiting});
 *       such a gradient straggles as the round it waits on did ({@link #slowAs}).</li>
 *   <li>Once r is cleared it computes a gradient for r, unless it holds one already (computed for an
 *       earlier round that was released without it) or r is released ({@link #computes}).</li>
 *   <li>Then ({@link #handIn}): r released without it (it is excluded, or beyond a quorum, before or
 *       while it computed) and a gradient computed for r under {@code drop}: the gradient is
 *       dropped and the round skipped. Released otherwise: the round is skipped and a gradient it
 *       holds kept for the first round still open ({@code fold}). Not released: it contributes.</li>
 * </ol>
 * Under a timeout, a worker that comes back to an open round later than the timeout after it heard
 * the round before released without it (it was paused, or skipped rounds) sits the round
 * out ({@link io.serene.protocol.sync.SyncRules#sitsOut}): the others started it that long ago, so its gradient would come too late
 * to count, and a gradient it held would open the round early and start the round's timeout before
 * the others come. It waits for the round's release and computes the next one with them; a gradient
 * it holds goes with that one (under {@code fold}). So a worker a pause put out of step is back in
 * step within a round, instead of handing in every later round late.
 * A skipped round still reports the worker's last compute time: it is still that slow.
 */
public final class RoundPlan {
    /** What the worker hands in for a round. */
    public enum HandIn {
        /** Its gradient, as the round's contribution. */
        CONTRIBUTE,
        /** Nothing (the round was released without it); a gradient it holds waits for the next open round. */
        SKIP,
        /** Nothing, and the gradient it computed for the round is dropped. */
        DROP
    }

    /** No gradient held. */
    public static final int NONE = -1;

    private RoundPlan() {
    }

    /**
     * Whether a worker waiting for round {@code round}'s clearance computes one more gradient now:
     * only under a config that keeps it busy (WBSP), while the round is not cleared, while it holds no
     * gradient and has a pending aggregate, and if that one is expected after another compute time
     * ({@link Arrivals#fitsAnother}; {@code newestSentNs}: when it sent the newest pending round).
     */
    public static boolean computesWhileWaiting(final boolean busyConfig, final boolean cleared, final boolean holding,
                                               final boolean pending, final Arrivals arrivals, final long nowNs,
                                               final long newestSentNs) {
        return busyConfig && !cleared && !holding && pending && arrivals.fitsAnother(nowNs, newestSentNs);
    }

    /** The round whose straggling a gradient computed while waiting for round {@code round}'s clearance has. */
    public static int slowAs(final int round) {
        return Math.max(0, round - 1);
    }

    /** Whether the worker computes a gradient for cleared round {@code round}. */
    public static boolean computes(final int round, final int released, final boolean holding) {
        return !holding && !releasedWithout(round, released);
    }

    /**
     * Whether a gradient held for an earlier round ({@code heldRound}, {@link #NONE}: none) goes with
     * the worker's next contribution (its folded values) instead of alone into open round
     * {@code round}: under a timeout, where alone it would open the round early and start the
     * round's timeout before the others come.
     */
    public static boolean foldsHeld(final int round, final int released, final int heldRound, final long timeoutNs) {
        return heldRound != NONE && heldRound < round && timeoutNs != SyncConfig.NO_TIMEOUT && !releasedWithout(round, released);
    }

    /**
     * How long a worker that began sitting a round out at {@code nowNs} waits for the round's
     * release at most: twice its typical compute time ({@code typicalComputeNs}), past the latest the
     * others' contributions and the round's timeout can take. It hears the release by multicast; one
     * lost when nothing later would report it (the next round waits for this worker) must not stall
     * the job, so past the deadline it computes the round as if it had not sat out.
     */
    public static long sitOutDeadlineNs(final long nowNs, final long typicalComputeNs) {
        return nowNs + 2 * typicalComputeNs;
    }

    /** Whether round {@code round} is released already (without this worker, which has not handed it in). */
    public static boolean releasedWithout(final int round, final int released) {
        return released >= round;
    }

    /**
     * What the worker hands in for round {@code round}, with the gradient it holds computed for
     * {@code heldRound} ({@link #NONE}: none) and the round's late mode (read only for a round
     * {@link #releasedWithout} it; may be null otherwise).
     */
    public static HandIn handIn(final int round, final int released, final int heldRound, final LateMode late) {
        if (!releasedWithout(round, released)) {
            if (heldRound == NONE) {
                throw new IllegalStateException("round " + round + " is open and the worker holds no gradient for it");
            }
            return HandIn.CONTRIBUTE;
        }
        return heldRound == round && late == LateMode.DROP ? HandIn.DROP : HandIn.SKIP;
    }
}
