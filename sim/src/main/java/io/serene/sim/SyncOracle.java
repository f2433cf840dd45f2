package io.serene.sim;

import io.serene.protocol.sync.SyncConfig;

import java.util.BitSet;

/**
 * docs/design.md's synchronization contract, written out again from its definitions for the
 * simulator's invariant checks: never by calling the switch's or the worker's own rules
 * ({@code SyncRules}, {@code SyncConfig.Resolved}), so a wrong rule there cannot pass its own check.
 */
final class SyncOracle {
    private SyncOracle() {
    }

    /** Bound s: a worker may start computing round c only when R >= c - s - 1 (s unbounded: always). */
    static boolean mayStart(final int round, final int released, final int bound) {
        return bound == SyncConfig.UNBOUNDED || (long) released >= (long) round - bound - 1;
    }

    /**
     * Whether a chunk whose contributors are {@code contributors} could be released under
     * {@code config} for a group of {@code members}: its contributors include every required worker
     * (the members not excluded; none for fastest-k; under PSP, a sample of B of them, so at least B
     * of the required) and number at least k (by default: every required worker, or B), counting the
     * group's members; or its config has a timeout (a timeout releases whatever arrived first).
     */
    static boolean releasable(final SyncConfig config, final BitSet members, final BitSet contributors) {
        final BitSet required = new BitSet();
        if (!config.noneRequired()) {
            required.or(members);
            required.andNot(config.excluded());
        }
        final BitSet fromGroup = (BitSet) contributors.clone();
        fromGroup.and(members);
        final BitSet requiredIn = (BitSet) contributors.clone();
        requiredIn.and(required);
        final int sample = config.sample();
        final boolean requiredMet = sample == 0 ? requiredIn.cardinality() == required.cardinality()
            : requiredIn.cardinality() >= Math.min(sample, required.cardinality());
        final int k = config.quorum() != SyncConfig.QUORUM_OF_REQUIRED ? config.quorum()
            : sample > 0 ? Math.min(sample, required.cardinality()) : required.cardinality();
        final boolean byRule = requiredMet && fromGroup.cardinality() >= k;
        final boolean byTimeout = config.timeoutNs() != SyncConfig.NO_TIMEOUT && !contributors.isEmpty();
        return byRule || byTimeout;
    }
}
