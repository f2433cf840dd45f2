package io.serene.benchmarks;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.DataPacket;
import io.serene.protocol.Flags;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Outbox;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketType;
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
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

/**
 * Per-packet cost of the switch pipeline against a baseline in the same run: {@code copy} hands
 * the same DATA packets (4 workers, 1 KiB of values each) to the same outbox unchanged, as an echo
 * does; {@code aggregate} runs them through {@link SwitchPipeline#onPacket}, where every 4th packet
 * releases a chunk and multicasts 4 results. Both emit one packet per packet received. The ratio
 * copy / aggregate is how much of a packet's cost the data plane adds on top of moving it.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class SwitchPipelineBenchmark {
    private static final int STEPS = 1024;
    private static final int WORKERS = 4;

    @Param({"256"})
    int chunkElements;

    private final int workers = WORKERS;
    private final ByteBuffer transmitted = ByteBuffer.allocateDirect(65536);

    private SwitchPipeline pipeline;
    private ByteBuffer[][] packets;
    private int length;
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
        final SwitchContext context = new SwitchContext().maxJobs(1).maxWorkers(workers).chunkElements(chunkElements)
            .maxPoolSize(STEPS / 2).roundRing(4).conclude();
        pipeline = new SwitchPipeline(context, ex -> {
            throw new IllegalStateException(ex);
        });
        length = DataPacket.length(chunkElements);
        for (int w = 0; w < workers; w++) {
            final ByteBuffer join = Packet.allocate(JoinPacket.LENGTH);
            new JoinPacket().wrap(join, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).jobId(1)
                .workerId(w).workerCount(workers).elementsPerRound(chunkElements * STEPS);
            pipeline.onPacket(w, join, 0, JoinPacket.LENGTH, 0, outbox);
        }
        packets = new ByteBuffer[STEPS][workers];
        for (int s = 0; s < STEPS; s++) {
            for (int w = 0; w < workers; w++) {
                final ByteBuffer b = Packet.allocate(length);
                final DataPacket p = new DataPacket().wrap(b, 0, length).initHeader(PacketType.DATA).jobId(1)
                    .workerId(w).chunk(s).flags(Flags.VALUES).elementCount(chunkElements).exponent((byte) 0);
                for (int i = 0; i < chunkElements; i++) {
                    p.value(i, (i * 31 + w) & 0xFFFF);
                }
                packets[s][w] = b;
            }
        }
    }

    /** One round of STEPS chunks from every worker: each packet aggregated, each chunk released. */
    @Benchmark
    @OperationsPerInvocation(STEPS * WORKERS)
    public void aggregate() {
        final long base = round * STEPS;
        final DataPacket p = new DataPacket();
        for (int s = 0; s < STEPS; s++) {
            final long seq = base + s;
            for (int w = 0; w < workers; w++) {
                final ByteBuffer b = packets[s][w];
                p.wrap(b, 0, length).seq(seq).round((int) round).poolIndex((int) (seq % (STEPS / 2)))
                    .shadowSet((int) ((seq / (STEPS / 2)) & 1));
                pipeline.onPacket(w, b, 0, length, 0, outbox);
            }
        }
        round++;
    }

    /** The baseline: the same packets handed straight back to the outbox, as an echo would. */
    @Benchmark
    @OperationsPerInvocation(STEPS * WORKERS)
    public void copy() {
        for (int s = 0; s < STEPS; s++) {
            for (int w = 0; w < workers; w++) {
                outbox.send(w, packets[s][w], 0, length);
            }
        }
    }
}
