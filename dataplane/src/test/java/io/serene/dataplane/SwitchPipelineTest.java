package io.serene.dataplane;

import io.serene.protocol.ConfigPacket;
import io.serene.protocol.DataPacket;
import io.serene.protocol.Flags;
import io.serene.protocol.JobKeys;
import io.serene.protocol.PacketAuth;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Outbox;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketCheck;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.ResultPacket;
import io.serene.protocol.Status;
import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncConfigParser;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

class SwitchPipelineTest {
    private static final int JOB = 7;

    /** One packet the pipeline emitted. */
    private static final class Sent {
        final int port;
        final PacketHeader packet;
        final ResultPacket result;
        final JoinPacket join;
        final ConfigPacket config;

        Sent(final int port, final ByteBuffer copy) {
            this.port = port;
            this.packet = new PacketHeader().wrap(copy, 0, copy.capacity());
            this.result = new ResultPacket().wrap(copy, 0, copy.capacity());
            this.join = new JoinPacket().wrap(copy, 0, copy.capacity());
            this.config = new ConfigPacket().wrap(copy, 0, copy.capacity());
        }
    }

    private final List<Sent> sent = new ArrayList<>();
    private final List<Throwable> errors = new ArrayList<>();
    private final Outbox outbox = (port, buffer, offset, length) -> {
        final ByteBuffer copy = Packet.allocate(length);
        for (int i = 0; i < length; i++) {
            copy.put(i, buffer.get(offset + i));
        }
        sent.add(new Sent(port, copy));
    };
    private SwitchPipeline pipeline;
    /** The secret the test's workers sign their packets under (null: unsigned), and their next packet number. */
    private byte[] signWith;
    private long number = 1;
    /** The packet the test signed last (a capture to send again). */
    private ByteBuffer lastSigned;
    private int lastSignedLength;

    /** Numbers the packet of {@code length} bytes in {@code b} and signs it as its worker would, under {@link #signWith}. */
    private void sign(final ByteBuffer b, final int length) {
        lastSigned = b;
        lastSignedLength = length;
        final PacketHeader p = new PacketHeader().wrap(b, 0, length);
        if (signWith == null) {
            p.packetNumber(number++);
            return;
        }
        final JobKeys.WorkerKey key = JobKeys.workerKey(JobKeys.jobSecret(signWith, p.jobId()), p.jobId(), p.workerId());
        PacketAuth.seal(key.k0(), key.k1(), number++, p);
    }

    /** Whether the switch signed a packet it sent under job {@code job}'s reply key from {@code secret}. */
    private static boolean signedBySwitch(final byte[] secret, final int job, final Packet<?> p) {
        final JobKeys.WorkerKey key = JobKeys.workerKey(JobKeys.jobSecret(secret, job), job, 0);
        return PacketAuth.verify(key.r0(), key.r1(), p);
    }

