package io.serene.sim;

import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncSchedule;
import io.serene.worker.Aggregate;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * What the simulated workers received, and two of design.md's invariants checked on it: every
 * worker received the same aggregate for every round (invariant 3), and every released chunk met
 * the config of its round in every group with members (invariant 5, by {@link SyncOracle}).
 */
final class DeliveryLog {
    private final int workers;
    private final int rounds;
    /** Per worker and round: the aggregate's fingerprint (its sums and contributors). */
    private final long[][] fingerprints;
    /** Per round, from worker 0: each chunk's contributors. */
    private final List<BitSet[]> contributorsByRound = new ArrayList<>();

    DeliveryLog(final int workers, final int rounds) {
        this.workers = workers;
        this.rounds = rounds;
        this.fingerprints = new long[workers][rounds];
    }

    /** Worker w received {@code aggregate} (not released yet). */
    void delivered(final int w, final Aggregate aggregate) {
        final int round = aggregate.round();
        fingerprints[w][round] = aggregate.fingerprint();
        if (w == 0) {
            final BitSet[] chunks = new BitSet[aggregate.chunks()];
            for (int c = 0; c < chunks.length; c++) {
                chunks[c] = aggregate.chunkContributors(c);
            }
            while (contributorsByRound.size() <= round) {
                contributorsByRound.add(null);
            }
            contributorsByRound.set(round, chunks);
        }
    }

    /** Every worker received worker 0's aggregate for every round. */
    boolean agreement() {
        for (int round = 0; round < rounds; round++) {
            for (int w = 1; w < workers; w++) {
                if (fingerprints[w][round] != fingerprints[0][round]) {
                    return false;
                }
            }
        }
        return true;
    }

    /** Every released chunk met, in every group with members, the condition of that group's config for its round. */
    boolean hotSwapConsistent(final SyncSchedule[] installed, final BitSet[] members) {
        for (int round = 0; round < rounds; round++) {
            for (int g = 0; g < members.length; g++) {
                if (members[g].isEmpty()) {
                    continue;
                }
                final SyncConfig config = installed[g].configFor(round).requireAbsolute();
                for (final BitSet chunk : contributorsByRound.get(round)) {
                    if (!SyncOracle.releasable(config, members[g], chunk)) {
                        return false;
                    }
                }
            }
        }
        return true;
    }

    /** The rounds a worker received something else than worker 0 in, a line each. */
    void describeDisagreements(final StringBuilder sb) {
        for (int round = 0; round < rounds; round++) {
            for (int w = 1; w < workers; w++) {
                if (fingerprints[w][round] != fingerprints[0][round]) {
                    sb.append("round ").append(round).append(": worker ").append(w).append(" differs from worker 0\n");
                }
            }
        }
    }
}
