package io.serene.protocol;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The header every Serene packet starts with, as the base of one flyweight per packet body:
 * {@link DataPacket}, {@link ResultPacket}, {@link JoinPacket} (JOIN and JOIN_ACK), {@link ConfigPacket},
 * and {@link PacketHeader} for dispatch and the header-only packets. The {@code *_OFFSET} constants
 * here and in the subclasses are the wire specification (little-endian, as Aeron's; see docs/protocol.md). Little-endian lets both
 * ends move gradient values between packets and int arrays with plain memory copies.
 *
 * <pre>
 *   0       2       3       4               6               8
 *   +-------+-------+-------+---------------+---------------+
 *   | magic |version| type  |     flags     | element count |
 *   +-------+-------+-------+---------------+---------------+
 *   8                               12              14  15  16
 *   |             job id            |   worker id   |exp|set|
 *   16                                                      24
 *   |                     sequence (step) number            |
 *   24                              28                      32
 *   |             round             |         chunk         |
 *   32                              36              38      40
 *   |          config epoch         |   pool index  | status|
 *   40                                                      48
 *   |                     packet number                     |
 *   48                                                      56
 *   |                     MAC                               |
 *   56 ... type-specific body
 * </pre>
 *
 * The packet number and the MAC authenticate the packet ({@link PacketAuth}): a worker signs with
 * its own key, the switch with the job's reply key ({@link JobKeys}), and each receiver keeps a
 * replay window over its peer's packet numbers ({@link ReplayWindow}). A MAC of 0: a job without a
 * secret.
 *
 * The flyweight never allocates; it reads and writes at absolute positions so the wrapped
 * buffer's position and limit are left alone. Wrapping sets the buffer's byte order to
 * {@link #BYTE_ORDER}.
 */
public abstract class Packet<T extends Packet<T>> {
    public static final int MAGIC = 0x5345; // "SE"
    public static final int VERSION = 4;

    public static final int MAGIC_OFFSET = 0;
    public static final int VERSION_OFFSET = 2;
    public static final int TYPE_OFFSET = 3;
    public static final int FLAGS_OFFSET = 4;
    public static final int ELEMENT_COUNT_OFFSET = 6;
    public static final int JOB_ID_OFFSET = 8;
    public static final int WORKER_ID_OFFSET = 12;
    public static final int EXPONENT_OFFSET = 14;
    public static final int SHADOW_SET_OFFSET = 15;
    public static final int SEQ_OFFSET = 16;
    public static final int ROUND_OFFSET = 24;
    public static final int CHUNK_OFFSET = 28;
    public static final int CONFIG_EPOCH_OFFSET = 32;
    public static final int POOL_INDEX_OFFSET = 36;
    public static final int STATUS_OFFSET = 38;
    public static final int PACKET_NUMBER_OFFSET = 40;
    public static final int MAC_OFFSET = 48;
    public static final int HEADER_LENGTH = 56;

    /** Most bitmap words a RESULT or CONFIG packet may declare (65,536 workers). */
    public static final int MAX_BITMAP_WORDS = 1024;

    /** Exponent value meaning "no exponent carried". */
    public static final byte NO_EXPONENT = Byte.MIN_VALUE;
    /** The range of a chunk exponent (block floating point: |x| < 2^e), in DATA's exponent field and exponent steps. */
    public static final int MIN_EXPONENT = -126;
    public static final int MAX_EXPONENT = 127;

    /** Byte order of every multi-byte field on the wire. */
    public static final ByteOrder BYTE_ORDER = ByteOrder.LITTLE_ENDIAN;

    protected ByteBuffer buffer;
    protected int offset;
    protected int length;

    /** This flyweight, typed, so header setters chain into the body's. */
    protected abstract T self();

    /** A direct buffer of the given capacity in wire byte order, for composing packets. */
    public static ByteBuffer allocate(final int capacity) {
        return ByteBuffer.allocateDirect(capacity).order(BYTE_ORDER);
    }

    public final T wrap(final ByteBuffer buffer, final int offset, final int length) {
        buffer.order(BYTE_ORDER);
        this.buffer = buffer;
        this.offset = offset;
        this.length = length;
        return self();
    }

    public final ByteBuffer buffer() {
        return buffer;
    }

    public final int offset() {
        return offset;
    }

    public final int length() {
        return length;
    }

    /** Checks magic, version, type and that the body fits its type's layout; returns a {@link PacketCheck}. */
    public final PacketCheck check() {
        if (length < HEADER_LENGTH) {
            return PacketCheck.TRUNCATED;
        }
        if (magic() != MAGIC) {
            return PacketCheck.BAD_MAGIC;
        }
        if (version() != VERSION) {
            return PacketCheck.BAD_VERSION;
        }
        final PacketType type = PacketType.fromCode(typeCode());
        if (type == null) {
            return PacketCheck.BAD_TYPE;
        }
        switch (type) {
            case DATA:
                return fits(DataPacket.length(elementCount()));
            case RESULT: {
                if (length < ResultPacket.BITMAP_OFFSET) {
                    return PacketCheck.TRUNCATED;
                }
                final int words = buffer.getInt(offset + ResultPacket.BITMAP_WORDS_OFFSET);
                if (words < 0 || words > MAX_BITMAP_WORDS) {
                    return PacketCheck.BAD_LENGTH;
                }
                return fits(ResultPacket.length(words, elementCount()));
            }
            case JOIN:
                return fits(JoinPacket.LENGTH);
            case JOIN_ACK:
                return fits(JoinPacket.ACK_LENGTH);
            case CONFIG: {
                if (length < ConfigPacket.BITMAP_OFFSET) {
                    return PacketCheck.TRUNCATED;
                }
                final int words = buffer.getInt(offset + ConfigPacket.BITMAP_WORDS_OFFSET);
                if (words < 0 || words > MAX_BITMAP_WORDS) {
                    return PacketCheck.BAD_LENGTH;
                }
                return fits(ConfigPacket.length(words));
            }
            default:
                return fits(HEADER_LENGTH);
        }
    }

    private PacketCheck fits(final int expected) {
        if (length < expected) {
            return PacketCheck.TRUNCATED;
        }
        return length > expected ? PacketCheck.BAD_LENGTH : PacketCheck.OK;
    }

    /** Writes magic, version, type and zeroes the rest of the header. */
    public final T initHeader(final PacketType type) {
        for (int i = 0; i < HEADER_LENGTH; i += 8) {
            buffer.putLong(offset + i, 0L);
        }
        buffer.putShort(offset + MAGIC_OFFSET, (short) MAGIC);
        buffer.put(offset + VERSION_OFFSET, (byte) VERSION);
        buffer.put(offset + TYPE_OFFSET, (byte) type.code());
        return self();
    }

    public final int magic() {
        return buffer.getShort(offset + MAGIC_OFFSET) & 0xFFFF;
    }

    public final int version() {
        return buffer.get(offset + VERSION_OFFSET) & 0xFF;
    }

    public final int typeCode() {
        return buffer.get(offset + TYPE_OFFSET) & 0xFF;
    }

    public final PacketType type() {
        return PacketType.fromCode(typeCode());
    }

    public final int flags() {
        return buffer.getShort(offset + FLAGS_OFFSET) & 0xFFFF;
    }

    public final T flags(final int flags) {
        buffer.putShort(offset + FLAGS_OFFSET, (short) flags);
        return self();
    }

    public final boolean hasFlag(final int flag) {
        return (flags() & flag) != 0;
    }

    public final int elementCount() {
        return buffer.getShort(offset + ELEMENT_COUNT_OFFSET) & 0xFFFF;
    }

    public final T elementCount(final int count) {
        buffer.putShort(offset + ELEMENT_COUNT_OFFSET, (short) count);
        return self();
    }

    public final int jobId() {
        return buffer.getInt(offset + JOB_ID_OFFSET);
    }

    public final T jobId(final int jobId) {
        buffer.putInt(offset + JOB_ID_OFFSET, jobId);
        return self();
    }

    public final int workerId() {
        return buffer.getShort(offset + WORKER_ID_OFFSET) & 0xFFFF;
    }

    public final T workerId(final int workerId) {
        buffer.putShort(offset + WORKER_ID_OFFSET, (short) workerId);
        return self();
    }

    public final byte exponent() {
        return buffer.get(offset + EXPONENT_OFFSET);
    }

    public final T exponent(final byte exponent) {
        buffer.put(offset + EXPONENT_OFFSET, exponent);
        return self();
    }

    public final int shadowSet() {
        return buffer.get(offset + SHADOW_SET_OFFSET) & 0xFF;
    }

    public final T shadowSet(final int set) {
        buffer.put(offset + SHADOW_SET_OFFSET, (byte) set);
        return self();
    }

    public final long seq() {
        return buffer.getLong(offset + SEQ_OFFSET);
    }

    public final T seq(final long seq) {
        buffer.putLong(offset + SEQ_OFFSET, seq);
        return self();
    }

    public final int round() {
        return buffer.getInt(offset + ROUND_OFFSET);
    }

    public final T round(final int round) {
        buffer.putInt(offset + ROUND_OFFSET, round);
        return self();
    }

    public final int chunk() {
        return buffer.getInt(offset + CHUNK_OFFSET);
    }

    public final T chunk(final int chunk) {
        buffer.putInt(offset + CHUNK_OFFSET, chunk);
        return self();
    }

    public final int configEpoch() {
        return buffer.getInt(offset + CONFIG_EPOCH_OFFSET);
    }

    public final T configEpoch(final int epoch) {
        buffer.putInt(offset + CONFIG_EPOCH_OFFSET, epoch);
        return self();
    }

    public final int poolIndex() {
        return buffer.getShort(offset + POOL_INDEX_OFFSET) & 0xFFFF;
    }

    public final T poolIndex(final int index) {
        buffer.putShort(offset + POOL_INDEX_OFFSET, (short) index);
        return self();
    }

    /** The sender's number for this packet, counting up (a retransmission gets a new one): what replay windows check. */
    public final long packetNumber() {
        return buffer.getLong(offset + PACKET_NUMBER_OFFSET);
    }

    public final T packetNumber(final long number) {
        buffer.putLong(offset + PACKET_NUMBER_OFFSET, number);
        return self();
    }

    /** The packet's MAC ({@link PacketAuth}; {@link PacketAuth#UNSIGNED}: a job without a secret). */
    public final long mac() {
        return buffer.getLong(offset + MAC_OFFSET);
    }

    public final T mac(final long mac) {
        buffer.putLong(offset + MAC_OFFSET, mac);
        return self();
    }

    public final int status() {
        return buffer.getShort(offset + STATUS_OFFSET) & 0xFFFF;
    }

    public final T status(final int status) {
        buffer.putShort(offset + STATUS_OFFSET, (short) status);
        return self();
    }

    @Override
    public final String toString() {
        if (buffer == null || length < HEADER_LENGTH) {
            return getClass().getSimpleName() + "[length=" + length + "]";
        }
        return getClass().getSimpleName() + "[type=" + type() + ", job=" + jobId() + ", worker=" + workerId()
            + ", seq=" + seq() + ", round=" + round() + ", chunk=" + chunk() + ", set=" + shadowSet() + ", exp=" + exponent()
            + ", n=" + elementCount() + ", flags=" + flags() + ", status=" + status() + "]";
    }
}
