package io.serene.dataplane;

import io.serene.protocol.ConfigPacket;
import io.serene.protocol.DataPacket;
import io.serene.protocol.Flags;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Outbox;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.ResultPacket;
import io.serene.protocol.Status;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.StepLayout;
import io.serene.protocol.sync.SyncConfigParser;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableWrite;
import io.serene.protocol.table.WorkerGroupEntry;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The release condition, timeouts, the bound and hot-swaps in the data plane (docs/design.md, the synchronization contract). */
class SwitchSyncTest {
    private static final int JOB = 3;
    /** Room for the rounds these tests send (their exponent steps, never sent, would hold their slots' next use back). */
    private static final int POOL = 32;
    private static final StepLayout LAYOUT = new StepLayout(8, 4, POOL);

    private final List<PacketHeader> sent = new ArrayList<>();
    private final List<Integer> ports = new ArrayList<>();
    private final Outbox outbox = (port, buffer, offset, length) -> {
        final ByteBuffer copy = Packet.allocate(length);
        for (int i = 0; i < length; i++) {
            copy.put(i, buffer.get(offset + i));
        }
        sent.add(new PacketHeader().wrap(copy, 0, length));
        ports.add(port);
    };
    private SwitchPipeline pipeline;

    private void start(final String sync, final int workers) {
        pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8).chunkElements(4)
            .maxPoolSize(POOL).roundRing(4).defaultSync(SyncConfigParser.parse(sync)).conclude(), ex -> {
                throw new AssertionError(ex);
            });
        for (int w = 0; w < workers; w++) {
            final ByteBuffer b = Packet.allocate(JoinPacket.LENGTH);
            new JoinPacket().wrap(b, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).jobId(JOB)
                .workerId(w).workerCount(workers).elementsPerRound(8);
            pipeline.onPacket(100 + w, b, 0, JoinPacket.LENGTH, 0, outbox);
        }
        sent.clear();
        ports.clear();
    }

    @Test
    void pspReleasesOnceTheRoundsSampleContributed() {
        start("psp:2", 4);
        final BitSet sample = SyncConfigParser.parse("psp:2").resolve(4).requiredFor(JOB, 0);
        assertThat(sample.cardinality()).isEqualTo(2);
        // the two workers outside the sample first: nothing released
        int value = 1;
        for (int w = 0; w < 4; w++) {
            if (!sample.get(w)) {
                contribute(w, 0, 0, value++, 0);
            }
        }
        assertThat(results()).isEmpty();
        final int first = sample.nextSetBit(0);
        contribute(first, 0, 0, value++, 0);
        assertThat(results()).as("half the sample").isEmpty();
        contribute(sample.nextSetBit(first + 1), 0, 0, value, 0);
        assertThat(results()).as("one result per worker").hasSize(4);
        assertThat(results().get(0).contributorCount()).isEqualTo(4);
    }

    @Test
    void fastestOneReleasesOnTheFirstContributionAndAnswersLateOnes() {
        start("fastest:1", 2);
        contribute(0, 0, 0, 7, 0);
        assertThat(results()).hasSize(2);
        final ResultPacket result = results().get(0);
        assertThat(result.contributorCount()).isEqualTo(1);
        assertThat(result.bitmapWord(0)).isEqualTo(0b01L);
        assertThat(result.value(0)).isEqualTo(7);
        sent.clear();
        ports.clear();
        contribute(1, 0, 0, 5, 0);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_LATE)).isEqualTo(1);
        // the late worker gets the released result, whose bitmap leaves it out, and nothing changed
        assertThat(sent).hasSize(1);
        assertThat(ports).containsExactly(101);
        assertThat(sent.get(0).type()).isEqualTo(PacketType.RESULT);
        assertThat(sent.get(0).hasFlag(Flags.RETRANSMIT)).isTrue();
        assertThat(results().get(0).bitmapWord(0)).isEqualTo(0b01L);
        assertThat(results().get(0).value(0)).isEqualTo(7);
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
        assertThat(results().get(0).value(0)).isEqualTo(12);
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
        assertThat(results().get(0).bitmapWord(0)).isEqualTo(0b01L);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_LATE)).isEqualTo(1);
    }

    /**
     * A worker a timeout left out is not waited for while it is later than the timeout; once a late
     * contribution of it comes within the timeout of the step's first (it lost only to the early
     * release of the late set), it is waited for again. Before, it could stay in the late set for good
     * whenever it arrived just after the others, and every later round went without it.
     */
    @Test
    void aLateWorkerThatComesWithinTheTimeoutIsWaitedForAgain() {
        start("bsp+timeout:1", 2);
        // round 0: worker 1 misses both chunks by more than the timeout
        contribute(0, 0, 0, 1, 0);
        contribute(0, 0, 1, 1, 0);
        pipeline.onTimer(1_000_000, outbox);
        pipeline.onTimer(1_300_000, outbox);
        assertThat(pipeline.releasedRound(JOB)).isEqualTo(0);
        contribute(1, 0, 0, 1, 1_400_000);
        contribute(1, 0, 1, 1, 1_400_000);
        // round 1: released as soon as worker 0 is in (worker 1 is late); worker 1 comes 0.2 ms later
        contribute(0, 1, 0, 1, 2_000_000);
        contribute(0, 1, 1, 1, 2_000_000);
        assertThat(pipeline.releasedRound(JOB)).as("the late set is not waited for").isEqualTo(1);
        contribute(1, 1, 0, 1, 2_200_000);
        contribute(1, 1, 1, 1, 2_200_000);
        // round 2: worker 1 caught up, so the round waits for it (up to the timeout)
        sent.clear();
        contribute(0, 2, 0, 1, 3_000_000);
        contribute(0, 2, 1, 1, 3_000_000);
        assertThat(pipeline.releasedRound(JOB)).as("waited for again").isEqualTo(1);
        contribute(1, 2, 0, 1, 3_100_000);
        contribute(1, 2, 1, 1, 3_100_000);
        assertThat(pipeline.releasedRound(JOB)).isEqualTo(2);
        assertThat(results().get(results().size() - 1).contributorCount()).isEqualTo(2);
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
    void theSwitchKeepsWhenRPassedEachOfTheLastGRounds() {
        start("bsp", 2);
        for (int r = 0; r < 6; r++) {
            for (int w = 0; w < 2; w++) {
                for (int c = 0; c < 2; c++) {
                    contribute(w, r, c, 1, 1_000L * (r + 1) + (w == 1 && c == 1 ? 500 : 0));
                }
            }
        }
        assertThat(pipeline.releasedRound(JOB)).isEqualTo(5);
        assertThat(pipeline.releasedAtNs(JOB, 5)).isEqualTo(6_500L);
        assertThat(pipeline.releasedAtNs(JOB, 2)).isEqualTo(3_500L);
        assertThat(pipeline.releasedAtNs(JOB, 1)).as("its ring entry serves round 5 now").isEqualTo(-1);
        assertThat(pipeline.releasedAtNs(JOB, 6)).as("not released").isEqualTo(-1);
        assertThat(pipeline.releasedAtNs(JOB + 1, 5)).as("an unknown job").isEqualTo(-1);
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
        final DataPacket p = new DataPacket().wrap(Packet.allocate(Packet.HEADER_LENGTH), 0, Packet.HEADER_LENGTH);
        assertThat(p.computeTimeNs(1).computeTimeNs()).as("rounded up to 100 us").isEqualTo(DataPacket.COMPUTE_TIME_UNIT_NS);
        assertThat(p.computeTimeNs(3_600_000_000_000L).computeTimeNs()).as("saturates").isEqualTo(0xFFFF * DataPacket.COMPUTE_TIME_UNIT_NS);
    }

    @Test
    void aWorkerGroupHasItsOwnReleaseConditionBoundAndLateMode() {
        start("bsp", 4);
        assertThat(group(3, 1)).isEqualTo(Status.OK);
        // from round 1, releases no longer wait for group 1 (worker 3), which may run 2 rounds ahead
        assertThat(pipeline.write(TableWrite.insert(SyncConfigEntry.builder().job(JOB).group(1).firstRound(1)
            .config(SyncConfigParser.parse("ssp:2+exclude:3+drop")).build()))).isEqualTo(Status.OK);
        assertThat(pipeline.group(JOB, 3)).isEqualTo(1);
        assertThat(pipeline.group(JOB, 0)).isZero();
        // every worker gets its own group's entries: worker 3 the ssp:2+drop from round 1
        sent.clear();
        ports.clear();
        pipeline.onTimer(0, outbox);
        for (int i = 0; i < sent.size(); i++) {
            final ConfigPacket p = new ConfigPacket().wrap(sent.get(i).buffer(), 0, sent.get(i).length());
            if (p.type() == PacketType.CONFIG && p.firstRound() == 1) {
                assertThat(ports.get(i)).isEqualTo(103);
                assertThat(p.bound()).isEqualTo(2);
                assertThat(p.lateMode()).isZero();
            }
        }
        assertThat(configsTo(103)).isEqualTo(2);
        assertThat(configsTo(100)).isEqualTo(1);
        sent.clear();
        // round 0: bsp everywhere
        for (int w = 0; w < 3; w++) {
            contribute(w, 0, 0, 1, 0);
        }
        assertThat(results()).isEmpty();
        contribute(3, 0, 0, 1, 0);
        assertThat(results().get(0).contributorCount()).isEqualTo(4);
        for (int w = 0; w < 4; w++) {
            contribute(w, 0, 1, 1, 0);
        }
        assertThat(pipeline.releasedRound(JOB)).isZero();
        sent.clear();
        // round 1: group 0 alone releases it
        for (int w = 0; w < 3; w++) {
            contribute(w, 1, 0, 1, 0);
        }
        assertThat(results()).hasSize(4);
        assertThat(results().get(0).bitmapWord(0)).isEqualTo(0b0111L);
        // a group's entries may change from past what its own workers may have started
        assertThat(pipeline.earliestSwapRound(JOB, 0)).isEqualTo(2);
        assertThat(pipeline.earliestSwapRound(JOB, 1)).isEqualTo(4);
        assertThat(pipeline.earliestSwapRound(JOB, 4)).isEqualTo(-1);
        // with R = 0: worker 3 (bound 2) may send round 3, worker 0 (bound 0) not round 2
        contribute(3, 3, 0, 1, 0);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_BEYOND_BOUND)).isZero();
        contribute(0, 2, 0, 1, 0);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_BEYOND_BOUND)).isEqualTo(1);
        // the bound of group 1 counts for the earliest swap round: R + 2 + 2
        assertThat(pipeline.earliestSwapRound(JOB)).isEqualTo(4);
        assertThat(group(2, 1)).as("membership is fixed once the job started").isEqualTo(Status.TOO_EARLY);
    }

    @Test
    void aGroupsQuorumCountsItsOwnMembersOnly() {
        start("bsp", 4);
        group(2, 1);
        group(3, 1);
        assertThat(pipeline.installConfig(JOB, 0, 1, SyncConfig.fastest(1))).isEqualTo(Status.OK);
        releaseRoundZero(4);
        // group 0 = {0, 1} needs any 1 of them; group 1 = {2, 3} needs both
        contribute(2, 1, 0, 1, 0);
        contribute(3, 1, 0, 1, 0);
        assertThat(results()).as("no member of group 0 yet").isEmpty();
        contribute(1, 1, 0, 1, 0);
        assertThat(results()).hasSize(4);
        assertThat(results().get(0).bitmapWord(0)).isEqualTo(0b1110L);
    }

    @Test
    void aGroupsTimeoutReleasesOnlyItsOwnCondition() {
        start("bsp", 2);
        group(1, 1);
        assertThat(pipeline.installConfig(JOB, 1, 1, SyncConfigParser.parse("bsp+timeout:1"))).isEqualTo(Status.OK);
        releaseRoundZero(2);
        // worker 1 alone: group 0 (worker 0, no timeout) is never met
        contribute(1, 1, 0, 1, 0);
        pipeline.onTimer(0, outbox);
        pipeline.onTimer(2_000_000, outbox);
        pipeline.onTimer(4_000_000, outbox);
        assertThat(results()).isEmpty();
        // worker 0 alone: group 1's timeout passes
        contribute(0, 1, 1, 1, 5_000_000);
        pipeline.onTimer(5_500_000, outbox);
        assertThat(results()).isEmpty();
        pipeline.onTimer(7_000_000, outbox);
        pipeline.onTimer(7_500_000, outbox);
        assertThat(results()).hasSize(2);
        assertThat(results().get(0).bitmapWord(0)).isEqualTo(0b01L);
        assertThat(pipeline.counters().get(SwitchCounter.TIMEOUT_RELEASES)).isEqualTo(1);
    }

    @Test
    void workerGroupWritesReturnResultCodes() {
        start("bsp", 4);
        final WorkerGroupEntry three = WorkerGroupEntry.builder().job(JOB).worker(3).group(1).build();
        assertThat(three.toString()).isEqualTo("worker_group{job=3, worker=3} -> 1");
        assertThat(TableWrite.delete(three).toString()).isEqualTo("DELETE worker_group{job=3, worker=3}");
        assertThat(pipeline.write(TableWrite.insert(three.toBuilder().job(99).build()))).isEqualTo(Status.UNKNOWN_JOB);
        assertThat(pipeline.write(TableWrite.insert(three))).isEqualTo(Status.OK);
        assertThat(pipeline.write(TableWrite.insert(three))).isEqualTo(Status.DUPLICATE_ENTRY);
        assertThat(pipeline.write(TableWrite.modify(three.toBuilder().worker(2).build()))).isEqualTo(Status.NOT_FOUND);
        assertThat(pipeline.write(TableWrite.insert(three.toBuilder().worker(4).build()))).as("no worker 4 in 4").isEqualTo(Status.BAD_KEY);
        assertThat(pipeline.write(TableWrite.insert(three.toBuilder().worker(2).group(4).build()))).as("groups 0..3").isEqualTo(Status.BAD_KEY);
        assertThat(pipeline.write(TableWrite.modify(three.toBuilder().group(2).build()))).isEqualTo(Status.OK);
        assertThat(pipeline.entries(JOB)).startsWith(three.toBuilder().group(2).build());
        // group 2 gets an entry needing 2 contributions of its members: one member is too few
        assertThat(pipeline.installConfig(JOB, 2, 5, SyncConfig.fastest(2))).as("quorum 2 of 1 member").isEqualTo(Status.BAD_KEY);
        assertThat(pipeline.write(TableWrite.insert(three.toBuilder().worker(2).group(2).build()))).isEqualTo(Status.OK);
        assertThat(pipeline.installConfig(JOB, 2, 5, SyncConfig.fastest(2))).isEqualTo(Status.OK);
        assertThat(pipeline.write(TableWrite.delete(three))).as("group 2's fastest:2 needs both members").isEqualTo(Status.BAD_KEY);
        assertThat(pipeline.group(JOB, 3)).isEqualTo(2);
        assertThat(pipeline.configEntries(JOB)).extracting(SwitchPipeline.ConfigRow::group).containsExactly(0, 2, 2);
        final int epoch = pipeline.configEpoch(JOB);
        contribute(0, 0, 0, 1, 0);
        assertThat(pipeline.write(TableWrite.insert(three.toBuilder().worker(1).build()))).isEqualTo(Status.TOO_EARLY);
        assertThat(pipeline.configEpoch(JOB)).as("refused writes change nothing").isEqualTo(epoch);
    }

    @Test
    void theContextGivesNewJobsTheirGroupsAndEachGroupsStartConfig() {
        pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8).chunkElements(4)
            .maxPoolSize(POOL).roundRing(4).defaultSync(SyncConfig.bsp()).defaultGroups(0, 0, 1).groupSync(1, SyncConfig.fastest(1))
            .conclude(), ex -> {
                throw new AssertionError(ex);
            });
        for (int w = 0; w < 3; w++) {
            final ByteBuffer b = Packet.allocate(JoinPacket.LENGTH);
            new JoinPacket().wrap(b, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).jobId(JOB)
                .workerId(w).workerCount(3).elementsPerRound(8);
            pipeline.onPacket(100 + w, b, 0, JoinPacket.LENGTH, 0, outbox);
        }
        assertThat(pipeline.group(JOB, 2)).isEqualTo(1);
        assertThat(pipeline.entries(JOB)).containsExactly(
            WorkerGroupEntry.builder().job(JOB).worker(2).group(1).build(),
            SyncConfigEntry.builder().job(JOB).firstRound(0).config(SyncConfig.bsp()).build(),
            SyncConfigEntry.builder().job(JOB).group(1).firstRound(0).config(SyncConfig.fastest(1)).build());
        sent.clear();
        // round 0 already: group 0 waits for both its workers, group 1 for any 1 of its one
        contribute(0, 0, 0, 1, 0);
        contribute(1, 0, 0, 1, 0);
        assertThat(results()).isEmpty();
        contribute(2, 0, 0, 1, 0);
        assertThat(results()).hasSize(3);
        // a job whose groups cannot take their start configs is refused: with 2 workers, worker 1
        // alone is in a group starting with fastest:2
        pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8).chunkElements(4)
            .maxPoolSize(POOL).roundRing(4).defaultSync(SyncConfig.bsp()).defaultGroups(0, 1).groupSync(1, SyncConfig.fastest(2))
            .conclude(), ex -> {
                throw new AssertionError(ex);
            });
        final ByteBuffer b = Packet.allocate(JoinPacket.LENGTH);
        new JoinPacket().wrap(b, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).jobId(JOB + 1)
            .workerId(0).workerCount(2).elementsPerRound(8);
        pipeline.onPacket(200, b, 0, JoinPacket.LENGTH, 0, outbox);
        assertThat(pipeline.workers(JOB + 1)).isEqualTo(-1);
        assertThat(pipeline.counters().get(SwitchCounter.JOIN_REFUSED)).isEqualTo(1);
    }

    private void releaseRoundZero(final int workers) {
        for (int w = 0; w < workers; w++) {
            both(w, 0, 0);
        }
        assertThat(pipeline.releasedRound(JOB)).isZero();
        sent.clear();
        ports.clear();
    }

    private Status group(final int worker, final int group) {
        return pipeline.write(TableWrite.insert(WorkerGroupEntry.builder().job(JOB).worker(worker).group(group).build()));
    }

    private int configsTo(final int port) {
        int n = 0;
        for (int i = 0; i < sent.size(); i++) {
            if (sent.get(i).type() == PacketType.CONFIG && ports.get(i) == port) {
                n++;
            }
        }
        return n;
    }

    /** Both chunks of a round from one worker at one time. */
    private void both(final int worker, final int round, final long nowNs) {
        both(worker, round, nowNs, 0);
    }

    private void both(final int worker, final int round, final long nowNs, final long reportedNs) {
        contribute(worker, round, 0, 1, nowNs, reportedNs);
        contribute(worker, round, 1, 1, nowNs, reportedNs);
    }

    private List<ResultPacket> results() {
        final List<ResultPacket> results = new ArrayList<>();
        for (final PacketHeader p : sent) {
            if (p.type() == PacketType.RESULT) {
                results.add(new ResultPacket().wrap(p.buffer(), p.offset(), p.length()));
            }
        }
        return results;
    }

    /** Worker w's values for chunk c of round r (its value step: 8 elements in chunks of 4, one exponent step, never sent here). */
    private void contribute(final int worker, final int round, final int chunk, final int value, final long nowNs) {
        contribute(worker, round, chunk, value, nowNs, 0);
    }

    private void contribute(final int worker, final int round, final int chunk, final int value, final long nowNs,
                            final long reportedNs) {
        final long seq = LAYOUT.seq(round, LAYOUT.exponentSteps() + chunk);
        final int length = DataPacket.length(4);
        final ByteBuffer b = Packet.allocate(length);
        final DataPacket p = new DataPacket().wrap(b, 0, length).initHeader(PacketType.DATA).jobId(JOB)
            .workerId(worker).seq(seq).round(round).chunk(chunk).poolIndex((int) (seq % POOL))
            .shadowSet((int) ((seq / POOL) & 1)).flags(Flags.VALUES).elementCount(4).exponent((byte) 0).computeTimeNs(reportedNs);
        for (int i = 0; i < 4; i++) {
            p.value(i, value);
        }
        pipeline.onPacket(100 + worker, b, 0, length, nowNs, outbox);
    }
}
