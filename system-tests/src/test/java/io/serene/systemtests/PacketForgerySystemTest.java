package io.serene.systemtests;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchCounter;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.Flags;
import io.serene.protocol.JobKeys;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketAuth;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.ResultPacket;
import io.serene.protocol.sync.SyncConfig;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerCounter;
import io.serene.worker.WorkerHost;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An attacker on the path between the workers and the switch: every packet of a running job passes
 * through it (a relay per worker, so the switch sees each worker at the relay's address and the
 * worker sees the switch there). It captures the job's packets and, while the job runs, sends the
 * switch each captured JOIN (REBUILD JOINs: the job is formed from offers), DATA and the others
 * again, from the worker's own address and from another; the same with the captured header changed
 * (a REBUILD flag, LEAVE, another round); JOIN, DATA and LEAVE that a tenant of the same switch signs
 * with keys of its own job; and sends the workers captured RESULTs and JOIN_ACKs again, and altered.
 * Every round must still be exact (the model is the clean run's), nothing may be rebuilt or left,
 * and every refusal is counted as the drop it is. Seeded; the seed is in every message.
 */
class PacketForgerySystemTest {
    private static final int JOB = 5;
    private static final int TENANT_JOB = 6;
    private static final int WORKERS = 3;
    private static final int ELEMENTS = 3_000;
    private static final byte[] SECRET = "the switch's secret, of 32 bytes".getBytes(StandardCharsets.UTF_8);

    @Test
    @Timeout(180)
    void capturedPacketsReplayedOrAlteredChangeNothing() throws Exception {
        for (final long seed : new long[] {21, 22}) {
            run(seed);
        }
    }

    private static void run(final long seed) throws Exception {
        final String what = "seed " + seed;
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(4 << 20).maxJobs(4)
            .defaultSync(SyncConfig.bsp()).secret(SECRET).conclude(), errors::add);
        final JobKeys.Credential keys = new JobKeys.SwitchSecret(SECRET);
        try (UdpTransport switchLoop = UdpTransport.create(1, true);
             UdpTransport workerLoop = UdpTransport.create(1, true);
             UdpHost switchHost = switchLoop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
             Relay relay = new Relay(seed, switchHost.localAddress())) {
            final List<WorkerHost> workers = new ArrayList<>();
            for (int w = 0; w < WORKERS; w++) {
                // formed from offers: every worker's first JOIN is a REBUILD JOIN, there to be captured
                workers.add(WorkerHost.start(new WorkerContext().jobId(JOB).key(keys.keyOf(JOB, w)).workerId(w).workers(WORKERS)
                        .elementsPerRound(ELEMENTS).rebuild(0), relay.forWorker(w), new InetSocketAddress("127.0.0.1", 0), workerLoop,
                    UdpOptions.defaults(), errors::add));
            }
            relay.start();
            try {
                for (final WorkerHost w : workers) {
                    w.joined().get(30, TimeUnit.SECONDS);
                }
                relay.attacking.set(true);
                new Gradients(seed, WORKERS, ELEMENTS).runExactRounds(workers, 40, what);
                relay.attacking.set(false);
            } finally {
                relay.stop();
                workers.forEach(WorkerHost::close);
            }
            assertThat(relay.failure).as(what + ": the relay").isNull();
            final Map<SwitchCounter, Long> c = switchHost.call(() -> pipeline.counters().snapshot()).get(10, TimeUnit.SECONDS);
            assertThat(errors).as(what).isEmpty();
            assertThat(c.get(SwitchCounter.ERRORS)).as(what).isZero();
            assertThat(relay.attacks.get()).as(what + ": attacks sent").isGreaterThan(200);
            assertThat(c.get(SwitchCounter.DROP_REPLAYED)).as(what + ": captured JOIN, REBUILD JOIN and DATA sent again").isPositive();
            assertThat(c.get(SwitchCounter.DROP_BAD_MAC)).as(what + ": altered headers, the tenant's keys").isPositive();
            assertThat(c.get(SwitchCounter.JOBS_REBUILT)).as(what + ": no job torn down").isZero();
            assertThat(c.get(SwitchCounter.JOBS_CREATED)).as(what + ": nor created by the tenant's JOINs").isOne();
            long replayed = 0;
            long forged = 0;
            for (final WorkerHost w : workers) {
                replayed += w.liveCounters().get(WorkerCounter.DROP_REPLAYED);
                forged += w.liveCounters().get(WorkerCounter.DROP_BAD_MAC);
            }
            assertThat(replayed).as(what + ": RESULTs and JOIN_ACKs sent to the workers again").isPositive();
            assertThat(forged).as(what + ": RESULTs altered on their way").isPositive();
        }
    }

    /** One relay socket pair a worker, and the attacker's own socket; a thread forwards, captures and attacks. */
    private static final class Relay implements AutoCloseable {
        private final SplittableRandom random;
        private final InetSocketAddress switchAddress;
        private final Selector selector = Selector.open();
        private final DatagramChannel[] facingWorker = new DatagramChannel[WORKERS];
        private final DatagramChannel[] facingSwitch = new DatagramChannel[WORKERS];
        private final SocketAddress[] workerAddress = new SocketAddress[WORKERS];
        private final DatagramChannel stranger = DatagramChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
        private final List<ByteBuffer> fromWorkers = new ArrayList<>();
        private final List<Integer> fromWorkersOf = new ArrayList<>();
        private final List<ByteBuffer> fromSwitch = new ArrayList<>();
        private final List<Integer> fromSwitchTo = new ArrayList<>();
        private final AtomicBoolean running = new AtomicBoolean(true);
        final AtomicBoolean attacking = new AtomicBoolean();
        final AtomicLong attacks = new AtomicLong();
        volatile Throwable failure;
        private final Thread thread = new Thread(this::loop, "on-path attacker");

        Relay(final long seed, final InetSocketAddress switchAddress) throws IOException {
            this.random = new SplittableRandom(seed);
            this.switchAddress = switchAddress;
            for (int w = 0; w < WORKERS; w++) {
                facingWorker[w] = DatagramChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
                facingSwitch[w] = DatagramChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
                facingWorker[w].configureBlocking(false).register(selector, SelectionKey.OP_READ, w);
                facingSwitch[w].configureBlocking(false).register(selector, SelectionKey.OP_READ, -1 - w);
            }
        }

        InetSocketAddress forWorker(final int w) throws IOException {
            return (InetSocketAddress) facingWorker[w].getLocalAddress();
        }

        void start() {
            thread.start();
        }

        void stop() throws InterruptedException {
            running.set(false);
            selector.wakeup();
            thread.join(10_000);
        }

        private void loop() {
            final ByteBuffer b = Packet.allocate(65536);
            try {
                long forwarded = 0;
                while (running.get()) {
                    selector.select(5);
                    for (final SelectionKey key : selector.selectedKeys()) {
                        final int tag = (Integer) key.attachment();
                        final DatagramChannel channel = (DatagramChannel) key.channel();
                        b.clear();
                        for (SocketAddress from = channel.receive(b); from != null; b.clear(), from = channel.receive(b)) {
                            b.flip();
                            final ByteBuffer copy = Packet.allocate(b.remaining()).put(0, b, 0, b.remaining());
                            if (tag >= 0) {
                                workerAddress[tag] = from;
                                capture(fromWorkers, fromWorkersOf, copy, tag);
                                facingSwitch[tag].send(b, switchAddress);
                            } else if (workerAddress[-1 - tag] != null) {
                                capture(fromSwitch, fromSwitchTo, copy, -1 - tag);
                                facingWorker[-1 - tag].send(b, workerAddress[-1 - tag]);
                            }
                            if (attacking.get() && ++forwarded % 7 == 0) {
                                attack();
                            }
                        }
                    }
                    selector.selectedKeys().clear();
                }
            } catch (final Throwable ex) {
                failure = ex;
            }
        }

        /** Keeps every JOIN and JOIN_ACK, and every 16th other packet (at most 256 of each direction). */
        private void capture(final List<ByteBuffer> into, final List<Integer> of, final ByteBuffer packet, final int worker) {
            final int type = packet.get(Packet.TYPE_OFFSET) & 0xFF;
            final boolean control = type == PacketType.JOIN.code() || type == PacketType.JOIN_ACK.code();
            if ((control || random.nextInt(16) == 0) && into.size() < 256) {
                into.add(packet);
                of.add(worker);
            }
        }

        /** One attack, chosen by the seed. */
        private void attack() throws IOException {
            if (fromWorkers.isEmpty() || fromSwitch.isEmpty()) {
                return;
            }
            final int i = random.nextInt(fromWorkers.size());
            final int w = fromWorkersOf.get(i);
            final ByteBuffer p = copy(fromWorkers.get(i));
            final PacketHeader h = new PacketHeader().wrap(p, 0, p.capacity());
            switch (random.nextInt(8)) {
                case 0: // the captured packet again, from the worker's address
                    facingSwitch[w].send(p, switchAddress);
                    break;
                case 1: // the captured packet again, from another address
                    stranger.send(p, switchAddress);
                    break;
                case 2: // the captured header with REBUILD set (a JOIN's body: offers of round 0)
                    if (h.type() == PacketType.JOIN) {
                        new JoinPacket().wrap(p, 0, JoinPacket.LENGTH).flags(Flags.REBUILD).offer(0, 0);
                    } else {
                        h.flags(h.flags() ^ Flags.REBUILD);
                    }
                    stranger.send(p, switchAddress);
                    break;
                case 3: // the captured header as a LEAVE
                    h.wrap(p, 0, Packet.HEADER_LENGTH);
                    p.put(Packet.TYPE_OFFSET, (byte) PacketType.LEAVE.code());
                    facingSwitch[w].send(p.limit(Packet.HEADER_LENGTH), switchAddress);
                    break;
                case 4: // the captured header with another round, seq and worker id
                    h.round(h.round() + 1).seq(h.seq() + 1).workerId((h.workerId() + 1) % WORKERS);
                    facingSwitch[w].send(p, switchAddress);
                    break;
                case 5: // a tenant of the switch, signing with keys it derived from its own job's secret for this job
                    final JobKeys.WorkerKey tenant = JobKeys.workerKey(JobKeys.jobSecret(SECRET, TENANT_JOB), JOB, w);
                    h.packetNumber(h.packetNumber() + 1_000_000);
                    PacketAuth.seal(tenant.k0(), tenant.k1(), h.packetNumber(), h);
                    facingSwitch[w].send(p, switchAddress);
                    break;
                case 6: { // a packet of the switch's sent to a worker again
                    final int k = random.nextInt(fromSwitch.size());
                    facingWorker[fromSwitchTo.get(k)].send(copy(fromSwitch.get(k)), workerAddress[fromSwitchTo.get(k)]);
                    break;
                }
                default: { // a packet of the switch's altered on its way: a RESULT's released round, another's header
                    final int k = random.nextInt(fromSwitch.size());
                    final ByteBuffer s = copy(fromSwitch.get(k));
                    final PacketHeader sh = new PacketHeader().wrap(s, 0, s.capacity());
                    if (sh.type() == PacketType.RESULT) {
                        new ResultPacket().wrap(s, 0, s.capacity()).releasedRound(Integer.MAX_VALUE - 1);
                    } else {
                        sh.round(sh.round() + 1);
                    }
                    sh.packetNumber(sh.packetNumber() + 1_000_000);
                    facingWorker[fromSwitchTo.get(k)].send(s, workerAddress[fromSwitchTo.get(k)]);
                    break;
                }
            }
            attacks.incrementAndGet();
        }

        private static ByteBuffer copy(final ByteBuffer packet) {
            return Packet.allocate(packet.capacity()).put(0, packet, 0, packet.capacity());
        }

        @Override
        public void close() throws IOException {
            running.set(false);
            for (int w = 0; w < WORKERS; w++) {
                facingWorker[w].close();
                facingSwitch[w].close();
            }
            stranger.close();
            selector.close();
        }
    }
}
