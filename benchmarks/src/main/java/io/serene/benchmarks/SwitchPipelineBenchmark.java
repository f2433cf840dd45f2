package io.serene.benchmarks;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchCounter;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.DataPacket;
import io.serene.protocol.Flags;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Outbox;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketType;
import io.serene.protocol.sync.StepLayout;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

/**
 * Per-packet cost of the switch pipeline against a baseline in the same run: {@code copy} hands
 * the same DATA packets (4 workers, {@code chunkElements} values each) to the same outbox unchanged,
 * as an echo does; {@code aggregate} runs them through {@link SwitchPipeline#onPacket}, where every
 * 4th packet releases a chunk and multicasts 4 results. Both emit one packet per packet received.
 * The ratio copy / aggregate is how much of a packet's cost the data plane adds on top of moving it;
 * a packet's elements over its nanoseconds is the pipeline's rate. The packets follow the job's
 * {@link StepLayout} as a worker sends them: each round's exponent steps, then a value step per
 * chunk, whose seq, slot and round the switch checks. A round is the same 262,144 elements a worker
 * at every chunk size (1,024 chunks of 256 with 2 exponent steps, 32 of 8,192 with 1) and the pool
 * holds half a round: 256 is a hardware switch's packet (Tofino-like), 8,192 the most a software
 * switch's UDP packet takes. The run fails if the switch dropped a packet.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class SwitchPipelineBenchmark {
    private static final int ELEMENTS = 1 << 18;
    private static final int WORKERS = 4;

    @Param({"256", "8192"})
    int chunkElements;

    /** Chunks an invocation takes from every worker (every chunk size's rounds are a multiple of it). */
    private static final int BATCH = 32;

    private StepLayout layout;
    /** Steps a round: its exponent steps and a value step per chunk. */
    private int steps;
    /** The round's next chunk. */
    private int next;

    private final int workers = WORKERS;
    private final ByteBuffer transmitted = ByteBuffer.allocateDirect(65536);

    private SwitchPipeline pipeline;
    private ByteBuffer received;
    private int[][] offsets;
    private int[] lengths;
    private long round;
    private Blackhole sink;
    // like a transport: copy the packet out of the engine's buffer
    private final Outbox outbox = (port, buffer, offset, len) -> {
        transmitted.clear();
        transmitted.put(0, buffer, offset, len);
        sink.consume(transmitted.get(len - 1));
    };

    @Setup
    public void setUp(final Blackhole blackhole) {
        sink = blackhole;
        final int pool = ELEMENTS / chunkElements / 2;
        layout = new StepLayout(ELEMENTS, chunkElements, pool);
        steps = layout.stepsPerRound();
        final SwitchContext context = new SwitchContext().maxJobs(1).maxWorkers(workers).chunkElements(chunkElements)
            .maxPoolSize(pool).roundRing(4).conclude();
        pipeline = new SwitchPipeline(context, ex -> {
            throw new IllegalStateException(ex);
        });
        for (int w = 0; w < workers; w++) {
            final ByteBuffer join = Packet.allocate(JoinPacket.LENGTH);
            new JoinPacket().wrap(join, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).jobId(1)
                .workerId(w).workerCount(workers).elementsPerRound(ELEMENTS);
            pipeline.onPacket(w, join, 0, JoinPacket.LENGTH, 0, outbox);
        }
        // every packet in one receive buffer, as a transport's batch lands (at 4-byte aligned offsets)
        lengths = new int[steps];
        offsets = new int[steps][workers];
        int total = 0;
        for (int t = 0; t < steps; t++) {
            lengths[t] = DataPacket.length(layout.elementCount(t));
            for (int w = 0; w < workers; w++) {
                offsets[t][w] = total;
                total += (lengths[t] + 7) & ~7;
            }
        }
        received = Packet.allocate(total);
        for (int t = 0; t < steps; t++) {
            final int n = layout.elementCount(t);
            for (int w = 0; w < workers; w++) {
                final ByteBuffer b = received;
                final DataPacket p = new DataPacket().wrap(b, offsets[t][w], lengths[t]).initHeader(PacketType.DATA).jobId(1)
                    .workerId(w).chunk(layout.chunkOf(t)).elementCount(n);
                if (layout.isValueStep(t)) {
                    // the look-ahead exponent of chunk + pool, as a worker sends it
                    p.flags(Flags.VALUES).exponent(layout.chunkOf(t) + layout.lookAhead() < layout.chunks() ? (byte) 0 : Packet.NO_EXPONENT);
                    for (int i = 0; i < n; i++) {
                        p.value(i, (i * 31 + w) & 0xFFFF);
                    }
                } else {
                    p.flags(Flags.EXPONENTS).exponent(Packet.NO_EXPONENT);
                    for (int i = 0; i < n; i++) {
                        p.value(i, 0);
                    }
                }
            }
        }
    }

    /** A run that dropped packets or released nothing measured something else: fail it, with the switch's counters. */
    @TearDown
    public void checkEveryPacketAggregated() {
        final long data = pipeline.counters().get(SwitchCounter.PACKETS_IN) - pipeline.counters().get(SwitchCounter.JOINS);
        final long contributions = pipeline.counters().get(SwitchCounter.CONTRIBUTIONS);
        final long releases = pipeline.counters().get(SwitchCounter.RELEASES);
        if (contributions != data || releases * workers != contributions) {
            throw new IllegalStateException("the pipeline did not aggregate every packet: " + pipeline.counters());
        }
    }

    /** The next BATCH chunks of the round from every worker (a new round after the last): each packet aggregated, each chunk released. */
    @Benchmark
    @OperationsPerInvocation(BATCH * WORKERS)
    public void aggregate() {
        final DataPacket p = new DataPacket();
        for (int k = 0; k < BATCH; k++) {
            final int t = next;
            final long seq = layout.seq((int) round, t);
            for (int w = 0; w < workers; w++) {
                p.wrap(received, offsets[t][w], lengths[t]).seq(seq).round((int) round).poolIndex(layout.slot(seq))
                    .shadowSet(layout.shadowSet(seq));
                pipeline.onPacket(w, received, offsets[t][w], lengths[t], 0, outbox);
            }
            if (++next == steps) {
                next = 0;
                round++;
            }
        }
    }

    /** The baseline: the same packets handed straight back to the outbox, as an echo would. */
    @Benchmark
    @OperationsPerInvocation(BATCH * WORKERS)
    public void copy() {
        for (int k = 0; k < BATCH; k++) {
            for (int w = 0; w < workers; w++) {
                outbox.send(w, received, offsets[next][w], lengths[next]);
            }
            if (++next == steps) {
                next = 0;
            }
        }
    }
}
