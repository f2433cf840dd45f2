package io.serene.transport;

import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.DatagramChannel;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
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

    /** Records the port of every packet; sends one packet to {@link #sendTo} (if set) at its next timer call. */
    private static final class Ports implements PacketEndpoint {
        final LinkedBlockingQueue<Integer> seen = new LinkedBlockingQueue<>();
        volatile int sendTo = -1;

        @Override
        public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                             final long nowNs, final Outbox out) {
            seen.add(port);
        }

        @Override
        public long onTimer(final long nowNs, final Outbox out) {
            if (sendTo >= 0) {
                out.send(sendTo, ByteBuffer.allocateDirect(8), 0, 8);
                sendTo = -1;
            }
            return NO_DEADLINE;
        }
    }

    /**
     * Admits a new source only for a packet whose first byte is 1; records the first byte of every
     * packet it gets; throws an Error for a packet whose first byte is 9.
     */
    private static final class Picky implements PacketEndpoint {
        final LinkedBlockingQueue<Integer> seen = new LinkedBlockingQueue<>();

        @Override
        public boolean admits(final ByteBuffer buffer, final int offset, final int length) {
            return length > 0 && buffer.get(offset) == 1;
        }

        @Override
        public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                             final long nowNs, final Outbox out) {
            if (buffer.get(offset) == 9) {
                throw new AssertionError("an Error in the endpoint");
            }
            seen.add((int) buffer.get(offset));
        }

        @Override
        public long onTimer(final long nowNs, final Outbox out) {
            return NO_DEADLINE;
        }
    }

    @Test
    @Timeout(30)
    void aNewSourceGetsAPeerEntryOnlyForAPacketItsEndpointAdmitsAndAnErrorInTheEndpointIsCountedNotFatal() throws Exception {
        for (final boolean epoll : new boolean[] {true, false}) {
            final Picky picky = new Picky();
            try (UdpTransport transport = UdpTransport.create(1, epoll);
                 UdpHost host = transport.bind(picky, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults().maxPeers(1));
                 DatagramChannel junk = DatagramChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
                 DatagramChannel good = DatagramChannel.open().bind(new InetSocketAddress("127.0.0.1", 0))) {
                // junk from a new source: refused before a peer entry (the table's one place stays free)
                junk.send(ByteBuffer.wrap(new byte[] {7, 0, 0, 0}), host.localAddress());
                good.send(ByteBuffer.wrap(new byte[] {1, 0, 0, 0}), host.localAddress());
                assertThat(picky.seen.poll(5, TimeUnit.SECONDS)).isEqualTo(1);
                assertThat(host.refusedSources()).isEqualTo(1);
                assertThat(host.droppedPeers()).as("the admitted source found the place free").isZero();
                // a known source's packets all reach the endpoint (it drops what it does not want itself)
                good.send(ByteBuffer.wrap(new byte[] {7, 0, 0, 0}), host.localAddress());
                assertThat(picky.seen.poll(5, TimeUnit.SECONDS)).isEqualTo(7);
                // an Error in the endpoint is counted, and the host goes on
                good.send(ByteBuffer.wrap(new byte[] {9, 0, 0, 0}), host.localAddress());
                good.send(ByteBuffer.wrap(new byte[] {1, 1, 0, 0}), host.localAddress());
                assertThat(picky.seen.poll(5, TimeUnit.SECONDS)).isEqualTo(1);
                assertThat(host.errors()).as(transport.kind()).isEqualTo(1);
            }
        }
    }

    @Test
    @Timeout(30)
    void aHostBoundToEveryAddressAnswersEachPeerFromTheAddressItSentTo() throws Exception {
        try (UdpTransport transport = UdpTransport.create(1, true);
             UdpHost echo = transport.bind(new Echo(), new InetSocketAddress("0.0.0.0", 0), UdpOptions.defaults());
             DatagramChannel a = DatagramChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
             DatagramChannel b = DatagramChannel.open().bind(new InetSocketAddress("127.0.0.1", 0))) {
            final int port = echo.localAddress().getPort();
            // 127.0.1.1 is this host's too (loopback is all of 127/8), as Debian names the host: the first
            // answer may come from the wildcard socket; once the host bound 127.0.1.1, every one comes from there
            final InetSocketAddress other = new InetSocketAddress("127.0.1.1", port);
            final InetSocketAddress first = echoFrom(a, other);
            assertThat(first.getPort()).isEqualTo(port);
            InetSocketAddress from = first;
            for (int i = 0; i < 50 && !from.equals(other); i++) {
                Thread.sleep(20);
                from = echoFrom(a, other);
            }
            assertThat(from).as("answered from the address it was sent to").isEqualTo(other);
            for (int i = 0; i < 5; i++) {
                assertThat(echoFrom(a, other)).isEqualTo(other);
            }
            // a peer that sends to 127.0.0.1 is answered from there
            final InetSocketAddress usual = new InetSocketAddress("127.0.0.1", port);
            InetSocketAddress fromUsual = echoFrom(b, usual);
            for (int i = 0; i < 50 && !fromUsual.equals(usual); i++) {
                Thread.sleep(20);
                fromUsual = echoFrom(b, usual);
            }
            assertThat(fromUsual).isEqualTo(usual);
            assertThat(echo.answeringAddresses()).contains(InetAddress.getByName("127.0.1.1"));
            assertThat(echo.errors()).isZero();
        }
    }

    /** Sends one packet from {@code client} to {@code to} and returns where the echo came from. */
    private static InetSocketAddress echoFrom(final DatagramChannel client, final InetSocketAddress to) throws Exception {
        client.send(ByteBuffer.wrap(new byte[] {1, 2, 3, 4}), to);
        client.configureBlocking(true);
        return (InetSocketAddress) client.receive(ByteBuffer.allocate(16));
    }

    @Test
    @Timeout(30)
    void aFullPeerTableGivesTheIdlestPeerPastItsLeaseToANewOneAndRetiresItsPortNumber() throws Exception {
        final Ports ports = new Ports();
        try (UdpTransport transport = UdpTransport.create(1, false);
             UdpHost host = transport.bind(ports, new InetSocketAddress("127.0.0.1", 0),
                 UdpOptions.defaults().maxPeers(2).peerLeaseNs(TimeUnit.MILLISECONDS.toNanos(1_000)));
             DatagramChannel a = DatagramChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
             DatagramChannel b = DatagramChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
             DatagramChannel c = DatagramChannel.open().bind(new InetSocketAddress("127.0.0.1", 0))) {
            final ByteBuffer one = ByteBuffer.allocate(8);
            a.send(one.clear(), host.localAddress());
            final int portA = ports.seen.poll(5, TimeUnit.SECONDS);
            b.send(one.clear(), host.localAddress());
            final int portB = ports.seen.poll(5, TimeUnit.SECONDS);
            // the table is full and nobody's lease ran out: a third peer is dropped, counted
            c.send(one.clear(), host.localAddress());
            Thread.sleep(100);
            assertThat(ports.seen).isEmpty();
            assertThat(host.droppedPeers()).isEqualTo(1);
            // a stays quiet past its lease, b keeps talking: c takes a's place
            Thread.sleep(1_000);
            b.send(one.clear(), host.localAddress());
            assertThat(ports.seen.poll(5, TimeUnit.SECONDS)).isEqualTo(portB);
            Thread.sleep(100);
            c.send(one.clear(), host.localAddress());
            final int portC = ports.seen.poll(5, TimeUnit.SECONDS);
            assertThat(portC).as("a's index, a new number").isNotEqualTo(portA).isNotEqualTo(portB);
            assertThat(portC & 0xFFFF).isEqualTo(portA & 0xFFFF);
            assertThat(host.expiredPeers()).isEqualTo(1);
            // what still holds a's old number reaches nobody (least of all c)
            ports.sendTo = portA;
            host.call(() -> null).get(5, TimeUnit.SECONDS);
            c.configureBlocking(false);
            Thread.sleep(200);
            assertThat(c.receive(ByteBuffer.allocate(64))).as("nothing for c").isNull();
            assertThat(host.droppedPeers()).isEqualTo(2);
        }
    }
}
