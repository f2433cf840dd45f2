package io.serene.transport;

import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;
import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ShmHostTest {
    /** Echoes everything back to its sender; records the ports it heard from. */
    private static final class Echo implements PacketEndpoint {
        final LinkedBlockingQueue<Integer> ports = new LinkedBlockingQueue<>();

        @Override
        public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                             final long nowNs, final Outbox out) {
            ports.add(port);
            out.send(port, buffer, offset, length);
        }

        @Override
        public long onTimer(final long nowNs, final Outbox out) {
            return NO_DEADLINE;
        }
    }

    /** Sends numbered packets of {@code size} bytes (every byte derived from the number) on its first timer call; checks the echoes. */
    private static final class Burst implements PacketEndpoint {
        final CountDownLatch done;
        final int count;
        final int size;
        final ConcurrentHashMap<Integer, Integer> received = new ConcurrentHashMap<>();
        final AtomicInteger corrupt = new AtomicInteger();
        boolean sent;

        Burst(final int count, final int size) {
            this.count = count;
            this.size = size;
            this.done = new CountDownLatch(count);
        }

        @Override
        public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                             final long nowNs, final Outbox out) {
            final int n = buffer.getInt(offset);
            boolean ok = length == size && port == 0;
            for (int i = 4; i < length && ok; i++) {
                ok = buffer.get(offset + i) == (byte) (n * 31 + i);
            }
            if (!ok) {
                corrupt.incrementAndGet();
            }
            if (received.merge(n, 1, Integer::sum) == 1) {
                done.countDown();
            }
        }

        @Override
        public long onTimer(final long nowNs, final Outbox out) {
            if (!sent) {
                sent = true;
                final ByteBuffer b = ByteBuffer.allocateDirect(size).order(ByteOrder.LITTLE_ENDIAN);
                for (int n = 0; n < count; n++) {
                    b.putInt(0, n);
                    for (int i = 4; i < size; i++) {
                        b.put(i, (byte) (n * 31 + i));
                    }
                    out.send(0, b, 0, size);
                }
            }
            return NO_DEADLINE;
        }
    }

    @Test
    @Timeout(30)
    void carriesBurstsOfLargePacketsFromSeveralPeersIntactAndInOrderPerPeer(@TempDir final Path dir) throws Exception {
        final Path link = dir.resolve("link");
        final Echo echo = new Echo();
        try (ShmTransport transport = ShmTransport.create(2);
             ShmServer server = transport.serve(echo, link, ShmOptions.defaults())) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(link))).isEqualTo("rwx------");
            final Burst a = new Burst(300, 32_816);
            final Burst b = new Burst(300, 1_000);
            try (ShmHost ca = transport.connect(a, link, ShmOptions.defaults());
                 ShmHost cb = transport.connect(b, link, ShmOptions.defaults())) {
                assertThat(a.done.await(10, TimeUnit.SECONDS)).isTrue();
                assertThat(b.done.await(10, TimeUnit.SECONDS)).isTrue();
                assertThat(a.corrupt.get() + b.corrupt.get()).isZero();
                assertThat(a.received.values()).allMatch(c -> c == 1);
                assertThat(server.errors() + ca.errors() + cb.errors()).isZero();
                assertThat(server.ringFull()).isZero();
                assertThat(echo.ports.stream().distinct().count()).isEqualTo(2);
                try (var files = Files.list(link)) {
                    assertThat(files.count()).as("the switch's control ring and broadcast buffer, and each peer's two rings").isEqualTo(6);
                }
            }
            // both said goodbye: their rings are gone and the switch unmapped them
            try (var files = Files.list(link)) {
                assertThat(files.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder(ShmFiles.SWITCH_RING, ShmFiles.BROADCAST);
            }
        }
        assertThat(link).isEmptyDirectory();
    }

    @Test
    @Timeout(30)
    void anErrorInTheSwitchsEndpointIsCountedAndItsPollerGoesOn(@TempDir final Path dir) throws Exception {
        final Path link = dir.resolve("link");
        final AtomicInteger calls = new AtomicInteger();
        // the first packet throws an Error, the rest are echoed
        final PacketEndpoint failingOnce = new PacketEndpoint() {
            @Override
            public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length, final long nowNs,
                                 final Outbox out) {
                if (calls.getAndIncrement() == 0) {
                    throw new StackOverflowError("an Error in the endpoint");
                }
                out.send(port, buffer, offset, length);
            }

            @Override
            public long onTimer(final long nowNs, final Outbox out) {
                return NO_DEADLINE;
            }
        };
        try (ShmTransport transport = ShmTransport.create(2);
             ShmServer server = transport.serve(failingOnce, link, ShmOptions.defaults())) {
            final Burst burst = new Burst(50, 100);
            try (ShmHost client = transport.connect(burst, link, ShmOptions.defaults())) {
                // the first packet's echo is lost with the Error; the poller carries the other 49 back
                final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (burst.received.size() < 49 && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                assertThat(burst.received).hasSize(49);
                assertThat(server.errors()).isEqualTo(1);
                assertThat(client.errors()).isZero();
            }
        }
    }

    /** Multicasts every packet to every peer it has heard from (the sender included). */
    private static final class Multicaster implements PacketEndpoint {
        private final int[] ports = new int[16];
        private int count;

        @Override
        public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                             final long nowNs, final Outbox out) {
            boolean known = false;
            for (int i = 0; i < count; i++) {
                known |= ports[i] == port;
            }
            if (!known) {
                ports[count++] = port;
            }
            out.multicast(ports, count, buffer, offset, length);
        }

        @Override
        public long onTimer(final long nowNs, final Outbox out) {
            return NO_DEADLINE;
        }
    }

    /** Sends numbered packets of its size once told to; records every packet heard, by size and number. */
    private static class Member implements PacketEndpoint {
        final int count;
        final int size;
        final CountDownLatch own;
        final ConcurrentHashMap<Long, Integer> received = new ConcurrentHashMap<>();
        final AtomicInteger corrupt = new AtomicInteger();
        volatile boolean go;
        boolean sent;

        Member(final int count, final int size) {
            this.count = count;
            this.size = size;
            this.own = new CountDownLatch(count);
        }

        @Override
        public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                             final long nowNs, final Outbox out) {
            final int n = buffer.getInt(offset);
            boolean ok = port == 0;
            for (int i = 4; i < length && ok; i++) {
                ok = buffer.get(offset + i) == (byte) (n * 31 + i + length);
            }
            if (!ok) {
                corrupt.incrementAndGet();
            }
            if (received.merge(((long) length << 32) | n, 1, Integer::sum) == 1 && length == size) {
                own.countDown();
            }
        }

        @Override
        public long onTimer(final long nowNs, final Outbox out) {
            if (go && !sent) {
                sent = true;
                final ByteBuffer b = ByteBuffer.allocateDirect(size).order(ByteOrder.LITTLE_ENDIAN);
                for (int n = 0; n < count; n++) {
                    b.putInt(0, n);
                    for (int i = 4; i < size; i++) {
                        b.put(i, (byte) (n * 31 + i + size));
                    }
                    out.send(0, b, 0, size);
                }
            }
            return NO_DEADLINE;
        }
    }

    @Test
    @Timeout(30)
    void aMulticastIsWrittenOnceAndEveryRecipientReadsItIntact(@TempDir final Path dir) throws Exception {
        try (ShmTransport transport = ShmTransport.create(2);
             ShmServer server = transport.serve(new Multicaster(), dir, ShmOptions.defaults())) {
            final Member a = new Member(400, 32_816);
            final Member b = new Member(400, 1_000);
            try (ShmHost ca = transport.connect(a, dir, ShmOptions.defaults());
                 ShmHost cb = transport.connect(b, dir, ShmOptions.defaults())) {
                a.go = true;
                ca.execute(() -> { });
                assertThat(a.own.await(10, TimeUnit.SECONDS)).isTrue();
                b.go = true;
                cb.execute(() -> { });
                assertThat(b.own.await(10, TimeUnit.SECONDS)).isTrue();
                // a's were multicast to a alone (b unknown yet), b's to both: b's in a's ring are references
                Thread.sleep(200);
                assertThat(a.received.keySet().stream().filter(k -> (k >>> 32) == 1_000)).hasSize(400);
                assertThat(a.corrupt.get() + b.corrupt.get()).isZero();
                assertThat(a.received.values()).allMatch(c -> c == 1);
                assertThat(b.received.values()).allMatch(c -> c == 1);
                assertThat(server.broadcasts()).as("b's 400, each written once for both").isEqualTo(400);
                assertThat(server.ringFull() + server.errors() + ca.errors() + cb.errors()).isZero();
                assertThat(ca.badReferences() + cb.badReferences()).isZero();
            }
        }
    }

    @Test
    @Timeout(60)
    void aPeerThatStopsReadingHoldsTheBroadcastBufferAndStillReadsOnlyIntactPacketsOnceItGoesOn(@TempDir final Path dir)
        throws Exception {
        final CountDownLatch unblock = new CountDownLatch(1);
        final CountDownLatch stalled = new CountDownLatch(1);
        final Member a = new Member(2_000, 4_000);
        final Member b = new Member(1, 1_000) {
            @Override
            public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                                 final long nowNs, final Outbox out) {
                stalled.countDown();
                try {
                    // stalls in the middle of reading its first packet
                    unblock.await();
                } catch (final InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
                super.onPacket(port, buffer, offset, length, nowNs, out);
            }
        };
        // each host on a thread of its own (the stalled one blocks its thread); the switch's broadcast
        // buffer small (256 KiB: 65 of a's packets), the peers' rings large enough for all
        try (ShmTransport serving = ShmTransport.create(1);
             ShmTransport ta = ShmTransport.create(1);
             ShmTransport tb = ShmTransport.create(1);
             ShmServer server = serving.serve(new Multicaster(), dir, ShmOptions.defaults().inboundRingBytes(256 << 10));
             ShmHost cb = tb.connect(b, dir, ShmOptions.defaults());
             ShmHost ca = ta.connect(a, dir, ShmOptions.defaults())) {
            b.go = true;
            cb.execute(() -> { });
            assertThat(stalled.await(10, TimeUnit.SECONDS)).isTrue();
            a.go = true;
            ca.execute(() -> { });
            assertThat(a.own.await(30, TimeUnit.SECONDS)).as("the peer that reads gets all of its packets").isTrue();
            assertThat(a.corrupt.get()).isZero();
            // 4,000-byte packets in 4,032-byte records (cache-line aligned): 65 fill the buffer b holds
            assertThat(server.broadcasts()).as("written once while the buffer had room").isEqualTo((256 << 10) / 4_032);
            assertThat(server.broadcastFallbacks()).as("then a copy per recipient").isEqualTo(2_000 - server.broadcasts());
            unblock.countDown();
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (b.received.size() < 2_001 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(b.received).as("its own packet and all of a's, in the records it held and the copies").hasSize(2_001);
            assertThat(b.corrupt.get()).as("none overwritten while it held them").isZero();
            assertThat(server.ringFull() + server.errors() + ca.errors() + cb.errors()).isZero();
            // once it has read them, multicasts are written once again
            final long before = server.broadcasts();
            final Member again = new Member(10, 2_000);
            try (ShmHost cc = ta.connect(again, dir, ShmOptions.defaults())) {
                again.go = true;
                cc.execute(() -> { });
                assertThat(again.own.await(10, TimeUnit.SECONDS)).isTrue();
            }
            assertThat(server.broadcasts()).isEqualTo(before + 10);
        }
    }

    @Test
    @Timeout(30)
    void aReferenceOutsideTheBroadcastBufferIsACountedDropAndAGoodOneIsReadInPlace(@TempDir final Path dir) throws Exception {
        final LinkedBlockingQueue<Integer> lengths = new LinkedBlockingQueue<>();
        final PacketEndpoint listener = new PacketEndpoint() {
            @Override
            public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length, final long nowNs,
                                 final Outbox out) {
                lengths.add(length);
            }

            @Override
            public long onTimer(final long nowNs, final Outbox out) {
                return NO_DEADLINE;
            }
        };
        try (ShmTransport transport = ShmTransport.create(1);
             ShmServer server = transport.serve(new Echo(), dir, ShmOptions.defaults());
             ShmHost client = transport.connect(listener, dir, ShmOptions.defaults())) {
            // the switch is idle: write into the peer's ring as the switch would, one reference bad, one good
            final Path ring;
            try (var files = Files.list(dir)) {
                ring = files.filter(f -> f.getFileName().toString().startsWith("peer-") && f.getFileName().toString().endsWith(".ring"))
                    .findFirst().orElseThrow();
            }
            final var map = IoUtil.mapExistingFile(ring.toFile(), "test");
            try {
                final SpscRing down = new SpscRing(new UnsafeBuffer(map));
                final UnsafeBuffer ref = new UnsafeBuffer(new byte[BroadcastBuffer.REFERENCE_LENGTH]);
                final int capacity = ShmOptions.defaults().inboundRingBytes();
                ref.putLong(0, capacity - 64L);
                ref.putInt(8, 100);
                assertThat(down.write(3, ref, 0, ref.capacity())).isTrue();
                ref.putLong(0, 3L * capacity + 128);
                ref.putInt(8, 100);
                assertThat(down.write(3, ref, 0, ref.capacity())).isTrue();
                assertThat(lengths.poll(5, TimeUnit.SECONDS)).as("the good reference's packet, read in the buffer").isEqualTo(100);
                assertThat(client.badReferences()).isEqualTo(1);
                assertThat(client.errors() + server.errors()).isZero();
            } finally {
                IoUtil.unmap(map);
            }
        }
    }

    @Test
    @Timeout(60)
    void aSwitchServedOverSharedMemoryHearsUdpPeersTooThroughItsBridge(@TempDir final Path dir) throws Exception {
        try (ShmTransport transport = ShmTransport.create(1);
             UdpTransport udp = UdpTransport.create(1, true);
             ShmServer server = transport.serve(new Multicaster(), dir, ShmOptions.defaults());
             UdpBridge bridge = UdpBridge.attach(server, udp, new java.net.InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
             UdpTransport clients = UdpTransport.create(1, true)) {
            final Member overUdp = new Member(200, 1_200);
            final Member overShm = new Member(200, 3_000);
            try (UdpHost u = clients.bind(overUdp, new java.net.InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults(),
                     bridge.localAddress());
                 ShmHost a = transport.connect(overShm, dir, ShmOptions.defaults())) {
                overUdp.go = true;
                u.execute(() -> { });
                assertThat(overUdp.own.await(10, TimeUnit.SECONDS)).as("the UDP peer's packets came back over UDP").isTrue();
                overShm.go = true;
                a.execute(() -> { });
                assertThat(overShm.own.await(10, TimeUnit.SECONDS)).isTrue();
                // the shared-memory peer's packets were multicast to both: written once, a copy to the UDP peer through the bridge
                final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (overUdp.received.size() < 400 && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                assertThat(overUdp.received).hasSize(400);
                assertThat(overUdp.received.values()).allMatch(c -> c == 1);
                assertThat(overUdp.corrupt.get() + overShm.corrupt.get()).isZero();
                assertThat(server.broadcasts()).isEqualTo(200);
                assertThat(bridge.dropped() + server.errors() + a.errors() + u.errors()).isZero();
            }
        }
    }

    @Test
    @Timeout(30)
    void injectedLossDropsPacketsAndDuplicationRepeatsThemAtTheSeededRates(@TempDir final Path dir) throws Exception {
        try (ShmTransport transport = ShmTransport.create(1);
             ShmServer server = transport.serve(new Echo(), dir, ShmOptions.defaults())) {
            final Burst burst = new Burst(2_000, 100);
            final FaultInjector faults = new FaultInjector(11, 0.1, 0.1, 0.1);
            try (ShmHost client = transport.connect(burst, dir, ShmOptions.defaults().faults(faults))) {
                // nothing arrives after the last held-back packet is due
                Thread.sleep(500);
                final int distinct = burst.received.size();
                assertThat(distinct).isEqualTo(2_000 - client.call(faults::lost).get().intValue());
                assertThat(burst.received.values().stream().mapToInt(Integer::intValue).sum())
                    .isEqualTo(distinct + client.call(faults::duplicated).get().intValue());
                assertThat(client.call(faults::reordered).get()).isPositive();
                assertThat(burst.corrupt.get()).isZero();
                assertThat(server.errors()).isZero();
            }
        }
    }

    @Test
    @Timeout(30)
    void refusesToConnectWithoutASwitchAndToServeWhereOneServes(@TempDir final Path dir) {
        try (ShmTransport transport = ShmTransport.create(1)) {
            assertThatThrownBy(() -> transport.connect(new Echo(), dir.resolve("none"), ShmOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no switch serves shm:");
            try (ShmServer server = transport.serve(new Echo(), dir, ShmOptions.defaults())) {
                assertThat(server.address()).isEqualTo("shm:" + dir);
                assertThatThrownBy(() -> transport.serve(new Echo(), dir, ShmOptions.defaults()))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("another switch serves");
            }
        }
        assertThatThrownBy(() -> ShmTransport.directoryOf("udp:1.2.3.4")).hasMessageContaining("shm:<directory>");
        assertThat(ShmTransport.directoryOf("shm:/dev/shm/x")).isEqualTo(Path.of("/dev/shm/x"));
    }

    @Test
    @Timeout(30)
    void aPeerBackAfterItsGoodbyeGetsANewPortNumber(@TempDir final Path dir) throws Exception {
        final Echo echo = new Echo();
        try (ShmTransport transport = ShmTransport.create(1);
             ShmServer server = transport.serve(echo, dir, ShmOptions.defaults())) {
            final Burst first = new Burst(1, 64);
            try (ShmHost client = transport.connect(first, dir, ShmOptions.defaults())) {
                assertThat(first.done.await(5, TimeUnit.SECONDS)).isTrue();
                assertThat(client.errors()).isZero();
            }
            final Burst second = new Burst(1, 64);
            try (ShmHost client = transport.connect(second, dir, ShmOptions.defaults())) {
                assertThat(second.done.await(5, TimeUnit.SECONDS)).isTrue();
                assertThat(client.errors()).isZero();
            }
            final int p1 = echo.ports.take();
            final int p2 = echo.ports.take();
            assertThat(p2 & 0xFFFF).as("the index is reused").isEqualTo(p1 & 0xFFFF);
            assertThat(p2).as("with a new generation").isNotEqualTo(p1);
            assertThat(server.droppedPeers()).isZero();
        }
    }
}
