package io.serene.protocol.sync;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SyncRulesTest {
    private static final int RING = 64;

    @Test
    void shouldStartTheNextRoundOnlyUnderBspOnceTheLastIsReleased() {
        assertThat(SyncRules.mayStart(0, -1, 0, RING)).isTrue();
        assertThat(SyncRules.mayStart(1, -1, 0, RING)).isFalse();
        assertThat(SyncRules.mayStart(6, 5, 0, RING)).isTrue();
        assertThat(SyncRules.mayStart(7, 5, 0, RING)).isFalse();
    }

    @Test
    void shouldAllowSRoundsAheadUnderABound() {
        // R >= c - s - 1: with R = 5 and s = 2, rounds up to 8
        assertThat(SyncRules.highestStartable(5, 2, RING)).isEqualTo(8);
        assertThat(SyncRules.mayStart(8, 5, 2, RING)).isTrue();
        assertThat(SyncRules.mayStart(9, 5, 2, RING)).isFalse();
        assertThat(SyncRules.gateRound(8, 2)).isEqualTo(5);
    }

    @Test
    void shouldNeverRunFurtherAheadThanTheReleaseRing() {
        assertThat(SyncRules.highestStartable(5, SyncConfig.UNBOUNDED, RING)).isEqualTo(5 + RING);
        assertThat(SyncRules.highestStartable(5, 1000, RING)).isEqualTo(5 + RING);
        assertThat(SyncRules.gateRound(8, SyncConfig.UNBOUNDED)).isEqualTo(Long.MIN_VALUE);
    }

    @Test
    void shouldSwapOnlyPastEveryRoundAWorkerMayHaveStartedOrSent() {
        // R = 5, bound 2: workers may be in round 8, so the first round a change may name is 9
        assertThat(SyncRules.earliestSwapRound(5, 2, RING, 6)).isEqualTo(9);
        // a worker already sent for round 12 (under an earlier, looser bound)
        assertThat(SyncRules.earliestSwapRound(5, 2, RING, 12)).isEqualTo(13);
    }

    @Test
    void shouldCountStalenessAsTheRoundsMissingFromTheModel() {
        assertThat(SyncRules.staleness(6, 5)).isZero();
        assertThat(SyncRules.staleness(8, 5)).isEqualTo(2);
        assertThat(SyncRules.staleness(3, 5)).isZero();
    }

    @Test
    void shouldFindTheEntryInForceInARingOfEntries() {
        // a ring of 4 holding first rounds 10, 20, 30 from head 2: physical 2, 3, 0
        final int[] first = {30, -1, 10, 20};
        assertThat(SyncRules.entryFor(first, 0, 2, 3, 4, 5)).isEqualTo(2);
        assertThat(SyncRules.entryFor(first, 0, 2, 3, 4, 10)).isEqualTo(2);
        assertThat(SyncRules.entryFor(first, 0, 2, 3, 4, 29)).isEqualTo(3);
        assertThat(SyncRules.entryFor(first, 0, 2, 3, 4, 30)).isZero();
        // a list kept in place
        assertThat(SyncRules.entryFor(new int[] {0, 100, 200}, 0, 0, 3, 8, 150)).isEqualTo(1);
    }

    @Test
    void shouldKeepLateModeWireCodesFixed() {
        assertThat(LateMode.DROP.wireCode()).isZero();
        assertThat(LateMode.FOLD.wireCode()).isEqualTo(1);
        for (final LateMode mode : LateMode.values()) {
            assertThat(LateMode.fromWireCode(mode.wireCode())).isEqualTo(mode);
        }
        assertThat(LateMode.isWireCode(2)).isFalse();
        assertThatThrownBy(() -> LateMode.fromWireCode(2)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void pspSamplesTheGivenNumberOfRequiredWorkersUniformlyAndTheSameWayEveryTime() {
        // required: workers 0..69 but 5 and 66 (two words), sample 7 per round
        final long[] from = {~(1L << 5), 0b111011L};
        final int[] chosen = new int[128];
        final long[] out = new long[2];
        final long[] again = new long[2];
        for (int round = 0; round < 20_000; round++) {
            SyncRules.sample(42, round, from, 0, 2, 7, out, 0);
            SyncRules.sample(42, round, from, 0, 2, 7, again, 0);
            assertThat(again).as("the same sample for the same job and round").containsExactly(out);
            assertThat(Long.bitCount(out[0]) + Long.bitCount(out[1])).isEqualTo(7);
            assertThat(out[0] & ~from[0]).as("only required workers").isZero();
            assertThat(out[1] & ~from[1]).isZero();
            for (int w = 0; w < 128; w++) {
                if ((out[w >>> 6] & (1L << (w & 63))) != 0) {
                    chosen[w]++;
                }
            }
        }
        // 68 required workers, each in a sample with probability 7/68: about 2059 times of 20000
        for (int w = 0; w < 70; w++) {
            if (w == 5 || w == 66) {
                assertThat(chosen[w]).isZero();
            } else {
                assertThat(chosen[w]).as("worker %d", w).isBetween(1800, 2330);
            }
        }
        SyncRules.sample(42, 3, new long[] {0b1011L}, 0, 1, 5, out, 0);
        assertThat(out[0]).as("a sample as large as the set is the set").isEqualTo(0b1011L);
    }

    @Test
    void aWorkerBackLaterThanTheTimeoutAfterTheRoundBeforeSitsTheRoundOut() {
        final long ms = 1_000_000L;
        final long heard = 1_000 * ms;
        // round 5 open, round 4 released without it, heard at 1 s, a 30 ms timeout
        assertThat(SyncRules.sitsOut(5, 4, 4, heard, heard + 31 * ms, 30 * ms, 100)).as("the others started 31 ms ago").isTrue();
        assertThat(SyncRules.sitsOut(5, 4, 4, heard, heard + 30 * ms, 30 * ms, 100)).as("it still comes within the timeout").isFalse();
        assertThat(SyncRules.sitsOut(5, 4, 4, heard, heard + 500 * ms, SyncConfig.NO_TIMEOUT, 100)).as("no timeout: waited for").isFalse();
        assertThat(SyncRules.sitsOut(5, 3, 3, heard, heard + 500 * ms, 30 * ms, 100)).as("round 4 pending: nobody started 5 on it").isFalse();
        assertThat(SyncRules.sitsOut(5, 5, 5, heard, heard + 500 * ms, 30 * ms, 100)).as("released already: skipped anyway").isFalse();
        // round 0: R is -1 and no round went without it (-1), whatever the clock reads
        assertThat(SyncRules.sitsOut(0, -1, -1, 0, Long.MAX_VALUE / 2, 30 * ms, 100)).as("round 0").isFalse();
        assertThat(SyncRules.sitsOut(5, 4, 3, heard, heard + 31 * ms, 30 * ms, 100)).as("it contributed to round 4: in step").isFalse();
        assertThat(SyncRules.sitsOut(5, 4, 4, heard, heard + 31 * ms, 30 * ms, 5)).as("the last round: nothing after it would tell").isFalse();
    }
}
