package io.serene.protocol;

/**
 * DATA, worker to switch: one step of a worker's stream. The header's exponent is the block
 * exponent of the chunk ahead; the body is {@code element count} int32 values (gradients in fixed
 * point, or with {@link Flags#EXPONENTS} the chunks' local exponents). The status field carries the
 * sender's compute time.
 */
public final class DataPacket extends Packet<DataPacket> {
    /** Body: {@code element count} int32 values. */
    public static final int VALUES_OFFSET = HEADER_LENGTH;

    /** Unit of the compute time a DATA packet reports in its status field: 100 microseconds. */
    public static final long COMPUTE_TIME_UNIT_NS = 100_000L;

    /** Length of a DATA packet carrying {@code elementCount} values. */
    public static int length(final int elementCount) {
        return VALUES_OFFSET + 4 * elementCount;
    }

    @Override
    protected DataPacket self() {
        return this;
    }

    /**
     * The sender's compute time for the packet's round, reported in the status field in units of
     * {@link #COMPUTE_TIME_UNIT_NS} (0: not reported; saturates at 65535, 6.5 s), for the switch's
     * per-worker telemetry.
     */
    public long computeTimeNs() {
        return status() * COMPUTE_TIME_UNIT_NS;
    }

    /** Sets the reported compute time (rounded up to a unit, so a reported time is never 0; saturating). */
    public DataPacket computeTimeNs(final long ns) {
        if (ns <= 0) {
            return status(0);
        }
        return status((int) Math.min(0xFFFF, (ns + COMPUTE_TIME_UNIT_NS - 1) / COMPUTE_TIME_UNIT_NS));
    }

    public int value(final int index) {
        return buffer.getInt(offset + VALUES_OFFSET + 4 * index);
    }

    public DataPacket value(final int index, final int value) {
        buffer.putInt(offset + VALUES_OFFSET + 4 * index, value);
        return this;
    }
}
