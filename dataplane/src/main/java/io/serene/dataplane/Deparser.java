package io.serene.dataplane;

import io.serene.protocol.ConfigPacket;
import io.serene.protocol.Flags;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.ResultPacket;
import io.serene.protocol.Status;
import io.serene.protocol.sync.StepLayout;

import java.nio.ByteBuffer;
import java.nio.IntBuffer;

/**
 * Composes the switch's outgoing packets into its one transmit buffer: results (multicast or to
 * one port), NACKs, JOIN_ACKs, CONFIG entries and LEAVE_ACKs. Each method returns the length to
 * send from {@link #buffer()}; the caller sends it before composing the next.
 */
final class Deparser {
    private final PacketHeader out = new PacketHeader();
    private final ResultPacket result = new ResultPacket();
    private final JoinPacket join = new JoinPacket();
    private final ConfigPacket config = new ConfigPacket();
    private final ByteBuffer txBuffer;
    private final IntBuffer txInts;
    private final int words;
    private final int chunkElements;
    private final int poolSize;

    Deparser(final int words, final int chunkElements, final int poolSize) {
        this.words = words;
        this.chunkElements = chunkElements;
        this.poolSize = poolSize;
        txBuffer = Packet.allocate(Math.max(ResultPacket.length(words, chunkElements), ConfigPacket.length(words)));
        txInts = txBuffer.asIntBuffer();
    }

    long bytes() {
        return txBuffer.capacity();
    }

    ByteBuffer buffer() {
        return txBuffer;
    }

    /** The RESULT of a slot: its sums, contributors, R, the epoch, and the loss-recovery hint (the lowest open step). */
    int result(final JobRegisters jobs, final ReleaseRing releases, final SlotPool slots, final int j, final int idx,
               final int extraFlags) {
        final int n = slots.length[idx];
        final int length = ResultPacket.length(words, n);
        final long seq = slots.seq[idx];
        result.wrap(txBuffer, 0, length)
            .initHeader(PacketType.RESULT)
            .flags((slots.flags[idx] & ~SlotPool.OUT_OF_SCALE) | extraFlags)
            .elementCount(n)
            .jobId(jobs.id[j])
            .exponent(slots.exponent[idx])
            .shadowSet(StepLayout.shadowSet(seq, poolSize))
            .seq(seq)
            .round(slots.round[idx])
            .chunk(slots.chunk[idx])
            .poolIndex(StepLayout.slot(seq, poolSize))
            .contributorCount(slots.count[idx])
            .releasedRound(releases.releasedRound[j])
            .configEpoch(jobs.epoch[j])
            .bitmapWords(words);
        for (int w = 0; w < words; w++) {
            result.bitmapWord(w, slots.bitmap[idx * words + w]);
        }
        // the loss-recovery hint: the job's lowest open step and who has contributed to it so far
        final long open = jobs.openSeq[j];
        result.openSeq(open);
        final int openIdx = slots.index(j, open);
        final boolean seen = slots.seq[openIdx] == open;
        for (int w = 0; w < words; w++) {
            result.openBitmapWord(w, seen ? slots.bitmap[openIdx * words + w] : 0L);
        }
        // the values start at a multiple of 4, so the int view can copy them in bulk
        txInts.put(ResultPacket.valuesOffset(words) >> 2, slots.sums, idx * chunkElements, n);
        return length;
    }

    /** A NACK of the DATA packet {@code in}. */
    int nack(final Packet<?> in, final Status status) {
        out.wrap(txBuffer, 0, Packet.HEADER_LENGTH)
            .initHeader(PacketType.NACK)
            .jobId(in.jobId())
            .workerId(in.workerId())
            .seq(in.seq())
            .round(in.round())
            .chunk(in.chunk())
            .poolIndex(in.poolIndex())
            .shadowSet(in.shadowSet())
            .status(status.code());
        return Packet.HEADER_LENGTH;
    }

    /**
     * A JOIN_ACK to worker {@code worker} of job {@code jobId}, with the switch's limits and the job's first round; its seq field
     * echoes {@code joinNumber}, the packet number of the worker's JOIN it answers (proof to the worker that it is fresh).
     */
    int joinAck(final int jobId, final int worker, final Status status, final int workers, final int elements,
                final int ring, final int maxWorkers, final int firstRound, final long joinNumber) {
        join.wrap(txBuffer, 0, JoinPacket.ACK_LENGTH)
            .initHeader(PacketType.JOIN_ACK)
            .jobId(jobId)
            .workerId(worker)
            .round(firstRound)
            .seq(joinNumber)
            .status(status.code())
            .workerCount(workers)
            .elementsPerRound(elements)
            .poolSize(poolSize)
            .chunkElements(chunkElements)
            .roundRing(ring)
            .maxWorkers(maxWorkers);
        return JoinPacket.ACK_LENGTH;
    }

    /** Entry {@code index} of {@code entries} of a group's config list (list l, physical entry e). */
    int config(final ConfigTable configs, final GroupTable groups, final int jobId, final int epoch, final int l,
               final int e, final int index, final int entries) {
        final int length = ConfigPacket.length(words);
        final int m = l * words;
        config.wrap(txBuffer, 0, length)
            .initHeader(PacketType.CONFIG)
            .jobId(jobId)
            .configEpoch(epoch)
            .chunk(index)
            .elementCount(entries)
            .firstRound(configs.firstRound(l, e))
            .bound(configs.bound(l, e))
            .quorum(configs.quorum(l, e, groups.members, m))
            .lateMode(configs.lateMode(l, e).wireCode())
            .timeoutNs(configs.timeoutNs(l, e))
            .bitmapWords(words);
        if (configs.busy(l, e)) {
            config.flags(Flags.BUSY);
        }
        for (int w = 0; w < words; w++) {
            config.requiredWord(w, configs.requiredWord(l, e, w, groups.members, m));
        }
        return length;
    }

    /** The LEAVE_ACK to the LEAVE {@code in}. */
    int leaveAck(final Packet<?> in) {
        out.wrap(txBuffer, 0, Packet.HEADER_LENGTH)
            .initHeader(PacketType.LEAVE_ACK)
            .jobId(in.jobId())
            .workerId(in.workerId());
        return Packet.HEADER_LENGTH;
    }
}
