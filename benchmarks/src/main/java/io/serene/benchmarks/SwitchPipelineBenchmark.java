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
 * the same DATA packets (4 workers, {@code chunkElements} values each) to the same outbox unchanged,
 * as an echo does; {@code aggregate} runs them through {@link SwitchPipeline#onPacket}, where every
 * 4th packet releases a chunk and multicasts 4 results. Both emit one packet per packet received.
 * The ratio copy / aggregate is how much of a packet's cost the data plane adds on top of moving it;
 * chunkElements / (ns a packet) is the pipeline's rate in elements a nanosecond. A round is the same
 * 262,144 elements a worker at every chunk size (1,024 chunks of 256, 32 of 8,192): 256 is a
 * hardware switch's packet (Tofino-like), 8,192 the most a software switch's UDP packet takes.
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

    /** Chunks a round (every one a step of its own: the pool holds half of them). */
    private int steps;
    /** The round's next chunk. */
    private int next;

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
        steps = ELEMENTS / chunkElements;
        final SwitchContext context = new SwitchContext().maxJobs(1).maxWorkers(workers).chunkElements(chunkElements)
            .maxPoolSize(steps / 2).roundRing(4).conclude();
        pipeline = new SwitchPipeline(context, ex -> {
            throw new IllegalStateException(ex);
        });
        length = DataPacket.length(chunkElements);
        for (int w = 0; w < workers; w++) {
            final ByteBuffer join = Packet.allocate(JoinPacket.LENGTH);
            new JoinPacket().wrap(join, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).jobId(1)
                .workerId(w).workerCount(workers).elementsPerRound(chunkElements * steps);
            pipeline.onPacket(w, join, 0, JoinPacket.LENGTH, 0, outbox);
        }
        packets = new ByteBuffer[steps][workers];
        for (int s = 0; s < steps; s++) {
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

    /** The next BATCH chunks of the round from every worker (a new round after the last): each packet aggregated, each chunk released. */
    @Benchmark
    @OperationsPerInvocation(BATCH * WORKERS)
    public void aggregate() {
        final DataPacket p = new DataPacket();
        for (int k = 0; k < BATCH; k++) {
            final int s = next;
            final long seq = round * steps + s;
            for (int w = 0; w < workers; w++) {
                final ByteBuffer b = packets[s][w];
                p.wrap(b, 0, length).seq(seq).round((int) round).poolIndex((int) (seq % (steps / 2)))
                    .shadowSet((int) ((seq / (steps / 2)) & 1));
                pipeline.onPacket(w, b, 0, length, 0, outbox);
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
                outbox.send(w, packets[next][w], 0, length);
            }
            if (++next == steps) {
                next = 0;
            }
        }
    }
}
