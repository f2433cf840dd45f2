package io.serene.sim;

import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncConfigParser;
import org.junit.jupiter.api.Test;

import java.util.BitSet;

import static org.assertj.core.api.Assertions.assertThat;

/** The oracle's rules from docs/design.md's definitions, case by case. */
class SyncOracleTest {
    private static BitSet set(final int... workers) {
        final BitSet b = new BitSet();
        for (final int w : workers) {
            b.set(w);
        }
        return b;
    }

    private static SyncConfig config(final String text) {
        return SyncConfigParser.parse(text);
    }

    @Test
    void theBoundLetsRoundCStartOnlyOnceRoundCMinusSMinusOneIsReleased() {
        assertThat(SyncOracle.mayStart(5, 4, 0)).as("BSP: round 4 released").isTrue();
        assertThat(SyncOracle.mayStart(5, 3, 0)).as("BSP: round 4 not released").isFalse();
        assertThat(SyncOracle.mayStart(5, 2, 2)).isTrue();
        assertThat(SyncOracle.mayStart(5, 1, 2)).isFalse();
        assertThat(SyncOracle.mayStart(0, -1, 0)).as("round 0 from the start").isTrue();
        assertThat(SyncOracle.mayStart(1_000, -1, SyncConfig.UNBOUNDED)).as("asynchronous").isTrue();
    }

    @Test
    void aChunkIsReleasableWithEveryRequiredWorkerAndTheQuorum() {
        final BitSet all = set(0, 1, 2, 3);
        assertThat(SyncOracle.releasable(config("bsp"), all, set(0, 1, 2, 3))).isTrue();
        assertThat(SyncOracle.releasable(config("bsp"), all, set(0, 1, 2))).isFalse();
        assertThat(SyncOracle.releasable(config("fastest:3"), all, set(0, 2, 3))).isTrue();
        assertThat(SyncOracle.releasable(config("fastest:3"), all, set(0, 2))).isFalse();
        assertThat(SyncOracle.releasable(config("timeout:50"), all, set(1))).as("a timeout releases what arrived").isTrue();
        assertThat(SyncOracle.releasable(config("psp:2"), all, set(1, 3))).as("a sample of 2 of the 4").isTrue();
        assertThat(SyncOracle.releasable(config("psp:2"), all, set(3))).isFalse();
    }
}