    @BeforeEach
    void setUp() {
        pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8)
            .chunkElements(4).maxPoolSize(2).roundRing(4).conclude(), errors::add);
    }

    @Test
    void shouldCreateJobOnJoinAndAnswerWithPoolParameters() {
        join(0, 2, 8);
        assertThat(sent).hasSize(2);
        final JoinPacket ack = sent.get(0).join;
        assertThat(ack.type()).isEqualTo(PacketType.JOIN_ACK);
        // then the job's config table (one entry: the default asp, from round 0)
        final ConfigPacket config = last().config;
        assertThat(config.type()).isEqualTo(PacketType.CONFIG);
        assertThat(config.check()).isEqualTo(PacketCheck.OK);
        assertThat(config.elementCount()).isEqualTo(1);
        assertThat(config.firstRound()).isZero();
        assertThat(config.bound()).isEqualTo(SyncConfig.UNBOUNDED);
        assertThat(config.quorum()).isEqualTo(2);
        assertThat(config.requiredWord(0)).isEqualTo(0b11L);
        assertThat(Status.fromCode(ack.status())).isEqualTo(Status.OK);
        assertThat(ack.poolSize()).isEqualTo(2);
        assertThat(ack.chunkElements()).isEqualTo(4);
        assertThat(pipeline.activeJobs()).isEqualTo(1);
        assertThat(pipeline.releasedRound(JOB)).isEqualTo(-1);
    }

    @Test
    void shouldRefuseJoinWithAnotherShapeOrOutOfRangeOrWhenFull() {
        join(0, 2, 8);
        join(1, 3, 8);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.SHAPE_MISMATCH);
        joinJob(99, 9, 20, 8);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.BAD_KEY);
        joinJob(100, 0, 1, 8);
        joinJob(101, 0, 1, 8);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.TABLE_FULL);
        assertThat(pipeline.counters().get(SwitchCounter.JOIN_REFUSED)).isEqualTo(3);
    }

    @Test
    void shouldReleaseExactSumToEveryWorkerWhenAllContributed() {
        join(0, 2, 4);
        join(1, 2, 4);
        sent.clear();
        data(0, 0, 0, 0, new int[] {1, 2, 3, -4});
        assertThat(sent).isEmpty();
        data(1, 0, 0, 0, new int[] {10, 20, 30, 40});
        assertThat(sent).hasSize(2);
        assertThat(sent).extracting(s -> s.port).containsExactlyInAnyOrder(100, 101);
        final ResultPacket result = sent.get(0).result;
        assertThat(result.check()).isEqualTo(PacketCheck.OK);
        assertThat(result.type()).isEqualTo(PacketType.RESULT);
        assertThat(result.contributorCount()).isEqualTo(2);
        assertThat(result.bitmapWord(0)).isEqualTo(0b11L);
        assertThat(new int[] {result.value(0), result.value(1), result.value(2), result.value(3)})
            .containsExactly(11, 22, 33, 36);
        assertThat(result.releasedRound()).isEqualTo(0);
        assertThat(pipeline.releasedRound(JOB)).isEqualTo(0);
        assertThat(pipeline.clock(JOB, 1)).isEqualTo(0);
    }

    @Test
    void aJoinedWorkerIsBoundToItsAddressSoNoOtherProcessChangesItsSumsOrTakesItsPlace() {
        join(0, 2, 4);
        join(1, 2, 4);
        sent.clear();
        // worker 1's id from another address: its DATA is dropped, its JOIN refused, its LEAVE ignored
        dataFrom(999, JOB, 1, 0, 0, 0, new int[] {1000, 1000, 1000, 1000});
        assertThat(pipeline.counters().get(SwitchCounter.DROP_FOREIGN_PORT)).isEqualTo(1);
        joinFrom(999, JOB, 1, 2, 4);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.IN_USE);
        assertThat(last().port).isEqualTo(999);
        leaveFrom(999, 1);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_FOREIGN_PORT)).isEqualTo(2);
        // a JOIN retried from the worker's own address is answered as before
        join(1, 2, 4);
        assertThat(Status.fromCode(sent.get(sent.size() - 2).packet.status())).as("JOIN_ACK, then the config").isEqualTo(Status.OK);
        sent.clear();
        data(0, 0, 0, 0, new int[] {1, 2, 3, 4});
        data(1, 0, 0, 0, new int[] {10, 20, 30, 40});
        final ResultPacket result = sent.get(0).result;
        assertThat(new int[] {result.value(0), result.value(1), result.value(2), result.value(3)})
            .as("the sums hold the two workers alone").containsExactly(11, 22, 33, 44);
    }

    @Test
    void onlyAWorkersKeySignsForItAndAReplayChangesNothing() {
        final byte[] secret = "a secret of more than sixteen bytes".getBytes(StandardCharsets.UTF_8);
        final byte[] another = "another secret, also long enough".getBytes(StandardCharsets.UTF_8);
        pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8)
            .chunkElements(4).maxPoolSize(2).roundRing(4).secret(secret).conclude(), errors::add);
        // a JOIN under another secret is refused and creates nothing: nobody can squat the job id
        signWith = another;
        join(0, 2, 4);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.BAD_MAC);
        assertThat(signedBySwitch(secret, JOB, last().packet)).as("the refusal is signed as the switch's packets are").isTrue();
        assertThat(pipeline.workers(JOB)).isNegative();
        assertThat(pipeline.counters().get(SwitchCounter.DROP_BAD_MAC)).isOne();
        signWith = secret;
        join(0, 2, 4);
        join(1, 2, 4);
        assertThat(sent.stream().filter(s -> s.port == 101)).allSatisfy(s -> assertThat(signedBySwitch(secret, JOB, s.packet)).isTrue());
        sent.clear();
        // worker 1's own address (a spoofed source), signed under another secret: dropped and counted, unanswered
        signWith = another;
        data(1, 0, 0, 0, new int[] {1000, 1000, 1000, 1000});
        leave(1);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_BAD_MAC)).isEqualTo(3);
        assertThat(sent).isEmpty();
        // worker 0's DATA with worker 1's id, signed with worker 0's key: not worker 1's MAC
        final int length = DataPacket.length(4);
        final ByteBuffer forged = Packet.allocate(length);
        final DataPacket f = new DataPacket().wrap(forged, 0, length).initHeader(PacketType.DATA).jobId(JOB).workerId(0).seq(0).round(0)
            .chunk(0).shadowSet(0).poolIndex(0).flags(Flags.VALUES).elementCount(4).exponent((byte) 0);
        final JobKeys.WorkerKey worker0 = JobKeys.workerKey(JobKeys.jobSecret(secret, JOB), JOB, 0);
        f.workerId(1);
        PacketAuth.seal(worker0.k0(), worker0.k1(), number++, f);
        pipeline.onPacket(101, forged, 0, length, 0, outbox);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_BAD_MAC)).isEqualTo(4);
        // a captured DATA of worker 1 sent again: the replay window refuses it
        signWith = secret;
        final ByteBuffer captured = Packet.allocate(length);
        new DataPacket().wrap(captured, 0, length).initHeader(PacketType.DATA).jobId(JOB).workerId(1).seq(0).round(0).chunk(0)
            .shadowSet(0).poolIndex(0).flags(Flags.VALUES).elementCount(4).exponent((byte) 0).value(0, 10).value(1, 20).value(2, 30)
            .value(3, 40);
        sign(captured, length);
        pipeline.onPacket(101, captured, 0, length, 0, outbox);
        pipeline.onPacket(101, captured, 0, length, 0, outbox);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_REPLAYED)).isOne();
        assertThat(pipeline.counters().get(SwitchCounter.DUPLICATES)).as("the replay never reached the slot").isZero();
        sent.clear();
        // worker 1 restarted on another address: its JOIN with its key moves it there (a new incarnation)
        joinFrom(999, JOB, 1, 2, 4);
        assertThat(Status.fromCode(sent.get(0).packet.status())).isEqualTo(Status.OK);
        assertThat(sent.get(0).packet.seq()).as("the JOIN_ACK echoes the JOIN's number").isEqualTo(number - 1);
        assertThat(pipeline.counters().get(SwitchCounter.REBINDS)).isEqualTo(1);
        sent.clear();
        data(0, 0, 0, 0, new int[] {1, 2, 3, 4});
        assertThat(sent).extracting(s -> s.port).as("worker 1's contribution from before its restart counts").containsExactlyInAnyOrder(100, 999);
        final ResultPacket result = sent.get(0).result;
        assertThat(new int[] {result.value(0), result.value(1), result.value(2), result.value(3)}).containsExactly(11, 22, 33, 44);
        assertThat(signedBySwitch(secret, JOB, result)).isTrue();
        assertThat(signedBySwitch(secret, JOB + 1, result)).as("another job's reply key").isFalse();
        // worker 0 leaves and joins again: its captured LEAVE, sent again, takes it out of nothing
        final ByteBuffer capturedLeave = Packet.allocate(Packet.HEADER_LENGTH);
        new PacketHeader().wrap(capturedLeave, 0, Packet.HEADER_LENGTH).initHeader(PacketType.LEAVE).jobId(JOB).workerId(0);
        sign(capturedLeave, Packet.HEADER_LENGTH);
        pipeline.onPacket(100, capturedLeave, 0, Packet.HEADER_LENGTH, 0, outbox);
        join(0, 2, 4);
        pipeline.onPacket(100, capturedLeave, 0, Packet.HEADER_LENGTH, 0, outbox);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_REPLAYED)).isEqualTo(2);
        assertThat(pipeline.counters().get(SwitchCounter.LEAVES)).as("the replay never got to the LEAVE").isOne();
        // a job this switch does not have: answered UNKNOWN_JOB only to a packet signed for it
        sent.clear();
        dataJob(JOB + 5, 0, 0, 0, 0, new int[] {1, 1, 1, 1});
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.UNKNOWN_JOB);
        assertThat(last().packet.type()).isEqualTo(PacketType.NACK);
        assertThat(signedBySwitch(secret, JOB + 5, last().packet)).isTrue();
        sent.clear();
        signWith = another;
        dataJob(JOB + 5, 0, 0, 0, 0, new int[] {1, 1, 1, 1});
        assertThat(sent).as("a stranger learns nothing").isEmpty();
        // without a secret on the switch, nothing is checked
        pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8)
            .chunkElements(4).maxPoolSize(2).roundRing(4).conclude(), errors::add);
        signWith = null;
        joinJob(JOB + 1, 0, 2, 4);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.OK);
        assertThat(last().packet.mac()).isEqualTo(PacketAuth.UNSIGNED);
        assertThat(errors).isEmpty();
    }

    @Test
    void aJobRebuiltFromCheckpointsGoesOnAfterTheMostRoundsEveryWorkerOffers() {
        final byte[] secret = "a secret of more than sixteen bytes".getBytes(StandardCharsets.UTF_8);
        pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8)
            .chunkElements(4).maxPoolSize(2).roundRing(4).secret(secret).conclude(), errors::add);
        signWith = secret;
        // the switch restarted: the first worker back waits for the others
        rebuild(100, 0, 40, 30, 20);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.PENDING);
        dataFrom(100, JOB, 0, 0, 0, 0, new int[] {1, 1, 1, 1});
        assertThat(Status.fromCode(last().packet.status())).as("no round while the job forms").isEqualTo(Status.UNKNOWN_JOB);
        rebuild(101, 1, 30, 20);
        assertThat(Status.fromCode(last().packet.status())).as("every worker in, but the first not back since").isEqualTo(Status.PENDING);
        sent.clear();
        // worker 0 retries (its offers read again, after the others stopped): the job forms
        rebuild(100, 0, 40, 30, 20);
        assertThat(Status.fromCode(sent.get(sent.size() - 2).packet.status())).isEqualTo(Status.OK);
        assertThat(sent.get(sent.size() - 2).packet.round()).as("the most rounds both can go on after").isEqualTo(30);
        // worker 1, told PENDING, hears it at once (rounds released before its next retry would be lost on it)
        assertThat(sent).filteredOn(s -> s.port == 101 && s.packet.type() == PacketType.JOIN_ACK).singleElement()
            .satisfies(s -> {
                assertThat(Status.fromCode(s.packet.status())).isEqualTo(Status.OK);
                assertThat(s.join.workerId()).isOne();
                assertThat(s.packet.round()).isEqualTo(30);
                assertThat(signedBySwitch(secret, JOB, s.packet)).isTrue();
            });
        assertThat(sent).filteredOn(s -> s.port == 101 && s.packet.type() == PacketType.CONFIG).as("and its config list").isNotEmpty();
        rebuild(100, 0, 40, 30, 20);
        assertThat(sent.get(sent.size() - 2).packet.round()).as("a JOIN retried is answered alike").isEqualTo(30);
        assertThat(pipeline.counters().get(SwitchCounter.JOBS_REBUILT)).isZero();
        final ByteBuffer captured = lastSigned;
        final int capturedLength = lastSignedLength;
        // worker 1 restarts from its disk checkpoints on a new address: the live job is formed anew
        rebuild(999, 1, 20, 10);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.PENDING);
        assertThat(pipeline.counters().get(SwitchCounter.JOBS_REBUILT)).isEqualTo(1);
        // worker 0's JOIN from before, sent again from elsewhere: the rebuilt job kept worker 0's replay window
        final int before = sent.size();
        pipeline.onPacket(555, captured, 0, capturedLength, 0, outbox);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_REPLAYED)).isOne();
        assertThat(sent).as("unanswered: the job never had worker 0 at 555").hasSize(before);
        dataFrom(100, JOB, 0, 0, 0, 0, new int[] {1, 1, 1, 1});
        assertThat(Status.fromCode(last().packet.status())).as("worker 0 learns its job is gone").isEqualTo(Status.UNKNOWN_JOB);
        rebuild(102, 0, 40, 30, 20);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.PENDING);
        rebuild(999, 1, 20, 10);
        assertThat(sent.get(sent.size() - 2).packet.round()).isEqualTo(20);
        // without a round in common the job starts over
        rebuildJob(JOB + 1, 100, 0, 40);
        rebuildJob(JOB + 1, 101, 1, 30);
        rebuildJob(JOB + 1, 100, 0, 40);
        assertThat(sent.get(sent.size() - 2).packet.round()).isZero();
        // a stranger without worker 0's key cannot rebuild a job
        signWith = "another secret, also long enough".getBytes(StandardCharsets.UTF_8);
        rebuild(555, 0, 40);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.BAD_MAC);
        assertThat(pipeline.counters().get(SwitchCounter.JOBS_REBUILT)).isEqualTo(1);
        // nor anyone a job without a secret: nobody can prove to be its worker
        pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8)
            .chunkElements(4).maxPoolSize(2).roundRing(4).conclude(), errors::add);
        signWith = null;
        join(0, 2, 4);
        join(1, 2, 4);
        rebuild(555, 1, 40);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.IN_USE);
        assertThat(pipeline.counters().get(SwitchCounter.JOBS_REBUILT)).isZero();
        assertThat(errors).isEmpty();
    }

    private void rebuild(final int port, final int worker, final int... offers) {
        rebuildJob(JOB, port, worker, offers);
    }

    private void rebuildJob(final int job, final int port, final int worker, final int... offers) {
        final ByteBuffer b = Packet.allocate(JoinPacket.LENGTH);
        final JoinPacket p = new JoinPacket().wrap(b, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).flags(Flags.REBUILD).jobId(job)
            .workerId(worker).workerCount(2).elementsPerRound(4);
        for (int i = 0; i < JoinPacket.MAX_OFFERS; i++) {
            p.offer(i, i < offers.length ? offers[i] : -1);
        }
        sign(b, JoinPacket.LENGTH);
        pipeline.onPacket(port, b, 0, JoinPacket.LENGTH, 0, outbox);
    }

    @Test
    void eachWorkersFinishedRoundCarriesItsComputeTimeAndHowLongAfterTheStepsFirstPacketItCame() {
        join(0, 2, 8);
        join(1, 2, 8);
        assertThat(pipeline.finishedRound(JOB, 0)).isEqualTo(-1);
        // round 0, two chunks (steps 0 and 1): worker 1's first comes 3 ms after worker 0's, its second 5 ms after
        dataAt(0, 0, 0, 0, 1_000_000, 7_000_000);
        dataAt(1, 0, 0, 0, 4_000_000, 9_000_000);
        dataAt(0, 1, 0, 1, 2_000_000, 7_000_000);
        dataAt(1, 1, 0, 1, 7_000_000, 9_000_000);
        assertThat(pipeline.releasedRound(JOB)).isEqualTo(0);
        // still round 0's newest: nothing finished yet
        assertThat(pipeline.finishedRound(JOB, 1)).isEqualTo(-1);
        // round 1's first packets settle round 0: its compute times, and the most each came after a step's first
        // (three steps a round: the exponents' and two chunks')
        dataAt(1, 3, 1, 0, 20_000_000, 6_000_000);
        dataAt(0, 3, 1, 0, 21_000_000, 8_000_000);
        for (final int w : new int[] {0, 1}) {
            assertThat(pipeline.finishedRound(JOB, w)).isEqualTo(0);
        }
        assertThat(pipeline.finishedComputeNs(JOB, 0)).isEqualTo(7_000_000);
        assertThat(pipeline.finishedComputeNs(JOB, 1)).isEqualTo(9_000_000);
        assertThat(pipeline.finishedOffsetNs(JOB, 0)).isZero();
        assertThat(pipeline.finishedOffsetNs(JOB, 1)).isEqualTo(5_000_000);
        // the newest compute times are round 1's
        assertThat(pipeline.iterationNs(JOB, 0)).isEqualTo(8_000_000);
        assertThat(pipeline.finishedRound(JOB, 9)).as("no such worker").isEqualTo(-1);
        assertThat(pipeline.finishedOffsetNs(JOB + 1, 0)).as("no such job").isEqualTo(-1);
    }

    @Test
    void aReportOfARoundReleasedWithoutItsWorkerMovesItsTelemetryOnlyAndNothingElse() {
        join(0, 2, 8);
        join(1, 2, 8);
        // rounds 0 to 2 of both workers, each step of them (the exponents', then two chunks')
        for (int r = 0; r < 3; r++) {
            roundAt(r, 10_000_000L * r, new long[] {7_000_000, 9_000_000}, 0, 1);
        }
        assertThat(pipeline.releasedRound(JOB)).isEqualTo(2);
        // worker 1 left out from the earliest round a change may name: that round released with worker 0 alone
        final int e = pipeline.earliestSwapRound(JOB);
        final BitSet one = new BitSet();
        one.set(1);
        assertThat(pipeline.installConfig(JOB, e, SyncConfig.bsp().excluding(one).withLateMode(LateMode.DROP))).isEqualTo(Status.OK);
        for (int r = 3; r < e; r++) {
            roundAt(r, 10_000_000L * r, new long[] {7_000_000, 9_000_000}, 0, 1);
        }
        roundAt(e, 10_000_000L * e, new long[] {6_000_000}, 0);
        assertThat(pipeline.releasedRound(JOB)).isEqualTo(e);
        sent.clear();
        final long contributions = pipeline.counters().get(SwitchCounter.CONTRIBUTIONS);
        // a round not released yet is contributed to, not reported
        report(1, 3L * (e + 1), e + 1, 10_000_000L * e + 1_000_000, 30_000_000);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_BAD_STEP)).isEqualTo(1);
        // worker 1 reports round e, released without it: its telemetry moves, nothing else
        report(1, 3L * e, e, 10_000_000L * e + 2_000_000, 3_000_000);
        assertThat(pipeline.counters().get(SwitchCounter.REPORTS)).isEqualTo(1);
        assertThat(pipeline.iterationNs(JOB, 1)).isEqualTo(3_000_000);
        assertThat(pipeline.finishedRound(JOB, 1)).isEqualTo(e - 1);
        assertThat(pipeline.finishedComputeNs(JOB, 1)).isEqualTo(9_000_000);
        assertThat(pipeline.finishedOffsetNs(JOB, 1)).as("its last round's, in which it came with worker 0").isLessThan(3);
        assertThat(pipeline.counters().get(SwitchCounter.CONTRIBUTIONS)).isEqualTo(contributions);
        assertThat(pipeline.clock(JOB, 1)).as("a report is no contribution").isEqualTo(e - 1);
        assertThat(pipeline.heardRound(JOB, 1)).as("but it is heard of: alive").isEqualTo(e);
        assertThat(pipeline.heardRound(JOB, 9)).isEqualTo(-1);
        assertThat(sent).as("a report is answered with nothing").isEmpty();
        assertThat(errors).isEmpty();
    }

    @Test
    void aNewSourceIsAdmittedOnlyForAPacketWhoseHeaderPassesTheChecks() {
        final byte[] sevens = new byte[JoinPacket.LENGTH];
        java.util.Arrays.fill(sevens, (byte) 7);
        assertThat(pipeline.admits(ByteBuffer.wrap(sevens), 0, sevens.length)).isFalse();
        assertThat(pipeline.counters().get(SwitchCounter.PACKETS_IN)).isEqualTo(1);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_BAD_MAGIC)).as("counted as the drop it is").isEqualTo(1);
        final ByteBuffer b = Packet.allocate(JoinPacket.LENGTH);
        new JoinPacket().wrap(b, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).jobId(JOB).workerId(0).workerCount(2)
            .elementsPerRound(8);
        sign(b, JoinPacket.LENGTH);
        assertThat(pipeline.admits(b, 0, JoinPacket.LENGTH)).isTrue();
        assertThat(pipeline.counters().get(SwitchCounter.PACKETS_IN)).as("an admitted packet is counted when it is handled").isEqualTo(1);
        assertThat(errors).isEmpty();
    }

    @Test
    void aNewerIncarnationFencesTheOlderOnesJoinsAndADelayedRebuildChangesNothing() {
        final byte[] secret = "a secret of more than sixteen bytes".getBytes(StandardCharsets.UTF_8);
        pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8)
            .chunkElements(4).maxPoolSize(2).roundRing(4).secret(secret).conclude(), errors::add);
        signWith = secret;
        joinAs(100, 0, 10, false);
        joinAs(101, 1, 10, false);
        // worker 1 restarted (a later incarnation) on another address: it takes its place
        joinAs(999, 1, 20, false);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.OK);
        sent.clear();
        // the old process resumes: its JOIN is fenced, its DATA is from an address the worker left
        joinAs(101, 1, 10, false);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.FENCED);
        assertThat(pipeline.counters().get(SwitchCounter.JOINS_FENCED)).isEqualTo(1);
        dataFrom(101, JOB, 1, 0, 0, 0, new int[] {1000, 1000, 1000, 1000});
        assertThat(pipeline.counters().get(SwitchCounter.DROP_FOREIGN_PORT)).isEqualTo(1);
        // a packet numbered as the old process numbered them (before the new one joined), from its address: told FENCED
        final long next = number;
        number = 2;
        dataFrom(101, JOB, 1, 0, 0, 0, new int[] {1000, 1000, 1000, 1000});
        number = next;
        assertThat(pipeline.counters().get(SwitchCounter.DROP_REPLAYED)).isOne();
        assertThat(last().port).isEqualTo(101);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.FENCED);
        assertThat(last().packet.type()).isEqualTo(PacketType.NACK);
        // a REBUILD JOIN of the old incarnation, delayed from another socket: fenced, the job stands
        joinAs(555, 1, 10, true);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.FENCED);
        assertThat(pipeline.counters().get(SwitchCounter.JOBS_REBUILT)).isZero();
        sent.clear();
        data(0, 0, 0, 0, new int[] {1, 2, 3, 4});
        dataFrom(999, JOB, 1, 0, 0, 0, new int[] {10, 20, 30, 40});
        final ResultPacket result = sent.get(0).result;
        assertThat(new int[] {result.value(0), result.value(1), result.value(2), result.value(3)}).containsExactly(11, 22, 33, 44);
        // the same incarnation joining again (a rejoin in the same process) is no older: it goes on
        joinAs(999, 1, 20, false);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.OK);
        assertThat(errors).isEmpty();
    }

    /** A JOIN of worker w of a job of two, 4 elements, with the given incarnation, from {@code port}. */
    private void joinAs(final int port, final int worker, final long incarnation, final boolean rebuild) {
        final ByteBuffer b = Packet.allocate(JoinPacket.LENGTH);
        final JoinPacket join = new JoinPacket().wrap(b, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).jobId(JOB)
            .workerId(worker).workerCount(2).elementsPerRound(4).incarnation(incarnation);
        for (int i = 0; i < JoinPacket.MAX_OFFERS; i++) {
            join.offer(i, -1);
        }
        if (rebuild) {
            join.flags(Flags.REBUILD).offer(0, 10);
        }
        sign(b, JoinPacket.LENGTH);
        pipeline.onPacket(port, b, 0, JoinPacket.LENGTH, 0, outbox);
    }

    @Test
    void shouldCountDuplicateOnceAndResendReleasedResultToTheRetransmitter() {
        join(0, 2, 4);
        join(1, 2, 4);
        data(0, 0, 0, 0, new int[] {1, 1, 1, 1});
        sent.clear();
        data(0, 0, 0, 0, new int[] {1, 1, 1, 1});
        assertThat(pipeline.counters().get(SwitchCounter.DUPLICATES)).isEqualTo(1);
        // the step is open: the resender hears that its part is held, and nothing else changes
        assertThat(sent).hasSize(1);
        assertThat(sent.get(0).port).isEqualTo(100);
        assertThat(sent.get(0).packet.type()).isEqualTo(PacketType.NACK);
        assertThat(Status.fromCode(sent.get(0).packet.status())).isEqualTo(Status.HELD);
        assertThat(sent.get(0).packet.seq()).isZero();
        data(1, 0, 0, 0, new int[] {2, 2, 2, 2});
        assertThat(last().result.value(0)).isEqualTo(3);
        sent.clear();
        data(1, 0, 0, 0, new int[] {2, 2, 2, 2});
        assertThat(sent).hasSize(1);
        assertThat(sent.get(0).port).isEqualTo(101);
        assertThat(sent.get(0).packet.hasFlag(Flags.RETRANSMIT)).isTrue();
        assertThat(sent.get(0).result.value(0)).isEqualTo(3);
        assertThat(pipeline.counters().get(SwitchCounter.RESULTS_RETRANSMITTED)).isEqualTo(1);
        assertThat(pipeline.counters().get(SwitchCounter.CONTRIBUTIONS)).isEqualTo(2);
    }

    @Test
    void shouldSaturateInsteadOfWrapping() {
        join(0, 2, 4);
        join(1, 2, 4);
        data(0, 0, 0, 0, new int[] {Integer.MAX_VALUE, Integer.MIN_VALUE, 5, -5});
        data(1, 0, 0, 0, new int[] {1, -1, 5, -5});
        final ResultPacket result = last().result;
        assertThat(result.value(0)).isEqualTo(Integer.MAX_VALUE);
        assertThat(result.value(1)).isEqualTo(Integer.MIN_VALUE);
        assertThat(result.value(2)).isEqualTo(10);
        assertThat(result.value(3)).isEqualTo(-10);
        assertThat(result.hasFlag(Flags.SATURATED)).isTrue();
        assertThat(pipeline.counters().get(SwitchCounter.OVERFLOWS)).isEqualTo(1);
    }

    @Test
    void shouldAddExactlyAtTheEdgeOfTheScaleAndSaturateBeyondIt() {
        join(0, 2, 8);
        join(1, 2, 8);
        // two workers: Q = 29, so contributions up to 2^29 take the fast path and cannot overflow
        data(0, 0, 0, 0, new int[] {1 << 29, -(1 << 29), 3, 0});
        data(1, 0, 0, 0, new int[] {1 << 29, -(1 << 29), 4, 0});
        assertThat(last().result.value(0)).isEqualTo(1 << 30);
        assertThat(last().result.value(1)).isEqualTo(-(1 << 30));
        assertThat(last().packet.hasFlag(Flags.SATURATED)).isFalse();
        // a misbehaving worker beyond the scale switches the slot to saturating adds
        data(0, 1, 0, 1, new int[] {5, 5, 5, 5});
        data(1, 1, 0, 1, new int[] {Integer.MAX_VALUE, Integer.MIN_VALUE, 1, -1});
        final ResultPacket result = last().result;
        assertThat(result.value(0)).isEqualTo(Integer.MAX_VALUE);
        assertThat(result.value(1)).isEqualTo(Integer.MIN_VALUE + 5);
        assertThat(result.value(2)).isEqualTo(6);
        assertThat(result.flags() & 0x40).as("internal slot flag stays off the wire").isZero();
    }

    @Test
    void shouldTakeTheMaximumOfExponentPayloads() {
        join(0, 2, 8);
        join(1, 2, 8);
        exponents(0, 0, new int[] {-3, 4});
        exponents(1, 0, new int[] {-7, 9});
        final ResultPacket result = last().result;
        assertThat(result.hasFlag(Flags.EXPONENTS)).isTrue();
        assertThat(result.value(0)).isEqualTo(-3);
        assertThat(result.value(1)).isEqualTo(9);
    }

    @Test
    void exponentsOutsideTheBlockFloatRangeAreDroppedBeforeTheyTouchASlot() {
        join(0, 2, 8);
        join(1, 2, 8);
        sent.clear();
        // an exponent step with a value beyond the range would make every worker quantize to nothing
        exponents(1, 0, new int[] {-3, Packet.MAX_EXPONENT + 1});
        exponents(1, 0, new int[] {Packet.MIN_EXPONENT - 1, 4});
        assertThat(pipeline.counters().get(SwitchCounter.DROP_BAD_EXPONENT)).isEqualTo(2);
        exponents(0, 0, new int[] {-3, 4});
        exponents(1, 0, new int[] {-7, Packet.MAX_EXPONENT});
        assertThat(sent).as("released with the two in-range steps alone").hasSize(2);
        assertThat(last().result.value(1)).isEqualTo(Packet.MAX_EXPONENT);
        assertThat(last().result.contributorCount()).isEqualTo(2);
    }

    @Test
    void aStepClaimsASlotForItsOwnRoundOnly() {
        join(0, 2, 4);
        join(1, 2, 4);
        sent.clear();
        // seq 2 is round 1's first step (2 steps a round here): naming round 0 it claims nothing
        dataFrom(100, JOB, 0, 2, 1, 0, new int[] {1, 1, 1, 1});
        assertThat(pipeline.counters().get(SwitchCounter.DROP_BAD_STEP)).isEqualTo(1);
        assertThat(sent).isEmpty();
        data(0, 1, 0, 0, new int[] {1, 2, 3, 4});
        data(1, 1, 0, 0, new int[] {10, 20, 30, 40});
        assertThat(last().result.value(0)).as("round 0's own step is summed as ever").isEqualTo(11);
    }

    @Test
    void shouldRefuseReuseOfASlotBeforeItsPreviousUseWasReleased() {
        join(0, 2, 8);
        join(1, 2, 8);
        // pool of 2: seq 2 reuses slot 0 in the other shadow set, allowed only once seq 0 is released
        data(0, 2, 1, 0, new int[] {1, 1, 1, 1});
        assertThat(pipeline.counters().get(SwitchCounter.DROP_AHEAD)).isEqualTo(1);
        assertThat(last().packet.type()).isEqualTo(PacketType.NACK);
        assertThat(Status.fromCode(last().packet.status())).isEqualTo(Status.AHEAD);
        data(0, 0, 0, 0, new int[] {1, 1, 1, 1});
        data(1, 0, 0, 0, new int[] {1, 1, 1, 1});
        data(0, 2, 1, 0, new int[] {1, 1, 1, 1});
        assertThat(pipeline.counters().get(SwitchCounter.DROP_AHEAD)).isEqualTo(1);
        assertThat(pipeline.counters().get(SwitchCounter.CONTRIBUTIONS)).isEqualTo(3);
    }

    @Test
    void shouldAdvanceReleasedRoundOnlyWhenEveryChunkOfTheRoundIsReleased() {
        join(0, 1, 8);
        data(0, 1, 0, 1, new int[] {1, 1, 1, 1});
        assertThat(pipeline.releasedRound(JOB)).isEqualTo(-1);
        data(0, 0, 0, 0, new int[] {1, 1, 1, 1});
        assertThat(pipeline.releasedRound(JOB)).isEqualTo(0);
    }

    @Test
    void shouldDropMalformedAndUnknownPacketsWithoutTouchingState() {
        join(0, 2, 4);
        final ByteBuffer junk = Packet.allocate(64);
        final SplittableRandom random = new SplittableRandom(5);
        for (int i = 0; i < 1000; i++) {
            final int length = random.nextInt(64);
            for (int b = 0; b < length; b++) {
                junk.put(b, (byte) random.nextInt(256));
            }
            pipeline.onPacket(100, junk, 0, length, 0, outbox);
        }
        dataJob(12345, 0, 0, 0, 0, new int[] {1, 1, 1, 1});
        data(5, 0, 0, 0, new int[] {1, 1, 1, 1});
        data(1, 0, 0, 0, new int[] {1, 1, 1, 1});
        assertThat(pipeline.counters().get(SwitchCounter.DROP_UNKNOWN_JOB)).isEqualTo(1);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_BAD_WORKER)).isEqualTo(1);
        assertThat(pipeline.counters().get(SwitchCounter.DROP_NOT_JOINED)).isEqualTo(1);
        assertThat(pipeline.counters().get(SwitchCounter.CONTRIBUTIONS)).isZero();
        assertThat(pipeline.counters().get(SwitchCounter.DROP_TRUNCATED) + pipeline.counters().get(SwitchCounter.DROP_BAD_MAGIC))
            .isGreaterThan(900);
        assertThat(errors).isEmpty();
        // the job still works afterwards
        join(1, 2, 4);
        data(0, 0, 0, 0, new int[] {1, 1, 1, 1});
        data(1, 0, 0, 0, new int[] {2, 2, 2, 2});
        assertThat(last().result.value(3)).isEqualTo(3);
    }

    @Test
    void shouldFreeTheJobWhenEveryWorkerLeft() {
        join(0, 2, 4);
        join(1, 2, 4);
        leave(0);
        assertThat(pipeline.activeJobs()).isEqualTo(1);
        leave(1);
        assertThat(pipeline.activeJobs()).isZero();
        assertThat(last().packet.type()).isEqualTo(PacketType.LEAVE_ACK);
        assertThat(pipeline.counters().get(SwitchCounter.JOBS_FREED)).isEqualTo(1);
    }

    @Test
    void memoryFormulaShouldCountExactlyWhatThePipelineAllocates() {
        for (final int workers : new int[] {1, 4, 64, 65, 256}) {
            for (final int jobs : new int[] {1, 3, 4, 16}) {
                final SwitchContext context = new SwitchContext().budgetBytes(64L << 20).maxJobs(jobs)
                    .maxWorkers(workers).chunkElements(100 + workers).roundRing(5 + jobs).conclude();
                final SwitchPipeline p = new SwitchPipeline(context, ex -> { });
                assertThat(p.allocatedBytes()).as("%d workers, %d jobs", workers, jobs)
                    .isEqualTo(context.memory().totalBytes())
                    .isLessThanOrEqualTo(64L << 20);
            }
        }
    }

    @Test
    void memoryPlanShouldStayInsideTheBudgetAndRejectTooSmallBudgets() {
        final SwitchMemory memory = new SwitchContext().budgetBytes(10_000_000).conclude().memory();
        assertThat(memory.totalBytes()).isLessThanOrEqualTo(10_000_000);
        assertThat(memory.poolSize()).isGreaterThan(500);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new SwitchContext().budgetBytes(100).conclude())
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("budgetBytes");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new SwitchContext().chunkElements(0).conclude())
            .hasMessageContaining("chunkElements");
    }

    @Test
    void theNextRoundNamesTheWorkersItWaitsForFromItsBitmapsAndItsConfig() {
        join(0, 3, 4);
        join(1, 3, 4);
        join(2, 3, 4);
        assertThat(pipeline.waitingFor(JOB).isEmpty()).as("nobody started round 0: it waits for nobody yet").isTrue();
        data(0, 0, 0, 0, new int[] {1, 1, 1, 1});
        assertThat(pipeline.waitingFor(JOB).toString()).isEqualTo("{1, 2}");
        data(1, 0, 0, 0, new int[] {1, 1, 1, 1});
        assertThat(pipeline.waitingFor(JOB).toString()).isEqualTo("{2}");
        data(2, 0, 0, 0, new int[] {1, 1, 1, 1});
        assertThat(pipeline.releasedRound(JOB)).isZero();
        assertThat(pipeline.waitingFor(JOB).isEmpty()).as("round 1: nobody started it").isTrue();
        assertThat(pipeline.waitingFor(99).isEmpty()).isTrue();

        // an excluded worker is not waited for; under a quorum every missing member is
        for (final String config : List.of("bsp+exclude:2", "fastest:2")) {
            pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8)
                .chunkElements(4).maxPoolSize(2).roundRing(4).defaultSync(SyncConfigParser.parse(config)).conclude(), errors::add);
            join(0, 3, 4);
            join(1, 3, 4);
            join(2, 3, 4);
            data(0, 0, 0, 0, new int[] {1, 1, 1, 1});
            assertThat(pipeline.waitingFor(JOB).toString()).as(config).isEqualTo(config.startsWith("bsp") ? "{1}" : "{1, 2}");
        }
        assertThat(errors).isEmpty();
    }

    @Test
    void aJobNobodySpeaksForExpiresAndFreesItsEntry() {
        pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8)
            .chunkElements(4).maxPoolSize(2).roundRing(4).jobLeaseNs(1_000).conclude(), errors::add);
        join(0, 2, 4);
        joinJob(JOB + 1, 0, 1, 4);
        assertThat(pipeline.activeJobs()).isEqualTo(2);
        assertThat(pipeline.onTimer(500, outbox)).as("the next lease end").isEqualTo(1_000);
        // job JOB hears from its worker at 900: its lease runs to 1900
        final int length = DataPacket.length(4);
        final ByteBuffer b = Packet.allocate(length);
        new DataPacket().wrap(b, 0, length).initHeader(PacketType.DATA).jobId(JOB).workerId(0).seq(0).round(0).chunk(0)
            .shadowSet(0).poolIndex(0).flags(Flags.VALUES).elementCount(4).exponent((byte) 0);
        sign(b, length);
        pipeline.onPacket(100, b, 0, length, 900, outbox);
        assertThat(pipeline.onTimer(1_000, outbox)).isEqualTo(1_900);
        assertThat(pipeline.activeJobs()).as("the job nobody spoke for is gone").isEqualTo(1);
        assertThat(pipeline.workers(JOB + 1)).isEqualTo(-1);
        assertThat(pipeline.workers(JOB)).isEqualTo(2);
        pipeline.onTimer(1_900, outbox);
        assertThat(pipeline.activeJobs()).isZero();
        assertThat(pipeline.counters().get(SwitchCounter.JOBS_EXPIRED)).isEqualTo(2);
        // the entries serve new jobs
        joinJob(JOB + 2, 0, 1, 4);
        joinJob(JOB + 3, 0, 1, 4);
        assertThat(pipeline.activeJobs()).isEqualTo(2);
        assertThat(errors).isEmpty();
    }

    @Test
    void aJobKnowsWhichWorkersItCannotGoOnWithout() {
        for (final String config : List.of("bsp", "asp", "ssp:2", "fastest:2", "bsp+timeout:50", "bsp+exclude:2")) {
            pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8)
                .chunkElements(4).maxPoolSize(2).roundRing(4).defaultSync(SyncConfigParser.parse(config)).conclude(), errors::add);
            join(0, 3, 4);
            final boolean needed = pipeline.cannotGoOnWithout(JOB, 2, 0);
            assertThat(needed).as(config).isEqualTo(config.equals("bsp") || config.equals("asp") || config.equals("ssp:2"));
        }
        assertThat(pipeline.cannotGoOnWithout(99, 0, 0)).isFalse();
    }

    private Sent last() {
        return sent.get(sent.size() - 1);
    }

    private void join(final int worker, final int workers, final int elements) {
        joinJob(JOB, worker, workers, elements);
    }

    private void joinJob(final int job, final int worker, final int workers, final int elements) {
        joinFrom(100 + worker, job, worker, workers, elements);
    }

    private void joinFrom(final int port, final int job, final int worker, final int workers, final int elements) {
        final ByteBuffer b = Packet.allocate(JoinPacket.LENGTH);
        new JoinPacket().wrap(b, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).jobId(job)
            .workerId(worker).workerCount(workers).elementsPerRound(elements);
        sign(b, JoinPacket.LENGTH);
        pipeline.onPacket(port, b, 0, JoinPacket.LENGTH, 0, outbox);
    }

    private void leave(final int worker) {
        leaveFrom(100 + worker, worker);
    }

    private void leaveFrom(final int port, final int worker) {
        final ByteBuffer b = Packet.allocate(Packet.HEADER_LENGTH);
        new PacketHeader().wrap(b, 0, Packet.HEADER_LENGTH).initHeader(PacketType.LEAVE).jobId(JOB)
            .workerId(worker);
        sign(b, Packet.HEADER_LENGTH);
        pipeline.onPacket(port, b, 0, Packet.HEADER_LENGTH, 0, outbox);
    }

    private void data(final int worker, final long seq, final int set, final int chunk, final int[] values) {
        dataJob(JOB, worker, seq, set, chunk, values);
    }

    private void dataJob(final int job, final int worker, final long seq, final int set, final int chunk,
                         final int[] values) {
        dataFrom(100 + worker, job, worker, seq, set, chunk, values);
    }

    private void dataFrom(final int port, final int job, final int worker, final long seq, final int set, final int chunk,
                          final int[] values) {
        final int length = DataPacket.length(values.length);
        final ByteBuffer b = Packet.allocate(length);
        final DataPacket p = new DataPacket().wrap(b, 0, length).initHeader(PacketType.DATA).jobId(job)
            .workerId(worker).seq(seq).round(0).chunk(chunk).shadowSet(set)
            .poolIndex((int) (seq % 2)).flags(Flags.VALUES).elementCount(values.length).exponent((byte) 0);
        for (int i = 0; i < values.length; i++) {
            p.value(i, values[i]);
        }
        sign(b, length);
        pipeline.onPacket(port, b, 0, length, 0, outbox);
    }

    private void exponents(final int worker, final long seq, final int[] exps) {
        final int length = DataPacket.length(exps.length);
        final ByteBuffer b = Packet.allocate(length);
        final DataPacket p = new DataPacket().wrap(b, 0, length).initHeader(PacketType.DATA).jobId(JOB)
            .workerId(worker).seq(seq).poolIndex((int) (seq % 2)).flags(Flags.EXPONENTS).elementCount(exps.length)
            .exponent(Packet.NO_EXPONENT);
        for (int i = 0; i < exps.length; i++) {
            p.value(i, exps[i]);
        }
        sign(b, length);
        pipeline.onPacket(100 + worker, b, 0, length, 0, outbox);
    }

    /** Worker's values for step {@code seq} (round {@code round}, chunk {@code chunk}) at {@code nowNs}, reporting {@code computeNs}. */
    private void dataAt(final int worker, final long seq, final int round, final int chunk, final long nowNs, final long computeNs) {
        final int length = DataPacket.length(4);
        final ByteBuffer b = Packet.allocate(length);
        new DataPacket().wrap(b, 0, length).initHeader(PacketType.DATA).jobId(JOB).workerId(worker).seq(seq).round(round)
            .chunk(chunk).shadowSet((int) (seq / 2 % 2)).poolIndex((int) (seq % 2)).flags(Flags.VALUES).elementCount(4)
            .exponent((byte) 0).computeTimeNs(computeNs);
        sign(b, length);
        pipeline.onPacket(100 + worker, b, 0, length, nowNs, outbox);
    }

    /** Worker's report of its compute time {@code computeNs} for {@code round} (step {@code seq}) at {@code nowNs}. */
    private void report(final int worker, final long seq, final int round, final long nowNs, final long computeNs) {
        final int length = DataPacket.length(0);
        final ByteBuffer b = Packet.allocate(length);
        new DataPacket().wrap(b, 0, length).initHeader(PacketType.DATA).jobId(JOB).workerId(worker).seq(seq).round(round)
            .poolIndex((int) (seq % 2)).shadowSet((int) (seq / 2 % 2)).flags(Flags.REPORT).elementCount(0)
            .exponent(Packet.NO_EXPONENT).computeTimeNs(computeNs);
        sign(b, length);
        pipeline.onPacket(100 + worker, b, 0, length, nowNs, outbox);
    }

    /**
     * Every step of round {@code round} of a job of 8 elements in chunks of 4 (seq 3r: exponents;
     * 3r + 1, 3r + 2: values), each step from each of {@code workers} in turn, worker i reporting {@code computeNs[i]}.
     */
    private void roundAt(final int round, final long nowNs, final long[] computeNs, final int... workers) {
        for (int t = 0; t < 3; t++) {
            final long seq = 3L * round + t;
            final int n = t == 0 ? 2 : 4;
            for (int i = 0; i < workers.length; i++) {
                final int length = DataPacket.length(n);
                final ByteBuffer b = Packet.allocate(length);
                new DataPacket().wrap(b, 0, length).initHeader(PacketType.DATA).jobId(JOB).workerId(workers[i]).seq(seq)
                    .round(round).chunk(t == 0 ? 0 : t - 1).shadowSet((int) (seq / 2 % 2)).poolIndex((int) (seq % 2))
                    .flags(t == 0 ? Flags.EXPONENTS : Flags.VALUES).elementCount(n).exponent(t == 0 ? Packet.NO_EXPONENT : (byte) 0)
                    .computeTimeNs(computeNs[i]);
                sign(b, length);
                pipeline.onPacket(100 + workers[i], b, 0, length, nowNs + t, outbox);
            }
        }
    }
}
