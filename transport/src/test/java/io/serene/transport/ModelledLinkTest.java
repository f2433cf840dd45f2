package io.serene.transport;

import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

class ModelledLinkTest {
    private static final long MS = 1_000_000L;
    /** 10 Mbit/s: a 1,250-byte packet takes 1 ms. */
    private static final LinkModel LINK = new LinkModel(10_000_000L, 5 * MS);

    /** An endpoint that records what reaches it and sends what it is told to at its next timer call. */
    private static final class Recorder implements PacketEndpoint {
        final List<long[]> received = new ArrayList<>();
        final ArrayDeque<Integer> toSend = new ArrayDeque<>();

        @Override
        public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length, final long nowNs,
                             final Outbox out) {
            // as the protocol's flyweights do: a reader sets the buffer's byte order
            buffer.order(buffer.order() == java.nio.ByteOrder.BIG_ENDIAN ? java.nio.ByteOrder.LITTLE_ENDIAN : java.nio.ByteOrder.BIG_ENDIAN);
            received.add(new long[] {nowNs, port, length, buffer.get(offset)});
        }

        @Override
        public long onTimer(final long nowNs, final Outbox out) {
            while (!toSend.isEmpty()) {
                final int length = toSend.poll();
                out.send(0, ByteBuffer.allocate(length).put(0, (byte) length), 0, length);
            }
            return NO_DEADLINE;
        }
    }

    private final List<long[]> sent = new ArrayList<>();
    private long now;
    private final Outbox wire = (port, buffer, offset, length) -> sent.add(new long[] {now, port, length});

    @Test
    void packetsLeaveOneAfterAnotherAtTheRateAndArriveADelayLater() {
        final Recorder inner = new Recorder();
        final ModelledLink link = new ModelledLink(inner, LINK);
        inner.toSend.add(1250);
        inner.toSend.add(1250);
        inner.toSend.add(625);
        long deadline = link.onTimer(now, wire);
        assertThat(sent).as("nothing leaves before the link carried it").isEmpty();
        assertThat(deadline).isEqualTo(6 * MS);
        while (deadline != PacketEndpoint.NO_DEADLINE) {
            now = deadline;
            deadline = link.onTimer(now, wire);
        }
        assertThat(sent).extracting(p -> p[0]).containsExactly(6 * MS, 7 * MS, 7 * MS + MS / 2);
        assertThat(link.report().packets()).isEqualTo(3);
        assertThat(link.report().transfers()).as("carried back to back").isEqualTo(1);
        assertThat(link.report().lateTransfers()).isZero();
    }

    @Test
    void packetsFromTheSwitchReachTheEndpointAfterTheDownlinkCarriedThem() {
        final Recorder inner = new Recorder();
        final ModelledLink link = new ModelledLink(inner, LINK);
        final ByteBuffer b = ByteBuffer.allocate(2500);
        b.put(0, (byte) 7);
        link.onPacket(3, b, 0, 1250, 0, wire);
        link.onPacket(3, b, 0, 2500, 0, wire);
        assertThat(inner.received).isEmpty();
        assertThat(link.onTimer(0, wire)).isEqualTo(6 * MS);
        link.onTimer(6 * MS, wire);
        assertThat(inner.received).hasSize(1);
        // the second took 2 ms more on the link after the first: due at 8 ms, handed on 2.5 ms late
        link.onTimer(10 * MS + MS / 2, wire);
        assertThat(inner.received).extracting(p -> p[0]).containsExactly(6 * MS, 10 * MS + MS / 2);
        assertThat(inner.received).extracting(p -> p[1]).containsExactly(3L, 3L);
        assertThat(inner.received).extracting(p -> p[3]).containsExactly(7L, 7L);
        assertThat(link.report().lateTransfers()).as("its end more than 1 ms late").isEqualTo(1);
        assertThat(link.report().maxLateMs()).isEqualTo(2.5);
    }

    @Test
    void aTransferIsLateOnlyIfItsEndIs() {
        final Recorder inner = new Recorder();
        final ModelledLink link = new ModelledLink(inner, LINK);
        final ByteBuffer b = ByteBuffer.allocate(1250);
        for (int i = 0; i < 4; i++) {
            link.onPacket(3, b, 0, 1250, 0, wire);
        }
        // due at 6, 7, 8 and 9 ms; a coarse timer hands the first three on at 8.5 ms, the last on time
        link.onTimer(8 * MS + MS / 2, wire);
        link.onTimer(9 * MS, wire);
        assertThat(inner.received).hasSize(4);
        assertThat(link.report().transfers()).isEqualTo(1);
        assertThat(link.report().lateTransfers()).as("the first packet was 2.5 ms late, the transfer's end on time").isZero();
        // a packet after the link went idle starts a transfer of its own, here handed on 3 ms late
        link.onPacket(3, b, 0, 1250, 20 * MS, wire);
        link.onTimer(29 * MS, wire);
        assertThat(link.report().transfers()).isEqualTo(2);
        assertThat(link.report().lateTransfers()).isEqualTo(1);
        assertThat(link.report().maxLateMs()).isEqualTo(3.0);
    }

    @Test
    void aFullQueueDropsAndCountsThePacket() {
        final Recorder inner = new Recorder();
        final ModelledLink link = new ModelledLink(inner, LINK);
        final int packets = ModelledLink.QUEUE_BYTES / 8_024 + 2;
        for (int i = 0; i < packets; i++) {
            inner.toSend.add(8_000);
        }
        link.onTimer(0, wire);
        assertThat(link.report().droppedPackets()).isPositive();
    }

    @Test
    void theQueueKeepsOrderAndBytesAcrossItsWrap() {
        final Random random = new Random(42);
        final ModelledLink.PacketQueue q = new ModelledLink.PacketQueue(4096);
        final ArrayDeque<byte[]> expected = new ArrayDeque<>();
        final ArrayDeque<Boolean> starts = new ArrayDeque<>();
        long due = 0;
        for (int step = 0; step < 20_000; step++) {
            if (random.nextInt(3) > 0) {
                final byte[] p = new byte[1 + random.nextInt(700)];
                random.nextBytes(p);
                final boolean start = random.nextBoolean();
                if (q.offer(due++, start, p.length, ByteBuffer.wrap(p), 0, p.length)) {
                    expected.add(p);
                    starts.add(start);
                } else {
                    assertThat(expected).as("full only with something in it, step %d", step).isNotEmpty();
                }
            } else if (!expected.isEmpty()) {
                final byte[] p = expected.poll();
                assertThat(q.headLength()).isEqualTo(p.length);
                assertThat(q.headPort()).isEqualTo(p.length);
                assertThat(q.headStartsTransfer()).isEqualTo(starts.poll());
                final byte[] got = new byte[p.length];
                q.buffer().get(q.headOffset(), got);
                assertThat(got).as("step %d", step).isEqualTo(p);
                q.poll();
            }
            assertThat(q.size()).isEqualTo(expected.size());
        }
    }

    @Test
    void aSlowedLinkCarriesItsFactorSlower() {
        final Recorder inner = new Recorder();
        final ModelledLink link = new ModelledLink(inner, LINK);
        link.slowdown(4);
        inner.toSend.add(1250);
        assertThat(link.onTimer(0, wire)).as("4 ms on the link, then 5 ms of delay").isEqualTo(9 * MS);
        link.slowdown(1);
        inner.toSend.add(1250);
        assertThat(link.onTimer(MS, wire)).isEqualTo(9 * MS);
        now = 9 * MS;
        assertThat(link.onTimer(now, wire)).as("the second waits for the first, then takes 1 ms").isEqualTo(10 * MS);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> link.slowdown(0.5)).hasMessageContaining(">= 1");
    }
}
