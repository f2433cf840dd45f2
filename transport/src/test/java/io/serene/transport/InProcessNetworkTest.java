package io.serene.transport;

import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class InProcessNetworkTest {
    /** Sends n one-byte packets to a peer at start; records what arrives. */
    private static final class Node implements PacketEndpoint {
        final List<Integer> received = new ArrayList<>();
        final List<Long> times = new ArrayList<>();
        int toSend;
        int peer;

        @Override
        public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                             final long nowNs, final Outbox out) {
            received.add((int) buffer.get(offset));
            times.add(nowNs);
        }

        @Override
        public long onTimer(final long nowNs, final Outbox out) {
            final ByteBuffer b = ByteBuffer.allocate(1);
            for (; toSend > 0; toSend--) {
                b.put(0, (byte) toSend);
                out.send(peer, b, 0, 1);
            }
            return NO_DEADLINE;
        }
    }

    @Test
    void shouldDeliverInOrderAfterTheLatencyWithoutFaults() {
        final InProcessNetwork network = new InProcessNetwork(FaultInjector.none(), 1_000, 0, 0);
        final Node a = new Node();
        final Node b = new Node();
        final int addressA = network.attach(a);
        final int addressB = network.attach(b);
        a.peer = addressB;
        a.toSend = 5;
        network.wake(addressA);
        network.runUntil(() -> b.received.size() == 5, Long.MAX_VALUE);
        assertThat(b.received).containsExactly(5, 4, 3, 2, 1);
        assertThat(b.times).allMatch(t -> t == 1_000);
    }

    @Test
    void runsShouldBeReproducibleForASeedAndLoseAboutTheAskedShare() {
        final List<Integer> first = run(9);
        assertThat(run(9)).isEqualTo(first);
        assertThat(first.size()).isBetween(700, 900);
    }

    private static List<Integer> run(final long seed) {
        final InProcessNetwork network = new InProcessNetwork(new FaultInjector(seed, 0.2, 0.05, 0.3), 1_000, 500, 5_000);
        final Node a = new Node();
        final Node b = new Node();
        network.attach(a);
        a.peer = network.attach(b);
        a.toSend = 1000;
        network.wake(0);
        network.runUntil(() -> false, Long.MAX_VALUE);
        return b.received;
    }
}
