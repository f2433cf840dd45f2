package io.serene.worker;

import io.serene.protocol.Counters;
import io.serene.protocol.Flags;
import io.serene.protocol.Packet;
import io.serene.protocol.DataPacket;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.sync.StepLayout;

import java.nio.ByteBuffer;
import java.nio.IntBuffer;

/**
 * Encodes the worker's packets into its one transmit buffer: a step's DATA packet (the chunk
 * exponents of an exponent step, or a value step's chunk quantized with its agreed exponent and
 * the look-ahead exponent in the header), and JOIN, LEAVE and CONFIG_REQUEST. Each method returns
 * the length to send from {@link #buffer()}.
 */
final class StepEncoder {
    /** Largest chunk a JOIN_ACK may announce (a DATA packet must fit one datagram). */
    static final int MAX_CHUNK_ELEMENTS = 16_000;

    private final WorkerContext ctx;
    private final Counters<WorkerCounter> counters;
    private final int q;
    private final DataPacket data = new DataPacket();
    private final JoinPacket join = new JoinPacket();
    private final PacketHeader header = new PacketHeader();
    private final ByteBuffer txBuffer = Packet.allocate(DataPacket.length(MAX_CHUNK_ELEMENTS));
    private final IntBuffer txInts = txBuffer.asIntBuffer();
    private final int[] quantized = new int[MAX_CHUNK_ELEMENTS];

    StepEncoder(final WorkerContext ctx, final Counters<WorkerCounter> counters, final int q) {
        this.ctx = ctx;
        this.counters = counters;
        this.q = q;
    }

    ByteBuffer buffer() {
        return txBuffer;
    }

    /** Each chunk's local exponent of a round's data, into its buffers. */
    static void localExponents(final StepLayout layout, final RoundBuffers b) {
        for (int c = 0; c < layout.chunks(); c++) {
            b.localExp[c] = BlockFloat.exponentOf(b.data, c * layout.chunkElements(), layout.chunkLength(c));
        }
    }

    /** A report of this worker's compute time for {@code round}, released without it (flag REPORT, header only). */
    int report(final StepLayout layout, final long seq, final int round, final long computeNs, final int epoch) {
        final int length = header(layout, seq, round, 0, 0, computeNs, epoch);
        data.exponent(Packet.NO_EXPONENT).flags(Flags.REPORT);
        return length;
    }

    /** The DATA packet of step seq (step t of its round) from the round's buffers. */
    int step(final StepLayout layout, final long seq, final int round, final int t, final RoundBuffers b,
             final long computeNs, final int epoch) {
        final boolean valueStep = layout.isValueStep(t);
        final int chunk = layout.chunkOf(t);
        final int n = layout.elementCount(t);
        final int length = header(layout, seq, round, chunk, n, computeNs, epoch);
        if (!valueStep) {
            data.exponent(Packet.NO_EXPONENT).flags(Flags.EXPONENTS);
            for (int i = 0; i < n; i++) {
                txBuffer.putInt(DataPacket.VALUES_OFFSET + 4 * i, b.localExp[chunk + i]);
            }
        } else {
            final int ahead = chunk + layout.lookAhead();
            data.exponent(ahead < layout.chunks() ? b.localExp[ahead] : Packet.NO_EXPONENT);
            final int agreed = b.agreedExp[chunk];
            final int local = b.localExp[chunk];
            final int saturated = BlockFloat.quantizeChunk(b.data, chunk * layout.chunkElements(), n, agreed, q, quantized,
                local > agreed || local == BlockFloat.MAX_EXPONENT);
            txInts.put(DataPacket.VALUES_OFFSET >> 2, quantized, 0, n);
            int flags = Flags.VALUES;
            if (saturated > 0) {
                flags |= Flags.SATURATED;
                counters.add(WorkerCounter.SATURATED_VALUES, saturated);
            }
            data.flags(flags);
        }
        return length;
    }

    /** A JOIN or LEAVE of this worker. */
    int control(final PacketType type) {
        if (type == PacketType.JOIN) {
            join.wrap(txBuffer, 0, JoinPacket.LENGTH).initHeader(type).jobId(ctx.jobId()).workerId(ctx.workerId())
                .workerCount(ctx.workers()).elementsPerRound(ctx.elementsPerRound()).incarnation(ctx.incarnation());
            final int[] offers = ctx.rebuildOffers();
            if (offers != null) {
                join.flags(Flags.REBUILD);
            }
            for (int i = 0; i < JoinPacket.MAX_OFFERS; i++) {
                join.offer(i, offers != null && i < offers.length ? offers[i] : -1);
            }
            return JoinPacket.LENGTH;
        }
        header.wrap(txBuffer, 0, Packet.HEADER_LENGTH).initHeader(type).jobId(ctx.jobId()).workerId(ctx.workerId());
        return Packet.HEADER_LENGTH;
    }

    /** A CONFIG_REQUEST naming the epoch held. */
    int configRequest(final int knownEpoch) {
        header.wrap(txBuffer, 0, Packet.HEADER_LENGTH).initHeader(PacketType.CONFIG_REQUEST)
            .jobId(ctx.jobId()).workerId(ctx.workerId()).configEpoch(knownEpoch);
        return Packet.HEADER_LENGTH;
    }

    /** A DATA header of this worker's for step seq of {@code round}, chunk {@code chunk}, {@code n} elements; its length. */
    private int header(final StepLayout layout, final long seq, final int round, final int chunk, final int n, final long computeNs,
                       final int epoch) {
        final int length = DataPacket.length(n);
        data.wrap(txBuffer, 0, length)
            .initHeader(PacketType.DATA)
            .jobId(ctx.jobId())
            .workerId(ctx.workerId())
            .seq(seq)
            .round(round)
            .chunk(chunk)
            .poolIndex(layout.slot(seq))
            .shadowSet(layout.shadowSet(seq))
            .configEpoch(epoch)
            .computeTimeNs(computeNs)
            .elementCount(n);
        return length;
    }
}
