package io.serene.protocol;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Flyweight over one Serene packet in a {@link ByteBuffer}; the {@code *_OFFSET} constants are the
 * wire specification (little-endian, as Aeron's; see docs/protocol.md). Little-endian lets both
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
 *   40 ... type-specific body
 * </pre>
 *
 * The flyweight never allocates; it reads and writes at absolute positions so the wrapped
 * buffer's position and limit are left alone. Wrapping sets the buffer's byte order to
 * {@link #BYTE_ORDER}.
 */
public final class PacketFlyweight {
    public static final int MAGIC = 0x5345; // "SE"
    public static final int VERSION = 1;

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
    public static final int HEADER_LENGTH = 40;

    /** DATA body: {@code element count} big-endian int32 values. */
    public static final int DATA_VALUES_OFFSET = HEADER_LENGTH;

    /**
     * RESULT body: contributor count, highest fully released round R, bitmap words W, 4 reserved
     * bytes, the job's lowest unreleased step ("open" seq), the chunk's contributor bitmap, the open
     * step's contributors so far (a loss-recovery hint), then the values.
     */
    public static final int RESULT_CONTRIBUTOR_COUNT_OFFSET = HEADER_LENGTH;
    public static final int RESULT_RELEASED_ROUND_OFFSET = HEADER_LENGTH + 4;
    public static final int RESULT_BITMAP_WORDS_OFFSET = HEADER_LENGTH + 8;
    public static final int RESULT_RESERVED_OFFSET = HEADER_LENGTH + 12;
    public static final int RESULT_OPEN_SEQ_OFFSET = HEADER_LENGTH + 16;
    public static final int RESULT_BITMAP_OFFSET = HEADER_LENGTH + 24;

    /** JOIN and JOIN_ACK body: the job's shape; JOIN_ACK adds the switch's pool parameters. */
    public static final int JOIN_WORKER_COUNT_OFFSET = HEADER_LENGTH;
    public static final int JOIN_ELEMENTS_PER_ROUND_OFFSET = HEADER_LENGTH + 4;
    public static final int JOIN_LENGTH = HEADER_LENGTH + 8;
    public static final int ACK_POOL_SIZE_OFFSET = HEADER_LENGTH + 8;
    public static final int ACK_CHUNK_ELEMENTS_OFFSET = HEADER_LENGTH + 12;
    public static final int ACK_ROUND_RING_OFFSET = HEADER_LENGTH + 16;
    public static final int ACK_MAX_WORKERS_OFFSET = HEADER_LENGTH + 20;
    public static final int JOIN_ACK_LENGTH = HEADER_LENGTH + 24;

    /**
     * CONFIG body: the entry's first round, bound, quorum, late mode (0 drop, 1 fold), timeout in ns,
     * bitmap words W, 4 reserved bytes, the required-workers bitmap. The header's config epoch is the
     * table's epoch, its chunk field the entry's index and its element count the number of entries.
     */
    public static final int CONFIG_FIRST_ROUND_OFFSET = HEADER_LENGTH;
    public static final int CONFIG_BOUND_OFFSET = HEADER_LENGTH + 4;
    public static final int CONFIG_QUORUM_OFFSET = HEADER_LENGTH + 8;
    public static final int CONFIG_LATE_MODE_OFFSET = HEADER_LENGTH + 12;
    public static final int CONFIG_TIMEOUT_OFFSET = HEADER_LENGTH + 16;
    public static final int CONFIG_BITMAP_WORDS_OFFSET = HEADER_LENGTH + 24;
    public static final int CONFIG_BITMAP_OFFSET = HEADER_LENGTH + 32;

    /** Exponent value meaning "no exponent carried". */
    public static final byte NO_EXPONENT = Byte.MIN_VALUE;

    /** Byte order of every multi-byte field on the wire. */
    public static final ByteOrder BYTE_ORDER = ByteOrder.LITTLE_ENDIAN;

    private ByteBuffer buffer;
    private int offset;
    private int length;

    /** A direct buffer of the given capacity in wire byte order, for composing packets. */
    public static ByteBuffer allocate(final int capacity) {
        return ByteBuffer.allocateDirect(capacity).order(BYTE_ORDER);
    }

    public PacketFlyweight wrap(final ByteBuffer buffer, final int offset, final int length) {
        buffer.order(BYTE_ORDER);
        this.buffer = buffer;
        this.offset = offset;
        this.length = length;
        return this;
    }

    public ByteBuffer buffer() {
        return buffer;
    }

    public int offset() {
        return offset;
    }

    public int length() {
        return length;
    }

    /** Checks magic, version, type and that the body fits; returns a {@link PacketCheck}. */
    public PacketCheck check() {
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
        final int expected;
        switch (type) {
            case DATA:
                expected = DATA_VALUES_OFFSET + 4 * elementCount();
                break;
            case RESULT:
                if (length < RESULT_BITMAP_OFFSET) {
                    return PacketCheck.TRUNCATED;
                }
                final int words = bitmapWords();
                if (words < 0 || words > 1024) {
                    return PacketCheck.BAD_LENGTH;
                }
                expected = resultLength(words, elementCount());
                break;
            case JOIN:
                expected = JOIN_LENGTH;
                break;
            case JOIN_ACK:
                expected = JOIN_ACK_LENGTH;
                break;
            case CONFIG: {
                if (length < CONFIG_BITMAP_OFFSET) {
                    return PacketCheck.TRUNCATED;
                }
                final int configWords = configBitmapWords();
                if (configWords < 0 || configWords > 1024) {
                    return PacketCheck.BAD_LENGTH;
                }
                expected = configLength(configWords);
                break;
            }
            default:
                expected = HEADER_LENGTH;
                break;
        }
        if (length < expected) {
            return PacketCheck.TRUNCATED;
        }
        if (length > expected) {
            return PacketCheck.BAD_LENGTH;
        }
        return PacketCheck.OK;
    }

    /** Writes magic, version, type and zeroes the rest of the header. */
    public PacketFlyweight initHeader(final PacketType type) {
        for (int i = 0; i < HEADER_LENGTH; i += 8) {
            buffer.putLong(offset + i, 0L);
        }
        buffer.putShort(offset + MAGIC_OFFSET, (short) MAGIC);
        buffer.put(offset + VERSION_OFFSET, (byte) VERSION);
        buffer.put(offset + TYPE_OFFSET, (byte) type.code());
        return this;
    }

    public int magic() {
        return buffer.getShort(offset + MAGIC_OFFSET) & 0xFFFF;
    }

    public int version() {
        return buffer.get(offset + VERSION_OFFSET) & 0xFF;
    }

    public int typeCode() {
        return buffer.get(offset + TYPE_OFFSET) & 0xFF;
    }

    public PacketType type() {
        return PacketType.fromCode(typeCode());
    }

    public int flags() {
        return buffer.getShort(offset + FLAGS_OFFSET) & 0xFFFF;
    }

    public PacketFlyweight flags(final int flags) {
        buffer.putShort(offset + FLAGS_OFFSET, (short) flags);
        return this;
    }

    public boolean hasFlag(final int flag) {
        return (flags() & flag) != 0;
    }

    public int elementCount() {
        return buffer.getShort(offset + ELEMENT_COUNT_OFFSET) & 0xFFFF;
    }

    public PacketFlyweight elementCount(final int count) {
        buffer.putShort(offset + ELEMENT_COUNT_OFFSET, (short) count);
        return this;
    }

    public int jobId() {
        return buffer.getInt(offset + JOB_ID_OFFSET);
    }

    public PacketFlyweight jobId(final int jobId) {
        buffer.putInt(offset + JOB_ID_OFFSET, jobId);
        return this;
    }

    public int workerId() {
        return buffer.getShort(offset + WORKER_ID_OFFSET) & 0xFFFF;
    }

    public PacketFlyweight workerId(final int workerId) {
        buffer.putShort(offset + WORKER_ID_OFFSET, (short) workerId);
        return this;
    }

    public byte exponent() {
        return buffer.get(offset + EXPONENT_OFFSET);
    }

    public PacketFlyweight exponent(final byte exponent) {
        buffer.put(offset + EXPONENT_OFFSET, exponent);
        return this;
    }

    public int shadowSet() {
        return buffer.get(offset + SHADOW_SET_OFFSET) & 0xFF;
    }

    public PacketFlyweight shadowSet(final int set) {
        buffer.put(offset + SHADOW_SET_OFFSET, (byte) set);
        return this;
    }

    public long seq() {
        return buffer.getLong(offset + SEQ_OFFSET);
    }

    public PacketFlyweight seq(final long seq) {
        buffer.putLong(offset + SEQ_OFFSET, seq);
        return this;
    }

    public int round() {
        return buffer.getInt(offset + ROUND_OFFSET);
    }

    public PacketFlyweight round(final int round) {
        buffer.putInt(offset + ROUND_OFFSET, round);
        return this;
    }

    public int chunk() {
        return buffer.getInt(offset + CHUNK_OFFSET);
    }

    public PacketFlyweight chunk(final int chunk) {
        buffer.putInt(offset + CHUNK_OFFSET, chunk);
        return this;
    }

    public int configEpoch() {
        return buffer.getInt(offset + CONFIG_EPOCH_OFFSET);
    }

    public PacketFlyweight configEpoch(final int epoch) {
        buffer.putInt(offset + CONFIG_EPOCH_OFFSET, epoch);
        return this;
    }

    public int poolIndex() {
        return buffer.getShort(offset + POOL_INDEX_OFFSET) & 0xFFFF;
    }

    public PacketFlyweight poolIndex(final int index) {
        buffer.putShort(offset + POOL_INDEX_OFFSET, (short) index);
        return this;
    }

    public int status() {
        return buffer.getShort(offset + STATUS_OFFSET) & 0xFFFF;
    }

    public PacketFlyweight status(final int status) {
        buffer.putShort(offset + STATUS_OFFSET, (short) status);
        return this;
    }

    // ---- DATA ----

    /** Unit of the compute time a DATA packet reports in its status field: 100 microseconds. */
    public static final long COMPUTE_TIME_UNIT_NS = 100_000L;

    /**
     * DATA: the sender's compute time for the packet's round, reported in the status field in units
     * of {@link #COMPUTE_TIME_UNIT_NS} (0: not reported; saturates at 65535, 6.5 s), for the
     * switch's per-worker telemetry.
     */
    public long computeTimeNs() {
        return status() * COMPUTE_TIME_UNIT_NS;
    }

    /** Sets the reported compute time (rounded up to a unit, so a reported time is never 0; saturating). */
    public PacketFlyweight computeTimeNs(final long ns) {
        if (ns <= 0) {
            return status(0);
        }
        return status((int) Math.min(0xFFFF, (ns + COMPUTE_TIME_UNIT_NS - 1) / COMPUTE_TIME_UNIT_NS));
    }

    public int dataValue(final int index) {
        return buffer.getInt(offset + DATA_VALUES_OFFSET + 4 * index);
    }

    public PacketFlyweight dataValue(final int index, final int value) {
        buffer.putInt(offset + DATA_VALUES_OFFSET + 4 * index, value);
        return this;
    }

    public static int dataLength(final int elementCount) {
        return DATA_VALUES_OFFSET + 4 * elementCount;
    }

    // ---- RESULT ----

    public int contributorCount() {
        return buffer.getInt(offset + RESULT_CONTRIBUTOR_COUNT_OFFSET);
    }

    public PacketFlyweight contributorCount(final int count) {
        buffer.putInt(offset + RESULT_CONTRIBUTOR_COUNT_OFFSET, count);
        return this;
    }

    public int releasedRound() {
        return buffer.getInt(offset + RESULT_RELEASED_ROUND_OFFSET);
    }

    public PacketFlyweight releasedRound(final int round) {
        buffer.putInt(offset + RESULT_RELEASED_ROUND_OFFSET, round);
        return this;
    }

    public int bitmapWords() {
        return buffer.getInt(offset + RESULT_BITMAP_WORDS_OFFSET);
    }

    /** Sets the bitmap word count (and zeroes the reserved field after it). */
    public PacketFlyweight bitmapWords(final int words) {
        buffer.putInt(offset + RESULT_BITMAP_WORDS_OFFSET, words);
        buffer.putInt(offset + RESULT_RESERVED_OFFSET, 0);
        return this;
    }

    public long bitmapWord(final int index) {
        return buffer.getLong(offset + RESULT_BITMAP_OFFSET + 8 * index);
    }

    public PacketFlyweight bitmapWord(final int index, final long word) {
        buffer.putLong(offset + RESULT_BITMAP_OFFSET + 8 * index, word);
        return this;
    }

    public long openSeq() {
        return buffer.getLong(offset + RESULT_OPEN_SEQ_OFFSET);
    }

    public PacketFlyweight openSeq(final long seq) {
        buffer.putLong(offset + RESULT_OPEN_SEQ_OFFSET, seq);
        return this;
    }

    /** Word i of the open step's contributors so far; needs {@link #bitmapWords()}. */
    public long openBitmapWord(final int index) {
        return buffer.getLong(offset + RESULT_BITMAP_OFFSET + 8 * (bitmapWords() + index));
    }

    public PacketFlyweight openBitmapWord(final int index, final long word) {
        buffer.putLong(offset + RESULT_BITMAP_OFFSET + 8 * (bitmapWords() + index), word);
        return this;
    }

    /** Offset (relative to the packet) of the first result value; needs {@link #bitmapWords()}. */
    public int resultValuesOffset() {
        return RESULT_BITMAP_OFFSET + 16 * bitmapWords();
    }

    public int resultValue(final int index) {
        return buffer.getInt(offset + resultValuesOffset() + 4 * index);
    }

    public static int resultLength(final int bitmapWords, final int elementCount) {
        return RESULT_BITMAP_OFFSET + 16 * bitmapWords + 4 * elementCount;
    }

    // ---- JOIN / JOIN_ACK ----

    public int joinWorkerCount() {
        return buffer.getInt(offset + JOIN_WORKER_COUNT_OFFSET);
    }

    public PacketFlyweight joinWorkerCount(final int count) {
        buffer.putInt(offset + JOIN_WORKER_COUNT_OFFSET, count);
        return this;
    }

    public int joinElementsPerRound() {
        return buffer.getInt(offset + JOIN_ELEMENTS_PER_ROUND_OFFSET);
    }

    public PacketFlyweight joinElementsPerRound(final int elements) {
        buffer.putInt(offset + JOIN_ELEMENTS_PER_ROUND_OFFSET, elements);
        return this;
    }

    public int ackPoolSize() {
        return buffer.getInt(offset + ACK_POOL_SIZE_OFFSET);
    }

    public PacketFlyweight ackPoolSize(final int size) {
        buffer.putInt(offset + ACK_POOL_SIZE_OFFSET, size);
        return this;
    }

    public int ackChunkElements() {
        return buffer.getInt(offset + ACK_CHUNK_ELEMENTS_OFFSET);
    }

    public PacketFlyweight ackChunkElements(final int elements) {
        buffer.putInt(offset + ACK_CHUNK_ELEMENTS_OFFSET, elements);
        return this;
    }

    public int ackRoundRing() {
        return buffer.getInt(offset + ACK_ROUND_RING_OFFSET);
    }

    public PacketFlyweight ackRoundRing(final int ring) {
        buffer.putInt(offset + ACK_ROUND_RING_OFFSET, ring);
        return this;
    }

    public int ackMaxWorkers() {
        return buffer.getInt(offset + ACK_MAX_WORKERS_OFFSET);
    }

    public PacketFlyweight ackMaxWorkers(final int workers) {
        buffer.putInt(offset + ACK_MAX_WORKERS_OFFSET, workers);
        return this;
    }

    // ---- CONFIG ----

    public static int configLength(final int bitmapWords) {
        return CONFIG_BITMAP_OFFSET + 8 * bitmapWords;
    }

    public int configFirstRound() {
        return buffer.getInt(offset + CONFIG_FIRST_ROUND_OFFSET);
    }

    public PacketFlyweight configFirstRound(final int round) {
        buffer.putInt(offset + CONFIG_FIRST_ROUND_OFFSET, round);
        return this;
    }

    public int configBound() {
        return buffer.getInt(offset + CONFIG_BOUND_OFFSET);
    }

    public PacketFlyweight configBound(final int bound) {
        buffer.putInt(offset + CONFIG_BOUND_OFFSET, bound);
        return this;
    }

    public int configQuorum() {
        return buffer.getInt(offset + CONFIG_QUORUM_OFFSET);
    }

    public PacketFlyweight configQuorum(final int quorum) {
        buffer.putInt(offset + CONFIG_QUORUM_OFFSET, quorum);
        return this;
    }

    public int configLateMode() {
        return buffer.getInt(offset + CONFIG_LATE_MODE_OFFSET);
    }

    public PacketFlyweight configLateMode(final int mode) {
        buffer.putInt(offset + CONFIG_LATE_MODE_OFFSET, mode);
        return this;
    }

    public long configTimeoutNs() {
        return buffer.getLong(offset + CONFIG_TIMEOUT_OFFSET);
    }

    public PacketFlyweight configTimeoutNs(final long ns) {
        buffer.putLong(offset + CONFIG_TIMEOUT_OFFSET, ns);
        return this;
    }

    public int configBitmapWords() {
        return buffer.getInt(offset + CONFIG_BITMAP_WORDS_OFFSET);
    }

    /** Sets the required bitmap's word count (and zeroes the reserved field after it). */
    public PacketFlyweight configBitmapWords(final int words) {
        buffer.putInt(offset + CONFIG_BITMAP_WORDS_OFFSET, words);
        buffer.putInt(offset + CONFIG_BITMAP_WORDS_OFFSET + 4, 0);
        return this;
    }

    public long configRequiredWord(final int index) {
        return buffer.getLong(offset + CONFIG_BITMAP_OFFSET + 8 * index);
    }

    public PacketFlyweight configRequiredWord(final int index, final long word) {
        buffer.putLong(offset + CONFIG_BITMAP_OFFSET + 8 * index, word);
        return this;
    }

    @Override
    public String toString() {
        if (buffer == null || length < HEADER_LENGTH) {
            return "Packet[length=" + length + "]";
        }
        return "Packet[type=" + type() + ", job=" + jobId() + ", worker=" + workerId() + ", seq=" + seq()
            + ", round=" + round() + ", chunk=" + chunk() + ", set=" + shadowSet() + ", exp=" + exponent()
            + ", n=" + elementCount() + ", flags=" + flags() + ", status=" + status() + "]";
    }
}
