package io.serene.dataplane;

import io.serene.protocol.DataPacket;
import io.serene.protocol.Flags;
import io.serene.protocol.JobKeys;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Outbox;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketAuth;
import io.serene.protocol.PacketType;
import io.serene.protocol.sync.StepLayout;

import java.nio.ByteBuffer;

/**
 * A job of N workers whose packets are made up, not computed: joins it to a pipeline, then feeds it
 * the job's steps in the order workers send them ({@link StepLayout}: each round's exponent steps,
 * then a value step per chunk), every worker's packet of a step before the next step, from one
 * receive buffer as a transport's batch lands: what the JMH benchmark measures the pipeline with.
 * (Run before a training job's first packets to warm the JIT up, it made no difference measurable
 * on the run's time.) Not thread-safe: the thread that owns the pipeline drives it.
 */
public final class SyntheticJob {
    private final SwitchPipeline pipeline;
    private final StepLayout layout;
    private final int workers;
    private final ByteBuffer received;
    private final int[][] offsets;
    private final int[] lengths;
    private final DataPacket packet = new DataPacket();
    /** Each worker's key (null: packets unsigned), and the next packet number. */
    private final long[] k0;
    private final long[] k1;
    private long number = 1;
    private long round;
    private int next;

    /**
     * Joins {@code workers} workers as job {@code job} with {@code elements} elements a round to
     * {@code pipeline}, whose context has chunk size {@code chunkElements} and pool size {@code poolSize};
     * with {@code keys} (the switch's secret, or the job's), every packet is signed as its worker signs it.
     */
    public SyntheticJob(final SwitchPipeline pipeline, final int job, final int workers, final int elements, final int chunkElements,
                        final int poolSize, final Outbox outbox, final JobKeys.Credential keys) {
        this.pipeline = pipeline;
        this.workers = workers;
        this.layout = new StepLayout(elements, chunkElements, poolSize);
        k0 = keys == null ? null : new long[workers];
        k1 = keys == null ? null : new long[workers];
        for (int w = 0; w < workers; w++) {
            if (keys != null) {
                k0[w] = keys.keyOf(job, w).k0();
                k1[w] = keys.keyOf(job, w).k1();
            }
            final ByteBuffer join = Packet.allocate(JoinPacket.LENGTH);
            final JoinPacket p = new JoinPacket().wrap(join, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).jobId(job)
                .workerId(w).workerCount(workers).elementsPerRound(elements);
            stamp(p, w);
            pipeline.onPacket(w, join, 0, JoinPacket.LENGTH, 0, outbox);
        }
        final int steps = layout.stepsPerRound();
        lengths = new int[steps];
        offsets = new int[steps][workers];
        int total = 0;
        for (int t = 0; t < steps; t++) {
            lengths[t] = DataPacket.length(layout.elementCount(t));
            for (int w = 0; w < workers; w++) {
                offsets[t][w] = total;
                // 8-byte aligned, as a transport's receive buffers are
                total += (lengths[t] + 7) & ~7;
            }
        }
        received = Packet.allocate(total);
        for (int t = 0; t < steps; t++) {
            final int n = layout.elementCount(t);
            for (int w = 0; w < workers; w++) {
                packet.wrap(received, offsets[t][w], lengths[t]).initHeader(PacketType.DATA).jobId(job)
                    .workerId(w).chunk(layout.chunkOf(t)).elementCount(n);
                if (layout.isValueStep(t)) {
                    // the look-ahead exponent of chunk + pool, as a worker sends it
                    packet.flags(Flags.VALUES)
                        .exponent(layout.chunkOf(t) + layout.lookAhead() < layout.chunks() ? (byte) 0 : Packet.NO_EXPONENT);
                    for (int i = 0; i < n; i++) {
                        packet.value(i, (i * 31 + w) & 0xFFFF);
                    }
                } else {
                    packet.flags(Flags.EXPONENTS).exponent(Packet.NO_EXPONENT);
                    for (int i = 0; i < n; i++) {
                        packet.value(i, 0);
                    }
                }
            }
        }
    }

    /** Feeds the next {@code count} steps from every worker (a new round after a round's last), numbered as the layout says. */
    public void steps(final int count, final long nowNs, final Outbox outbox) {
        for (int k = 0; k < count; k++) {
            final int t = next;
            for (int w = 0; w < workers; w++) {
                prepare(t, w);
                pipeline.onPacket(w, received, offsets[t][w], lengths[t], nowNs, outbox);
            }
            advance();
        }
    }

    /**
     * Makes the next {@code count} steps' packets as {@link #steps} does (numbered, signed with keys)
     * without handing them to the pipeline: the workers' share of what steps costs.
     */
    public void prepare(final int count) {
        for (int k = 0; k < count; k++) {
            for (int w = 0; w < workers; w++) {
                prepare(next, w);
            }
            advance();
        }
    }

    private void prepare(final int t, final int w) {
        final long seq = layout.seq((int) round, t);
        packet.wrap(received, offsets[t][w], lengths[t]).seq(seq).round((int) round).poolIndex(layout.slot(seq))
            .shadowSet(layout.shadowSet(seq));
        stamp(packet, w);
    }

    private void stamp(final Packet<?> p, final int w) {
        if (k0 == null) {
            p.packetNumber(number++);
        } else {
            PacketAuth.seal(k0[w], k1[w], number++, p);
        }
    }

    private void advance() {
        if (++next == layout.stepsPerRound()) {
            next = 0;
            round++;
        }
    }

    /** The same packets handed to {@code outbox} unchanged (the benchmark's echo baseline), advancing as {@link #steps} does. */
    public void echo(final int count, final Outbox outbox) {
        for (int k = 0; k < count; k++) {
            for (int w = 0; w < workers; w++) {
                outbox.send(w, received, offsets[next][w], lengths[next]);
            }
            if (++next == layout.stepsPerRound()) {
                next = 0;
            }
        }
    }

    public StepLayout layout() {
        return layout;
    }
}
