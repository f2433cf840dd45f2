package io.serene.dataplane;

import io.serene.protocol.Counters;
import io.serene.protocol.DataPacket;
import io.serene.protocol.Flags;

import java.nio.ByteBuffer;
import java.nio.IntBuffer;

/**
 * Adds one DATA packet's contribution into its slot: the contributor bit and count, the maximum
 * look-ahead exponent, and the payload (exponent maxima, or int32 values added plainly while they
 * lie within the job's scale and with saturation once one did not). The packet's values are
 * copied in bulk into one preallocated scratch array.
 */
final class Aggregator {
    private final Counters<SwitchCounter> counters;
    private final JobRegisters jobs;
    private final SlotPool slots;
    private final int words;
    private final int[] scratch;
    private ByteBuffer viewSource;
    private IntBuffer view;

    Aggregator(final Counters<SwitchCounter> counters, final JobRegisters jobs, final SlotPool slots, final int words,
               final int chunkElements) {
        this.counters = counters;
        this.jobs = jobs;
        this.slots = slots;
        this.words = words;
        this.scratch = new int[chunkElements];
    }

    long bytes() {
        return 4L * scratch.length;
    }

    void add(final DataPacket in, final int j, final int idx, final int worker, final int n, final int payload) {
        counters.increment(SwitchCounter.CONTRIBUTIONS);
        slots.bitmap[idx * words + (worker >>> 6)] |= 1L << (worker & 63);
        slots.count[idx]++;
        final byte exponent = in.exponent();
        if (exponent != DataPacket.NO_EXPONENT && exponent > slots.exponent[idx]) {
            slots.exponent[idx] = exponent;
        }
        int flags = slots.flags[idx];
        if (in.hasFlag(Flags.SATURATED)) {
            flags |= Flags.SATURATED;
        }
        if (payload == Flags.EXPONENTS) {
            slots.maxInto(idx, readValues(in, n), n);
        } else if (payload == Flags.VALUES) {
            counters.increment(SwitchCounter.VALUE_CONTRIBUTIONS);
            final int[] contribution = readValues(in, n);
            if (SlotPool.outOfScale(contribution, n, jobs.valueLimit[j])) {
                flags |= SlotPool.OUT_OF_SCALE;
            }
            if ((flags & SlotPool.OUT_OF_SCALE) == 0) {
                slots.add(idx, contribution, n);
            } else if (slots.saturatingAdd(idx, contribution, n)) {
                counters.increment(SwitchCounter.OVERFLOWS);
                flags |= Flags.SATURATED;
            }
        }
        slots.flags[idx] = (byte) flags;
    }

    /**
     * Whether a DATA's exponents lie in the block floating point range: its look-ahead exponent
     * field (or none), and an exponent step's values; checked before the packet touches a slot.
     */
    boolean exponentsInRange(final DataPacket in, final int n, final int payload) {
        final byte exponent = in.exponent();
        if (exponent != DataPacket.NO_EXPONENT && exponent < DataPacket.MIN_EXPONENT) {
            return false;
        }
        if (payload != Flags.EXPONENTS) {
            return true;
        }
        final int[] values = readValues(in, n);
        for (int i = 0; i < n; i++) {
            if (values[i] < DataPacket.MIN_EXPONENT || values[i] > DataPacket.MAX_EXPONENT) {
                return false;
            }
        }
        return true;
    }

    /** The DATA packet's values, copied in bulk into a scratch array (the packet lives in the transport's buffer). */
    private int[] readValues(final DataPacket in, final int n) {
        final ByteBuffer buffer = in.buffer();
        final int at = in.offset() + DataPacket.VALUES_OFFSET;
        if ((at & 3) == 0) {
            if (buffer != viewSource) {
                viewSource = buffer;
                view = buffer.duplicate().order(DataPacket.BYTE_ORDER).clear().asIntBuffer();
            }
            view.get(at >> 2, scratch, 0, n);
        } else {
            for (int i = 0; i < n; i++) {
                scratch[i] = buffer.getInt(at + 4 * i);
            }
        }
        return scratch;
    }
}
