package io.serene.systemtests;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchCounter;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.DataPacket;
import io.serene.protocol.Flags;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.ResultPacket;
import io.serene.protocol.sync.SyncConfig;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.WorkerHost;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerCounter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
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
 * Another process on the host attacks a BSP job while it runs: a seeded, bounded fuzzer sends the
 * switch's port random bytes, well-formed headers of every type with the job's real id and real
 * worker ids, DATA posing as each worker, JOINs taking their ids and filling the job table, LEAVEs,
 * CONFIG_REQUESTs and floods, and sends the workers RESULTs with huge rounds. Every round must
 * still be exact (each worker's integer sums equal the sum of the quantized inputs, and equal
 * across workers), the switch must report no error, and what it refused must be counted.
 */
class SwitchFuzzSystemTest {
    private static final int JOB = 5;
    private static final int WORKERS = 3;
    private static final int ELEMENTS = 3_000;
    /** Packets the fuzzer sends in all; the job keeps training until they are sent, however fast its rounds go. */
    private static final int BUDGET = 5_000;

    @Test
    @Timeout(180)
    void foreignTrafficChangesNoSumAndIsCounted() throws Exception {
        for (final long seed : new long[] {11, 12}) {
            run(seed);
        }
    }

    private static void run(final long seed) throws Exception {
        final String what = "seed " + seed;
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(4 << 20).maxJobs(4)
            .defaultSync(SyncConfig.bsp()).conclude(), errors::add);
        try (UdpTransport switchLoop = UdpTransport.create(1, true);
             UdpTransport workerLoop = UdpTransport.create(1, true);
             UdpHost switchHost = switchLoop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
             DatagramChannel attacker = DatagramChannel.open().bind(new InetSocketAddress("127.0.0.1", 0))) {
            final List<WorkerHost> workers = new ArrayList<>();
            for (int w = 0; w < WORKERS; w++) {
                workers.add(WorkerHost.start(new WorkerContext().jobId(JOB).workerId(w).workers(WORKERS).elementsPerRound(ELEMENTS),
                    switchHost.localAddress(), new InetSocketAddress("127.0.0.1", 0), workerLoop, UdpOptions.defaults(), errors::add));
            }
            final AtomicBoolean stop = new AtomicBoolean();
            final AtomicLong sent = new AtomicLong();
            final Thread fuzzer = new Thread(() -> fuzz(new SplittableRandom(seed), attacker, switchHost.localAddress(), workers, stop, sent),
                "fuzzer");
            try {
                for (final WorkerHost w : workers) {
                    w.joined().get(20, TimeUnit.SECONDS);
                }
                fuzzer.start();
                new Gradients(seed, WORKERS, ELEMENTS).runExactRounds(workers, 40, () -> !fuzzer.isAlive(), what);
            } finally {
                stop.set(true);
                fuzzer.join(10_000);
                workers.forEach(WorkerHost::close);
            }
            assertThat(sent.get()).as(what + ": the fuzzer sent its whole budget while the job trained").isGreaterThanOrEqualTo(BUDGET);
            final Map<SwitchCounter, Long> c = switchHost.call(() -> pipeline.counters().snapshot()).get(10, TimeUnit.SECONDS);
            assertThat(errors).as(what).isEmpty();
            assertThat(c.get(SwitchCounter.ERRORS)).as(what).isZero();
            assertThat(c.get(SwitchCounter.DROP_FOREIGN_PORT)).as(what + ": DATA, LEAVE and CONFIG_REQUEST posing as a worker")
                .isPositive();
            assertThat(c.get(SwitchCounter.DROP_BAD_MAGIC) + c.get(SwitchCounter.DROP_TRUNCATED) + c.get(SwitchCounter.DROP_BAD_LENGTH))
                .as(what + ": garbage").isPositive();
            assertThat(c.get(SwitchCounter.JOIN_REFUSED)).as(what + ": JOINs taking a worker's id, or a full job table").isPositive();
            long refused = 0;
            for (final WorkerHost w : workers) {
                refused += w.liveCounters().get(WorkerCounter.DROP_FOREIGN);
            }
            assertThat(refused).as(what + ": RESULTs sent to the workers by a stranger").isPositive();
        }
    }

    /** Sends {@link #BUDGET} packets unless stopped, at most about 20 packets a millisecond (and floods), each kind by the seed. */
    private static void fuzz(final SplittableRandom random, final DatagramChannel out, final InetSocketAddress target,
                             final List<WorkerHost> workers, final AtomicBoolean stop, final AtomicLong sent) {
        final ByteBuffer b = Packet.allocate(2048);
        try {
            int n = 0;
            while (!stop.get() && sent.get() < BUDGET) {
                final int kind = random.nextInt(9);
                InetSocketAddress to = target;
                b.clear();
                int length;
                switch (kind) {
                    case 0: // random bytes
                        length = 1 + random.nextInt(700);
                        for (int i = 0; i < length; i++) {
                            b.put(i, (byte) random.nextInt(256));
                        }
                        break;
                    case 1: // a well-formed header of any type, the job's id and a real worker's
                        length = Packet.HEADER_LENGTH + random.nextInt(64);
                        new PacketHeader().wrap(b, 0, length).initHeader(PacketType.fromCode(1 + random.nextInt(9))).jobId(JOB)
                            .workerId(random.nextInt(WORKERS)).seq(random.nextLong(64)).round(random.nextInt(64));
                        break;
                    case 2: // DATA posing as a worker, plausible steps, huge values
                    case 3:
                        final int count = 1 + random.nextInt(256);
                        length = DataPacket.length(count);
                        final long seq = random.nextLong(200);
                        final DataPacket d = new DataPacket().wrap(b, 0, length).initHeader(PacketType.DATA).jobId(JOB)
                            .workerId(random.nextInt(WORKERS)).seq(seq).round((int) (seq / 5)).chunk((int) (seq % 5))
                            .shadowSet(random.nextInt(2)).poolIndex(random.nextInt(64)).flags(Flags.VALUES).elementCount(count)
                            .exponent((byte) random.nextInt(-20, 20));
                        for (int i = 0; i < count; i++) {
                            d.value(i, random.nextInt());
                        }
                        break;
                    case 4: // JOIN: a worker's id in the job, or a new job filling the table
                        length = JoinPacket.LENGTH;
                        new JoinPacket().wrap(b, 0, length).initHeader(PacketType.JOIN)
                            .jobId(random.nextBoolean() ? JOB : 1_000 + random.nextInt(8)).workerId(random.nextInt(WORKERS))
                            .workerCount(WORKERS).elementsPerRound(ELEMENTS);
                        break;
                    case 5: // LEAVE or CONFIG_REQUEST posing as a worker
                        length = Packet.HEADER_LENGTH;
                        new PacketHeader().wrap(b, 0, length).initHeader(random.nextBoolean() ? PacketType.LEAVE : PacketType.CONFIG_REQUEST)
                            .jobId(JOB).workerId(random.nextInt(WORKERS));
                        break;
                    case 6: // a RESULT to a worker, as if from its switch, with a huge R
                        length = ResultPacket.length(1, 16);
                        new ResultPacket().wrap(b, 0, length).initHeader(PacketType.RESULT).jobId(JOB).workerId(0)
                            .seq(random.nextLong(100)).elementCount(16).bitmapWords(1).bitmapWord(0, 0b111L)
                            .contributorCount(WORKERS).releasedRound(Integer.MAX_VALUE - random.nextInt(10));
                        to = ((UdpHost) workers.get(random.nextInt(WORKERS)).host()).localAddress();
                        break;
                    default: // a flood of DATA
                        length = DataPacket.length(8);
                        for (int burst = 0; burst < 50 && !stop.get() && sent.get() < BUDGET; burst++) {
                            new DataPacket().wrap(b, 0, length).initHeader(PacketType.DATA).jobId(JOB).workerId(random.nextInt(WORKERS))
                                .seq(random.nextLong(200)).flags(Flags.VALUES).elementCount(8);
                            out.send(b.duplicate().position(0).limit(length), target);
                            sent.incrementAndGet();
                        }
                        continue;
                }
                out.send(b.duplicate().position(0).limit(length), to);
                sent.incrementAndGet();
                if (++n % 20 == 0) {
                    Thread.sleep(1);
                }
            }
        } catch (final Exception ex) {
            if (!stop.get()) {
                throw new IllegalStateException("fuzzer: " + ex, ex);
            }
        }
    }
}
