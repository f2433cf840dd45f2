package io.serene.training;

import io.serene.worker.RoundPlan;
import io.serene.worker.RunClock;
import io.serene.worker.WorkerHost;

/**
 * Under a timeout, a worker a pause put out of step gets back in step before it computes a round
 * ({@code SyncRules.sitsOut}, {@link RoundPlan#foldsHeld}): a gradient it holds for an earlier round
 * goes into the engine's folded values, weighed by the rounds missing from its model when it is
 * applied ({@link StaleScale}), and is added to its next contribution instead of opening a round
 * alone; and a round it comes back to later than the timeout after the others started it, it sits
 * out, waiting for the round's release, so it computes the next one with them.
 */
final class CatchUp {
    private final LoopWaits waits;
    private final RunClock clock;
    private final RoundRecords log;
    private final StaleScale scale;
    /** The loop's read-my-writes sum: a folded gradient is one of its writes from then on. */
    private final float[] unreleased;
    /** A held gradient folded this round, for the round's record. */
    private Checkpoint.Held folded;

    CatchUp(final LoopWaits waits, final RunClock clock, final RoundRecords log, final StaleScale scale, final float[] unreleased) {
        this.waits = waits;
        this.clock = clock;
        this.log = log;
        this.scale = scale;
        this.unreleased = unreleased;
    }

    /**
     * Before the worker computes round {@code round} ({@code wire} on the switch, whose last round is {@code lastWire}), holding
     * {@code held} (or null): folds it if it goes with the next contribution and sits the round out
     * if it must ({@link RoundPlan#sitOutDeadlineNs}: at most twice {@code typicalComputeNs}).
     * Returns the gradient still held: {@code held}, or null once folded.
     */
    Checkpoint.Held beforeRound(final WorkerHost worker, final int round, final int wire, final int lastWire, final Checkpoint.Held held,
                                final long typicalComputeNs) throws InterruptedException {
        Checkpoint.Held still = held;
        final int heldWire = held == null ? RoundPlan.NONE : held.round() - (round - wire);
        final WorkerHost.CatchUpPlan plan = waits.await(worker.catchUp(wire, heldWire, clock.nanoTime(), lastWire), "the released round");
        if (plan.foldsHeld()) {
            final float[] stale = held.gradient();
            final float reweigh = scale.weight(round - held.appliedBefore()) / scale.weight(held.round() - held.appliedBefore());
            for (int i = 0; i < stale.length; i++) {
                stale[i] *= reweigh;
                unreleased[i] += stale[i];
            }
            waits.await(worker.fold(stale), "the values to fold");
            folded = held;
            still = null;
        }
        if (!plan.sitOut().isDone()) {
            // until the release, or (a release it did not hear of) the deadline: then it computes the round after all
            final long w0 = clock.nanoTime();
            waits.waitUntil(plan.sitOut(), RoundPlan.sitOutDeadlineNs(w0, typicalComputeNs));
            log.waited(round, clock.nanoTime() - w0);
        }
        return still;
    }

    /** Adds a gradient folded this round to the round's record (after the round's own is written). */
    void record(final int round) {
        if (folded != null) {
            log.alsoComputed(round, folded.batch(), folded.elapsedNs(), folded.injectedNs(), folded.hostNs());
            folded = null;
        }
    }
}
