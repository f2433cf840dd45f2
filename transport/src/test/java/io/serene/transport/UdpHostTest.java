package io.serene.transport;

import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

class UdpHostTest {
    /** Echoes everything back to its sender. */
    private static final class Echo implements PacketEndpoint {
        @Override
        public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                             final long nowNs, final Outbox out) {
            out.send(port, buffer, offset, length);
        }

        @Override
        public long onTimer(final long nowNs, final Outbox out) {
            return NO_DEADLINE;
        }
    }

    /** Sends a burst of equal-sized packets on its first timer call and counts the echoes. */
    private static final class Burst implements PacketEndpoint {
        final CountDownLatch done;
        final AtomicInteger checksum = new AtomicInteger();
        final int count;
        boolean sent;

        Burst(final int count) {
            this.count = count;
            this.done = new CountDownLatch(count);
        }

        @Override
        public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                             final long nowNs, final Outbox out) {
            assertThat(length).isEqualTo(1000);
            checksum.addAndGet(buffer.getInt(offset));
            done.countDown();
        }

        @Override
        public long onTimer(final long nowNs, final Outbox out) {
            if (!sent) {
                sent = true;
                final ByteBuffer b = ByteBuffer.allocateDirect(1000).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 0; i < count; i++) {
                    b.putInt(0, i);
                    out.send(0, b, 0, 1000);
                }
            }
            return NO_DEADLINE;
        }
    }

    @Test
    @Timeout(30)
    void shouldCarryABurstThroughAnEchoIntactWithEpollOrNio() throws Exception {
        for (final boolean epoll : new boolean[] {true, false}) {
            try (UdpTransport transport = UdpTransport.create(1, epoll);
                 UdpHost echo = transport.bind(new Echo(), new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults())) {
                final Burst burst = new Burst(200);
                try (UdpHost client = transport.bind(burst, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults(),
                    echo.localAddress())) {
                    assertThat(client.addPeer(echo.localAddress())).isZero();
                    assertThat(burst.done.await(10, TimeUnit.SECONDS)).as("all echoes back over " + transport.kind()).isTrue();
                    assertThat(burst.checksum.get()).isEqualTo(199 * 200 / 2);
                    assertThat(client.errors()).isZero();
                }
            }
        }
    }
}
