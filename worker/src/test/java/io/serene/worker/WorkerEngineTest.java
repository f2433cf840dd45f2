package io.serene.worker;

import io.serene.protocol.JobKeys;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Outbox;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketAuth;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.Status;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class WorkerEngineTest {
    private final List<ByteBuffer> sent = new ArrayList<>();
    private final Outbox outbox = (port, buffer, offset, length) -> {
        final ByteBuffer copy = Packet.allocate(length);
        for (int i = 0; i < length; i++) {
            copy.put(i, buffer.get(offset + i));
        }
        sent.add(copy);
    };

    private WorkerEngine engine(final int maxJoinAttempts) {
        return new WorkerEngine(new WorkerContext().jobId(3).workerId(1).workers(2).elementsPerRound(10)
            .joinRetryNs(1_000).maxJoinAttempts(maxJoinAttempts), ex -> { });
    }

    /** The switch's JOIN_ACK refusing worker 1 of job 3 (SHAPE_MISMATCH). */
    private static ByteBuffer refusal() {
        final ByteBuffer ack = Packet.allocate(JoinPacket.ACK_LENGTH);
        new JoinPacket().wrap(ack, 0, JoinPacket.ACK_LENGTH).initHeader(PacketType.JOIN_ACK).jobId(3)
            .workerId(1).status(Status.SHAPE_MISMATCH.code());
        return ack;
    }

    @Test
    void shouldRetryJoinAndFailWithAClearMessageWhenTheSwitchNeverAnswers() {
        final WorkerEngine engine = engine(3);
        long now = 0;
        for (int i = 0; i < 5; i++) {
            now = Math.max(now, engine.onTimer(now, outbox));
        }
        assertThat(sent).hasSize(3);
        assertThat(new PacketHeader().wrap(sent.get(0), 0, sent.get(0).capacity()).type()).isEqualTo(PacketType.JOIN);
        assertThat(engine.joined()).isCompletedExceptionally();
        assertThatThrownBy(() -> engine.joined().join()).hasMessageContaining("did not answer JOIN");
    }

    @Test
    void shouldFailEveryRoundWhenTheSwitchRefusesTheJoin() {
        final WorkerEngine engine = engine(3);
        final CompletableFuture<Aggregate> round = engine.allreduce(0, new float[10]);
        engine.onTimer(0, outbox);
        final ByteBuffer ack = refusal();
        engine.onPacket(0, ack, 0, JoinPacket.ACK_LENGTH, 0, outbox);
        assertThatThrownBy(round::join).hasMessageContaining("SHAPE_MISMATCH");
        assertThatThrownBy(() -> engine.allreduce(1, new float[10]).join()).hasMessageContaining("refused JOIN");
    }

    @Test
    void shouldRejectRoundsOutOfOrderAndGradientsOfTheWrongSize() {
        final WorkerEngine engine = engine(3);
        assertThatThrownBy(() -> engine.allreduce(1, new float[10]).join()).hasMessageContaining("expected round 0");
        assertThatThrownBy(() -> engine.allreduce(0, new float[9]).join()).hasMessageContaining("9 elements");
    }

    @Test
    void onlyItsSwitchSpeaksToAWorker() {
        final WorkerEngine engine = engine(3);
        final CompletableFuture<Aggregate> round = engine.allreduce(0, new float[10]);
        engine.onTimer(0, outbox);
        final ByteBuffer ack = refusal();
        // the same refusal from another source (peer 4 on the worker's socket) is dropped, counted, and changes nothing
        engine.onPacket(4, ack, 0, JoinPacket.ACK_LENGTH, 0, outbox);
        assertThat(engine.counters().get(WorkerCounter.DROP_FOREIGN)).isEqualTo(1);
        assertThat(round).isNotDone();
        assertThat(engine.joined()).isNotDone();
        engine.onPacket(0, ack, 0, JoinPacket.ACK_LENGTH, 0, outbox);
        assertThat(engine.joined()).isCompletedExceptionally();
    }

    @Test
    void aWorkerSignsItsPacketsAndTakesOnlyFreshOnesSignedByTheSwitch() {
        final JobKeys.WorkerKey key = JobKeys.workerKey(JobKeys.jobSecret("a secret of more than sixteen bytes".getBytes(
            StandardCharsets.UTF_8), 3), 3, 1);
        final WorkerEngine engine = new WorkerEngine(new WorkerContext().jobId(3).key(key).workerId(1).workers(2).elementsPerRound(10)
            .joinRetryNs(1_000).maxJoinAttempts(3), ex -> { });
        final CompletableFuture<Aggregate> round = engine.allreduce(0, new float[10]);
        final List<ByteBuffer> sentOut = new ArrayList<>();
        engine.onTimer(0, (port, buffer, offset, length) -> sentOut.add(Packet.allocate(length).put(0, buffer, offset, length)));
        final PacketHeader joinSent = new PacketHeader().wrap(sentOut.get(0), 0, sentOut.get(0).capacity());
        assertThat(PacketAuth.verify(key.k0(), key.k1(), joinSent)).as("its JOIN carries its MAC").isTrue();
        // a refusal spoofed from the switch's address, signed under a guessed key: dropped, counted, nothing changes
        final ByteBuffer spoofed = refusal();
        final JoinPacket ack = new JoinPacket().wrap(spoofed, 0, JoinPacket.ACK_LENGTH);
        ack.seq(joinSent.packetNumber());
        PacketAuth.seal(key.r0(), key.r1() ^ 1, 77, ack);
        engine.onPacket(0, spoofed, 0, JoinPacket.ACK_LENGTH, 0, outbox);
        assertThat(engine.counters().get(WorkerCounter.DROP_BAD_MAC)).isEqualTo(1);
        // the switch's refusal of an older JOIN (a replay of an answer to another process): not fresh
        ack.seq(joinSent.packetNumber() - 1);
        PacketAuth.seal(key.r0(), key.r1(), 78, ack);
        engine.onPacket(0, spoofed, 0, JoinPacket.ACK_LENGTH, 0, outbox);
        assertThat(engine.counters().get(WorkerCounter.DROP_REPLAYED)).isEqualTo(1);
        assertThat(round).isNotDone();
        assertThat(engine.joined()).isNotDone();
        ack.seq(joinSent.packetNumber());
        PacketAuth.seal(key.r0(), key.r1(), 79, ack);
        engine.onPacket(0, spoofed, 0, JoinPacket.ACK_LENGTH, 0, outbox);
        assertThat(engine.joined()).as("signed and fresh, it is the switch's answer").isCompletedExceptionally();
    }

    @Test
    void shouldIgnoreMalformedPackets() {
        final WorkerEngine engine = engine(3);
        final ByteBuffer junk = Packet.allocate(16);
        engine.onPacket(0, junk, 0, 16, 0, outbox);
        assertThat(engine.counters().get(WorkerCounter.DROP_MALFORMED)).isEqualTo(1);
    }

    @Test
    void contextShouldNameTheBadSetting() {
        assertThatThrownBy(() -> new WorkerContext().workers(2).workerId(2).elementsPerRound(1).conclude())
            .hasMessageContaining("workerId");
        assertThatThrownBy(() -> new WorkerContext().workers(2).workerId(0).elementsPerRound(0).conclude())
            .hasMessageContaining("elementsPerRound");
    }
}
