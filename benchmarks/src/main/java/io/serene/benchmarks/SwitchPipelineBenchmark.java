package io.serene.benchmarks;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchCounter;
import io.serene.dataplane.SwitchPipeline;
import io.serene.dataplane.SyntheticJob;
import io.serene.protocol.JobKeys;
import io.serene.protocol.Outbox;
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
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * Per-packet cost of the switch pipeline against a baseline in the same run: {@code copy} hands
 * the same DATA packets (4 workers, {@code chunkElements} values each) to the same outbox unchanged,
 * as an echo does; {@code aggregate} runs them through {@link SwitchPipeline#onPacket}, where every
 * 4th packet releases a chunk and multicasts 4 results. Both emit one packet per packet received.
 * The ratio copy / aggregate is how much of a packet's cost the data plane adds on top of moving it;
 * a packet's elements over its nanoseconds is the pipeline's rate. The packets follow the job's
 * step layout as a worker sends them ({@link SyntheticJob}): each round's exponent steps, then a value step per
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

    /** Whether the job has a secret: every packet then carries a MAC the switch checks, and the switch signs its results. */
    @Param({"none", "mac"})
    String auth;

    /** Steps an invocation takes from every worker. */
    private static final int BATCH = 32;

    private final ByteBuffer transmitted = ByteBuffer.allocateDirect(65536);

    private SwitchPipeline pipeline;
    private SyntheticJob job;
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
        final byte[] secret = "mac".equals(auth) ? "a secret for the benchmark's job".getBytes(StandardCharsets.UTF_8) : null;
        final SwitchContext context = new SwitchContext().maxJobs(1).maxWorkers(WORKERS).chunkElements(chunkElements)
            .maxPoolSize(pool).roundRing(4).secret(secret).conclude();
        pipeline = new SwitchPipeline(context, ex -> {
            throw new IllegalStateException(ex);
        });
        job = new SyntheticJob(pipeline, 1, WORKERS, ELEMENTS, chunkElements, pool, outbox,
            secret == null ? null : new JobKeys.SwitchSecret(secret));
    }

    /** A run that dropped packets or released nothing measured something else: fail it, with the switch's counters. */
    @TearDown
    public void checkEveryPacketAggregated() {
        final long data = pipeline.counters().get(SwitchCounter.PACKETS_IN) - pipeline.counters().get(SwitchCounter.JOINS);
        final long contributions = pipeline.counters().get(SwitchCounter.CONTRIBUTIONS);
        final long releases = pipeline.counters().get(SwitchCounter.RELEASES);
        if (contributions != data || releases * WORKERS != contributions) {
            throw new IllegalStateException("the pipeline did not aggregate every packet: " + pipeline.counters());
        }
    }

    /** The next BATCH steps of the round from every worker (a new round after the last): each packet aggregated, each chunk released. */
    @Benchmark
    @OperationsPerInvocation(BATCH * WORKERS)
    public void aggregate() {
        job.steps(BATCH, 0, outbox);
    }

    /**
     * What the workers' side of {@link #aggregate} costs: the same packets numbered and (with a
     * secret) signed, not handed to the switch. The switch's cost of a packet is aggregate less this.
     */
    @Benchmark
    @OperationsPerInvocation(BATCH * WORKERS)
    public void prepare() {
        job.prepare(BATCH);
    }

    /** The baseline: the same packets handed straight back to the outbox, as an echo would. */
    @Benchmark
    @OperationsPerInvocation(BATCH * WORKERS)
    public void copy() {
        job.echo(BATCH, outbox);
    }
}
