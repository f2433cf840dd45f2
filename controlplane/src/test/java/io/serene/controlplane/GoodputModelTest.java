package io.serene.controlplane;

import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;
import org.junit.jupiter.api.Test;

import java.util.BitSet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** The replay against arrival sets worked out by hand (times in ms; the model's in ns). */
class GoodputModelTest {
    private static final long MS = 1_000_000L;

    private static GoodputModel.Rounds rounds(final int n, final long... ms) {
        final long[][] times = new long[n][ms.length];
        for (int r = 0; r < n; r++) {
            for (int w = 0; w < ms.length; w++) {
                times[r][w] = ms[w] * MS;
            }
        }
        return GoodputModel.Rounds.of(times);
    }

    @Test
    void bspWaitsForTheSlowestEveryRoundPlusTheOverhead() {
        final GoodputModel.Estimate e = GoodputModel.replay(SyncConfig.bsp(), rounds(2, 10, 20), 2 * MS, 2, 1);
        // round 0 released at 22, round 1 at 22 + 22
        assertThat(e.roundNs()).isEqualTo(22.0 * MS);
        assertThat(e.share()).isEqualTo(1.0);
        assertThat(e.staleness()).isZero();
        assertThat(e.goodput()).isCloseTo(1 / 0.022, within(1e-9));
    }

    @Test
    void anExcludedWorkerIsWaitedForByNobodyAndItsLateGradientsAreDropped() {
        final BitSet one = new BitSet();
        one.set(1);
        final SyncConfig excluding = SyncConfig.bsp().excluding(one).withLateMode(LateMode.DROP);
        final GoodputModel.Estimate e = GoodputModel.replay(excluding, rounds(2, 10, 20), 0, 2, 1);
        // worker 0 alone: released at 10 and 20; worker 1 arrives at 20, late
        assertThat(e.roundNs()).isEqualTo(10.0 * MS);
        assertThat(e.share()).isEqualTo(0.5);
        // worker 1 gets to round 1 at 20, when it is released: it skips it
        // folded instead, its round-0 gradient counts, one round staler
        final GoodputModel.Estimate folded = GoodputModel.replay(SyncConfig.bsp().excluding(one), rounds(2, 10, 20), 0, 2, 1);
        assertThat(folded.share()).isEqualTo(0.75);
        assertThat(folded.staleness()).isCloseTo(1 / 3.0, within(1e-12));
    }

    @Test
    void aWorkerAPausePutOutOfStepSitsOneRoundOutAndIsBackInStep() {
        // four workers of 100 ms, worker 3 paused to 250 ms in round 2, a 20 ms timeout with drop
        final GoodputModel.Rounds window = rounds(20, 100, 100, 100, 100);
        window.computeNs()[2][3] = 250 * MS;
        final SyncConfig timed = SyncConfig.bsp().withTimeoutNs(20 * MS).withLateMode(LateMode.DROP);
        final GoodputModel.Estimate e = GoodputModel.replay(timed, window, 0, 0, 4, 1);
        // round 2 goes without it, 20 ms after the others' (at 320); it ends round 2's compute at 450, so it
        // sits round 3 out, which goes without waiting for it (the late set) at 420, and round 4 too (it
        // got there 30 ms after round 3's release); it computes round 5 with the others
        assertThat(e.share()).isEqualTo(77 / 80.0);
        assertThat(e.roundNs()).isCloseTo((19 * 100 + 120) * MS / 20.0, within(1.0));
    }

    @Test
    void aTimeoutReleasesThatLongAfterTheFirstArrival() {
        final SyncConfig timed = SyncConfig.bsp().withTimeoutNs(5 * MS).withLateMode(LateMode.DROP);
        final GoodputModel.Estimate e = GoodputModel.replay(timed, rounds(1, 10, 30), 0, 2, 1);
        assertThat(e.roundNs()).isEqualTo(15.0 * MS);
        assertThat(e.share()).isEqualTo(0.5);
    }

    @Test
    void fastestKReleasesAtTheKthArrival() {
        final GoodputModel.Estimate e = GoodputModel.replay(SyncConfig.fastest(2).withLateMode(LateMode.DROP),
            rounds(1, 10, 30, 20), 0, 3, 1);
        assertThat(e.roundNs()).isEqualTo(20.0 * MS);
        assertThat(e.share()).isCloseTo(2 / 3.0, within(1e-12));
    }

    @Test
    void aBoundLetsTheFastWorkerComputeAheadOnAStalerModel() {
        // ssp:1, worker 0 10 ms, worker 1 20 ms, three rounds:
        // round 0: arrivals 10, 20; released at 20. Round 1 is not gated: worker 0 starts at 10 (round 0
        // pending: staleness 1), worker 1 at 20; arrivals 20, 40, released at 40. Round 2 waits for
        // round 0: worker 0 starts at 20 (round 1 pending: staleness 1), worker 1 at 40; released at 60.
        final GoodputModel.Estimate e = GoodputModel.replay(SyncConfig.ssp(1), rounds(3, 10, 20), 0, 2, 1);
        assertThat(e.roundNs()).isEqualTo(20.0 * MS);
        assertThat(e.share()).isEqualTo(1.0);
        assertThat(e.staleness()).isCloseTo(2 / 6.0, within(1e-12));
        // worth: four fresh gradients and two at 1 / (1 + 1), over 6, per 20 ms
        assertThat(e.goodput()).isCloseTo((5 / 6.0) / 0.020, within(1e-9));
    }

    @Test
    void underJitterABoundAbsorbsWhatBspWaitsFor() {
        // each worker slow (40 ms) in a different round, 10 ms otherwise: BSP waits 40 every round
        final long[][] jitter = {{40 * MS, 10 * MS}, {10 * MS, 40 * MS}, {40 * MS, 10 * MS}, {10 * MS, 40 * MS}};
        final GoodputModel.Estimate bsp = GoodputModel.replay(SyncConfig.bsp(), GoodputModel.Rounds.of(jitter), 0, 2, 1);
        final GoodputModel.Estimate ssp = GoodputModel.replay(SyncConfig.ssp(2), GoodputModel.Rounds.of(jitter), 0, 2, 1);
        assertThat(bsp.roundNs()).isEqualTo(40.0 * MS);
        assertThat(ssp.roundNs()).isLessThan(bsp.roundNs());
    }

    @Test
    void jitterIsTheOffsetBeyondTheComputeLag() {
        // computes of 10 and 14 ms; the switch saw the second 9 ms after the first packet, the first 3 ms after
        final GoodputModel.Rounds r = GoodputModel.Rounds.measured(new long[][] {{10 * MS, 14 * MS}}, new long[][] {{3 * MS, 9 * MS}});
        assertThat(r.jitterNs()[0]).containsExactly(3 * MS, 5 * MS);
        assertThat(r.offsets()).containsExactly(3.0 * MS, 9.0 * MS);
        // an offset inside the compute lag is no jitter (never below 0)
        assertThat(GoodputModel.Rounds.measured(new long[][] {{10 * MS, 14 * MS}}, new long[][] {{0, 2 * MS}}).jitterNs()[0])
            .containsExactly(0L, 0L);
    }

    @Test
    void aTimeoutInsideTheJitterDropsWhatArrivesLate() {
        // equal computes of 10 ms; the second worker's packets come 6 ms after the first's, every round
        final long[][] compute = {{10 * MS, 10 * MS}, {10 * MS, 10 * MS}};
        final GoodputModel.Rounds r = GoodputModel.Rounds.measured(compute, new long[][] {{0, 6 * MS}, {0, 6 * MS}});
        final SyncConfig timed = SyncConfig.bsp().withTimeoutNs(4 * MS).withLateMode(LateMode.DROP);
        final GoodputModel.Estimate cut = GoodputModel.replay(timed, r, 0, 2, 1);
        // round 0 released 4 ms after the first packet, at 14, before the second worker's (16): dropped,
        // and the second worker joins the late set; round 1: the first out at 24, the second at 16 + 10 + 6
        // = 32, released as the first comes (the late set is not waited for): dropped again
        assertThat(cut.share()).isEqualTo(0.5);
        assertThat(cut.roundNs()).isEqualTo(12.0 * MS);
        // without the jitter the same timeout cuts nothing
        assertThat(GoodputModel.replay(timed, GoodputModel.Rounds.of(compute), 0, 2, 1).share()).isEqualTo(1.0);
        // BSP waits for it: 16 ms a round
        assertThat(GoodputModel.replay(SyncConfig.bsp(), r, 0, 2, 1).roundNs()).isEqualTo(16.0 * MS);
    }

    @Test
    void rebalancedBatchesKeepTheSamplesAndStretchTheComputeTimes() {
        final BitSet one = new BitSet();
        one.set(1);
        final SyncConfig excluding = SyncConfig.bsp().excluding(one).withLateMode(LateMode.DROP);
        // measured under BSP (batches B): worker 0 10 ms, worker 1 40 ms. Excluding worker 1, half the
        // contributions count: worker 0's batch doubles (20 ms), each contribution counting twice the samples
        final GoodputModel.Estimate e = GoodputModel.replayRebalanced(excluding, rounds(4, 10, 40), 0, 0, 2, 1, 1, 2);
        assertThat(e.roundNs()).isEqualTo(20.0 * MS);
        assertThat(e.share()).as("the contributions counted, which the floor keeps").isEqualTo(0.5);
        assertThat(e.goodput()).as("half the contributions, twice the samples each").isCloseTo(1 / 0.020, within(1e-9));
        // the same times measured while the batches were already doubled: 5 ms at B
        final GoodputModel.Estimate bsp = GoodputModel.replayRebalanced(SyncConfig.bsp(), rounds(4, 10, 40), 0, 0, 2, 1, 2, 2);
        assertThat(bsp.roundNs()).as("BSP at B: worker 1 at 20 ms").isEqualTo(20.0 * MS);
        // growth capped: three of four excluded would need 4x, at most 2x
        final BitSet three = new BitSet();
        three.set(1, 4);
        final GoodputModel.Estimate capped = GoodputModel.replayRebalanced(SyncConfig.bsp().excluding(three).withLateMode(LateMode.DROP),
            rounds(4, 10, 40, 40, 40), 0, 0, 4, 1, 1, 2);
        assertThat(capped.share()).isEqualTo(0.25);
        assertThat(capped.goodput()).as("a quarter of the contributions at twice the samples").isCloseTo(0.5 / 0.020, within(1e-9));
        assertThat(capped.roundNs()).isEqualTo(20.0 * MS);
    }
}
