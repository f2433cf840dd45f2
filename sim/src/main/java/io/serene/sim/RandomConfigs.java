package io.serene.sim;

import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;

import java.util.BitSet;
import java.util.SplittableRandom;

/** Random sync configs for a scenario's random hot-swaps: bounds 0-3 under SSP, a quorum, an exclusion, a timeout, or BSP with a quorum. */
final class RandomConfigs {
    private RandomConfigs() {
    }

    /** A config drawn from {@code random} for {@code workers} workers computing about {@code computeNs} a round. */
    static SyncConfig draw(final SplittableRandom random, final int workers, final long computeNs) {
        final int bound = random.nextInt(4);
        switch (random.nextInt(5)) {
            case 0:
                return SyncConfig.ssp(bound);
            case 1:
                return SyncConfig.ssp(bound).requiringNone().withQuorum(1 + random.nextInt(workers));
            case 2:
                if (workers > 1) {
                    final BitSet excluded = new BitSet();
                    excluded.set(random.nextInt(workers));
                    return SyncConfig.ssp(bound).excluding(excluded);
                }
                return SyncConfig.ssp(bound);
            case 3:
                return SyncConfig.ssp(bound).withTimeoutNs(computeNs / 2 + random.nextInt((int) Math.min(Integer.MAX_VALUE, computeNs)));
            default:
                return SyncConfig.bsp().withLateMode(random.nextBoolean() ? LateMode.DROP
                    : LateMode.FOLD).requiringNone().withQuorum(Math.max(1, workers - 1));
        }
    }
}
