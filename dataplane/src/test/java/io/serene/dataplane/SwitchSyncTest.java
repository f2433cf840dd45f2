package io.serene.dataplane;

import io.serene.protocol.Flags;
import io.serene.protocol.Outbox;
import io.serene.protocol.PacketFlyweight;
import io.serene.protocol.PacketType;
import io.serene.protocol.Status;
import io.serene.protocol.SyncConfig;
import io.serene.protocol.SyncConfigParser;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The release condition, timeouts, the bound and hot-swaps in the data plane (DESIGN.md section 2). */
class SwitchSyncTest {
    private static final int JOB = 3;
    private static final int POOL = 16;

    private final List<PacketFlyweight> sent = new ArrayList<>();
    private final List<Integer> ports = new ArrayList<>();
    private final Outbox outbox = (port, buffer, offset, length) -> {
        final ByteBuffer copy = PacketFlyweight.allocate(length);
        for (int i = 0; i < length; i++) {
            copy.put(i, buffer.get(offset + i));
        }
        sent.add(new PacketFlyweight().wrap(copy, 0, length));
        ports.add(port);
    };
    private SwitchPipeline pipeline;

    private void start(final String sync, final int workers) {
        pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8).chunkElements(4)
            .maxPoolSize(POOL).roundRing(4).defaultSync(SyncConfigParser.parse(sync)).conclude(), ex -> {
                throw new AssertionError(ex);
            });
        for (int w = 0; w < workers; w++) {
            final ByteBuffer b = PacketFlyweight.allocate(PacketFlyweight.JOIN_LENGTH);
            new PacketFlyweight().wrap(b, 0, PacketFlyweight.JOIN_LENGTH).initHeader(PacketType.JOIN).jobId(JOB)
                .workerId(w).joinWorkerCount(workers).joinElementsPerRound(8);
            pipeline.onPacket(100 + w, b, 0, PacketFlyweight.JOIN_LENGTH, 0, outbox);
        }
        sent.clear();
        ports.clear();
    }

    @Test
    void fastestOneReleasesOnTheFirstContributionAndAnswersLateOnes() {
        start("fastest:1", 2);
        contribute(0, 0, 0, 7, 0);
        assertThat(results()).hasSize(2);
        final PacketFlyweight result = results().get(0);
        assertThat(result.contributorCount()).isEqualTo(1);
        assertThat(result.bitmapWord(0)).isEqualTo(0b01L);
        assertThat(result.resultValue(0)).isEqualTo(7);
        sent.clear();
        ports.clear();
        contribute(1, 0, 0, 5, 0);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_LATE)).isEqualTo(1);
        // the late worker gets the released result, whose bitmap leaves it out, and nothing changed
        assertThat(sent).hasSize(1);
        assertThat(ports).containsExactly(101);
        assertThat(sent.get(0).type()).isEqualTo(PacketType.RESULT);
        assertThat(sent.get(0).hasFlag(Flags.RETRANSMIT)).isTrue();
        assertThat(sent.get(0).bitmapWord(0)).isEqualTo(0b01L);
        assertThat(sent.get(0).resultValue(0)).isEqualTo(7);
        assertThat(pipeline.counters().get(SwitchCounter.PARTIAL_RELEASES)).isEqualTo(1);
        assertThat(pipeline.counters().get(SwitchCounter.CONTRIBUTIONS)).isEqualTo(1);
    }

    @Test
    void excludedWorkersAreNotWaitedForButCountWhenInTime() {
        start("exclude:1", 2);
        contribute(1, 0, 0, 5, 0);
        assertThat(results()).isEmpty();
        contribute(0, 0, 0, 7, 0);
        assertThat(results().get(0).contributorCount()).isEqualTo(2);
        assertThat(results().get(0).resultValue(0)).isEqualTo(12);
        sent.clear();
        contribute(0, 0, 1, 1, 0);
        assertThat(results()).hasSize(2);
        assertThat(results().get(0).bitmapWord(0)).isEqualTo(0b01L);
    }

    @Test
    void fastestKWaitsForAnyK() {
        start("fastest:2", 3);
        contribute(2, 0, 0, 1, 0);
        assertThat(results()).isEmpty();
        contribute(0, 0, 0, 1, 0);
        assertThat(results()).hasSize(3);
        assertThat(results().get(0).bitmapWord(0)).isEqualTo(0b101L);
    }

    @Test
    void timeoutReleasesWhateverArrivedOnceItPassed() {
        start("asp+timeout:1", 2);
        contribute(0, 0, 0, 9, 0);
        assertThat(pipeline.onTimer(0, outbox)).isGreaterThan(0);
        pipeline.onTimer(500_000, outbox);
        assertThat(results()).isEmpty();
        pipeline.onTimer(1_000_000, outbox);
        pipeline.onTimer(1_300_000, outbox);
        assertThat(results()).hasSize(2);
        assertThat(results().get(0).contributorCount()).isEqualTo(1);
        assertThat(pipeline.counters().get(SwitchCounter.TIMEOUT_RELEASES)).isEqualTo(1);
        sent.clear();
        contribute(1, 0, 0, 9, 1_400_000);
        assertThat(sent.get(0).bitmapWord(0)).isEqualTo(0b01L);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_LATE)).isEqualTo(1);
    }

    @Test
    void theSwitchRefusesRoundsBeyondTheBound() {
        start("ssp:1", 1);
        contribute(0, 2, 0, 1, 0);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_BEYOND_BOUND)).isEqualTo(1);
        assertThat(Status.fromCode(sent.get(0).status())).isEqualTo(Status.AHEAD);
        contribute(0, 1, 0, 1, 0);
        contribute(0, 1, 1, 1, 0);
        assertThat(pipeline.releasedRound(JOB)).isEqualTo(-1);
        contribute(0, 0, 0, 1, 0);
        contribute(0, 0, 1, 1, 0);
        assertThat(pipeline.releasedRound(JOB)).isEqualTo(1);
        contribute(0, 2, 0, 1, 0);
        contribute(0, 3, 0, 1, 0);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_BEYOND_BOUND)).isEqualTo(1);
    }

    @Test
    void hotSwapAppliesFromItsFirstRoundOnlyAndBumpsTheEpoch() {
        start("bsp", 2);
        assertThat(pipeline.earliestSwapRound(JOB)).isEqualTo(1);
        assertThat(pipeline.installConfig(JOB, 0, SyncConfig.fastest(1))).isEqualTo(Status.TOO_EARLY);
        assertThat(pipeline.installConfig(JOB, 1, SyncConfig.fastest(5))).isEqualTo(Status.BAD_KEY);
        assertThat(pipeline.installConfig(99, 1, SyncConfig.fastest(1))).isEqualTo(Status.UNKNOWN_JOB);
        assertThat(pipeline.installConfig(JOB, 1, SyncConfig.fastest(1))).isEqualTo(Status.OK);
        assertThat(pipeline.configEpoch(JOB)).isEqualTo(1);
        // round 0 keeps BSP: one contribution does not release it
        contribute(0, 0, 0, 1, 0);
        assertThat(results()).isEmpty();
        contribute(1, 0, 0, 1, 0);
        assertThat(results().get(0).contributorCount()).isEqualTo(2);
        assertThat(results().get(0).configEpoch()).isEqualTo(1);
        contribute(0, 0, 1, 1, 0);
        contribute(1, 0, 1, 1, 0);
        sent.clear();
        // round 1 follows fastest:1
        contribute(1, 1, 0, 3, 0);
        assertThat(results()).hasSize(2);
        assertThat(results().get(0).contributorCount()).isEqualTo(1);
    }

    @Test
    void theEarliestSwapRoundCoversEveryRoundAWorkerMayHaveStarted() {
        start("ssp:2", 2);
        // R = -1, s = 2: workers may be computing rounds 0..2
        assertThat(pipeline.earliestSwapRound(JOB)).isEqualTo(3);
        contribute(0, 2, 0, 1, 0);
        assertThat(pipeline.earliestSwapRound(JOB)).isEqualTo(3);
        start("asp", 2);
        // asp: bounded only by the release ring (4 rounds here)
        assertThat(pipeline.earliestSwapRound(JOB)).isEqualTo(4);
    }

    @Test
    void theConfigTableRefusesMoreChangesThanItHoldsUntilRoundsAreReleased() {
        start("asp", 1);
        int round = pipeline.earliestSwapRound(JOB);
        for (int i = 0; i < ConfigTable.ENTRIES - 1; i++) {
            assertThat(pipeline.installConfig(JOB, round + i, SyncConfig.asp())).isEqualTo(Status.OK);
        }
        assertThat(pipeline.installConfig(JOB, round + 20, SyncConfig.asp())).isEqualTo(Status.TABLE_FULL);
        // a change at an existing entry's round replaces it and those after
        assertThat(pipeline.installConfig(JOB, round + 3, SyncConfig.bsp())).isEqualTo(Status.OK);
        assertThat(pipeline.configEpoch(JOB)).isEqualTo(ConfigTable.ENTRIES);
    }

    @Test
    void theSwitchEstimatesEachWorkersComputeTimeFromArrivalsAndTheReleasesItWaitedFor() {
        final long ms = 1_000_000L;
        start("bsp", 2);
        both(0, 0, 1 * ms);
        assertThat(pipeline.iterationNs(JOB, 0)).as("unknown before a second round").isZero();
        both(1, 0, 10 * ms);
        // round 1: both were held until round 0's release at 10 ms; worker 1 is the straggler
        both(0, 1, 12 * ms);
        both(1, 1, 40 * ms);
        assertThat(pipeline.iterationNs(JOB, 0)).isEqualTo(2 * ms);
        assertThat(pipeline.iterationNs(JOB, 1)).isEqualTo(30 * ms);
        // round 2: worker 0 waited for round 1's release at 40 ms, not since its own last packet
        both(1, 2, 43 * ms);
        both(0, 2, 45 * ms);
        assertThat(pipeline.iterationNs(JOB, 0)).isEqualTo(5 * ms);
        assertThat(pipeline.iterationNs(JOB, 1)).isEqualTo(3 * ms);
        assertThat(pipeline.iterationNs(JOB + 1, 0)).isEqualTo(-1);
    }

    @Test
    void aComputeTimeTheWorkerReportsReplacesTheEstimate() {
        final long ms = 1_000_000L;
        start("bsp", 2);
        both(0, 0, 1 * ms, 7 * ms);
        assertThat(pipeline.iterationNs(JOB, 0)).as("known from the first round").isEqualTo(7 * ms);
        both(1, 0, 10 * ms);
        // worker 1 computed round 1's gradient long before (say, while excluded): its packet comes
        // at once after the release, but it reports 80 ms
        both(1, 1, 10 * ms + 100_000, 80 * ms);
        both(0, 1, 12 * ms);
        assertThat(pipeline.iterationNs(JOB, 1)).isEqualTo(80 * ms);
        assertThat(pipeline.iterationNs(JOB, 0)).as("not reported: estimated").isEqualTo(2 * ms);
        final PacketFlyweight p = new PacketFlyweight().wrap(PacketFlyweight.allocate(PacketFlyweight.HEADER_LENGTH), 0,
            PacketFlyweight.HEADER_LENGTH);
        assertThat(p.computeTimeNs(1).computeTimeNs()).as("rounded up to 100 us").isEqualTo(PacketFlyweight.COMPUTE_TIME_UNIT_NS);
        assertThat(p.computeTimeNs(3_600_000_000_000L).computeTimeNs()).as("saturates").isEqualTo(0xFFFF * PacketFlyweight.COMPUTE_TIME_UNIT_NS);
    }

    /** Both chunks of a round from one worker at one time. */
    private void both(final int worker, final int round, final long nowNs) {
        both(worker, round, nowNs, 0);
    }

    private void both(final int worker, final int round, final long nowNs, final long reportedNs) {
        contribute(worker, round, 0, 1, nowNs, reportedNs);
        contribute(worker, round, 1, 1, nowNs, reportedNs);
    }

    private List<PacketFlyweight> results() {
        final List<PacketFlyweight> results = new ArrayList<>();
        for (final PacketFlyweight p : sent) {
            if (p.type() == PacketType.RESULT) {
                results.add(p);
            }
        }
        return results;
    }

    /** Worker w's values for chunk c of round r (seq = 2r + c; 2 chunks per round). */
    private void contribute(final int worker, final int round, final int chunk, final int value, final long nowNs) {
        contribute(worker, round, chunk, value, nowNs, 0);
    }

    private void contribute(final int worker, final int round, final int chunk, final int value, final long nowNs,
                            final long reportedNs) {
        final long seq = 2L * round + chunk;
        final int length = PacketFlyweight.dataLength(4);
        final ByteBuffer b = PacketFlyweight.allocate(length);
        final PacketFlyweight p = new PacketFlyweight().wrap(b, 0, length).initHeader(PacketType.DATA).jobId(JOB)
            .workerId(worker).seq(seq).round(round).chunk(chunk).poolIndex((int) (seq % POOL))
            .shadowSet((int) ((seq / POOL) & 1)).flags(Flags.VALUES).elementCount(4).exponent((byte) 0).computeTimeNs(reportedNs);
        for (int i = 0; i < 4; i++) {
            p.dataValue(i, value);
        }
        pipeline.onPacket(100 + worker, b, 0, length, nowNs, outbox);
    }
}
