package io.serene.protocol;

/** Packet types on the wire; the code is the byte at {@link Packet#TYPE_OFFSET}. */
public enum PacketType {
    /** Worker to switch: one step of a worker's stream (an exponent, or a chunk of values). */
    DATA(1),
    /** Switch to workers: the aggregate of one step, multicast, or unicast on retransmission. */
    RESULT(2),
    /** Worker to switch: join a job (creating it on first join) with its shape. */
    JOIN(3),
    /** Switch to worker: join accepted (status OK) or refused (status names why). */
    JOIN_ACK(4),
    /** Worker to switch: leave the job; the job is freed when all workers left. */
    LEAVE(5),
    /** Switch to worker: leave acknowledged. */
    LEAVE_ACK(6),
    /** Switch to worker: a DATA packet was refused; status names why. */
    NACK(7),
    /** Switch to workers: one entry of the job's sync-config table (epoch, entry index and count in the header). */
    CONFIG(8),
    /** Worker to switch: send me the job's config table (my epoch is in the header). */
    CONFIG_REQUEST(9);

    private static final PacketType[] BY_CODE = new PacketType[10];

    static {
        for (final PacketType type : values()) {
            BY_CODE[type.code] = type;
        }
    }

    private final int code;

    PacketType(final int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    /** The type with this code, or null when the code is unknown. */
    public static PacketType fromCode(final int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }
}
