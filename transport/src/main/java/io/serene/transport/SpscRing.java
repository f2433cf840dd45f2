package io.serene.transport;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.MessageHandler;

/**
 * A one-to-one ring of typed messages in shared memory whose reader never writes the bytes it
 * consumed. Agrona's rings zero every byte the reader passes, so each message crosses between
 * the two cores twice more (the reader's zeroing, then the writer's next lap); here the writer
 * zeroes only the one header word after its message before publishing it, which keeps the
 * invariant the reader relies on: the header at the writer's position is always zero.
 * <p>
 * Layout: {@code capacity} bytes of records (a power of two), then a trailer of two cache-line
 * padded positions, the reader's (head) and the writer's (tail). A record is an 8-byte header,
 * its length (header included) written last with release semantics and its type, then the
 * payload, padded to 8 bytes. A record that would cross the end is preceded by a padding record
 * to the end. Positions only grow; a record's index is its position modulo the capacity.
 * <p>
 * One thread writes and one reads, each its own position; a writer that finds too little room
 * returns false (the caller counts a drop), as Agrona's rings do. A reader that meets a header no
 * writer of this class could have written (a corrupt or foreign file) stops reading the ring for
 * good and reports it through {@link #corrupt()}: it never reads outside the ring.
 */
final class SpscRing {
    static final int HEADER_LENGTH = 8;
    static final int ALIGNMENT = 8;
    /** The trailer: the head's cache lines, then the tail's (128 bytes each against adjacent-line prefetch). */
    static final int TRAILER_LENGTH = 256;
    private static final int HEAD_OFFSET = 0;
    private static final int TAIL_OFFSET = 128;
    private static final int PADDING_TYPE = -1;

    private final AtomicBuffer buffer;
    private final int capacity;
    private final int mask;
    private final int headIndex;
    private final int tailIndex;
    private final int maxMessageLength;
    /** The writer's view of the head, refreshed only when the ring looks full. */
    private long headCache;
    private boolean corrupt;

    /** Wraps a buffer of {@code capacity + TRAILER_LENGTH} bytes, zero when it was created. */
    SpscRing(final AtomicBuffer buffer) {
        this.buffer = buffer;
        this.capacity = buffer.capacity() - TRAILER_LENGTH;
        if (capacity < 1024 || Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("a ring's capacity must be a power of two of at least 1 KiB, was "
                + capacity + " (buffer " + buffer.capacity() + " bytes with a " + TRAILER_LENGTH + "-byte trailer)");
        }
        buffer.verifyAlignment();
        this.mask = capacity - 1;
        this.headIndex = capacity + HEAD_OFFSET;
        this.tailIndex = capacity + TAIL_OFFSET;
        this.maxMessageLength = capacity / 8;
        this.headCache = buffer.getLongVolatile(headIndex);
    }

    static int fileBytes(final int capacity) {
        return capacity + TRAILER_LENGTH;
    }

    int capacity() {
        return capacity;
    }

    /** The longest message the ring takes (an eighth of it). */
    int maxMessageLength() {
        return maxMessageLength;
    }

    /** The reader's position: every record before it has been read (a volatile read, for the writer). */
    long readerPosition() {
        return buffer.getLongVolatile(headIndex);
    }

    /** The writer's position: just past its last record (the writer's own, read on its thread). */
    long writerPosition() {
        return buffer.getLong(tailIndex);
    }

    /** True once the reader met a header no writer of this ring wrote; it reads nothing more. */
    boolean corrupt() {
        return corrupt;
    }

    /**
     * Copies a message into the ring; false (nothing written) if there is no room for it now.
     * Only one thread may write.
     */
    boolean write(final int type, final DirectBuffer src, final int offset, final int length) {
        if (type == PADDING_TYPE) {
            throw new IllegalArgumentException("message type " + type + " is reserved");
        }
        if (length < 0 || length > maxMessageLength) {
            throw new IllegalArgumentException("message length " + length + " outside [0, " + maxMessageLength + "]");
        }
        final int recordLength = HEADER_LENGTH + length;
        final int aligned = align(recordLength);
        final long tail = buffer.getLong(tailIndex);
        final int index = (int) tail & mask;
        final int toEnd = capacity - index;
        final int padding = aligned > toEnd ? toEnd : 0;
        // the record, any padding before it, and the zero header word after it
        final long required = padding + aligned + HEADER_LENGTH;
        if (tail + required - headCache > capacity) {
            headCache = buffer.getLongVolatile(headIndex);
            if (tail + required - headCache > capacity) {
                return false;
            }
        }
        int at = index;
        if (padding > 0) {
            buffer.putLong(0, 0L);
            buffer.putInt(index + 4, PADDING_TYPE);
            buffer.putIntOrdered(index, padding);
            at = 0;
        }
        buffer.putInt(at + 4, type);
        buffer.putBytes(at + HEADER_LENGTH, src, offset, length);
        buffer.putLong((at + aligned) & mask, 0L);
        buffer.putIntOrdered(at, recordLength);
        buffer.putLongOrdered(tailIndex, tail + padding + aligned);
        return true;
    }

    /**
     * Hands up to {@code limit} messages to the handler, each in place (the bytes stay the
     * writer's to reuse once the handler returns, even if it throws), and returns how many.
     * Only one thread may read.
     */
    int read(final MessageHandler handler, final int limit) {
        if (corrupt) {
            return 0;
        }
        long head = buffer.getLong(headIndex);
        int read = 0;
        while (read < limit) {
            final int index = (int) head & mask;
            final int length = buffer.getIntVolatile(index);
            if (length == 0) {
                break;
            }
            final int type = buffer.getInt(index + 4);
            if (type == PADDING_TYPE) {
                if (length != capacity - index) {
                    corrupt = true;
                    break;
                }
                head += length;
                buffer.putLongOrdered(headIndex, head);
                continue;
            }
            final int aligned = align(length);
            if (length < HEADER_LENGTH || length - HEADER_LENGTH > maxMessageLength || aligned > capacity - index) {
                corrupt = true;
                break;
            }
            read++;
            try {
                handler.onMessage(type, buffer, index + HEADER_LENGTH, length - HEADER_LENGTH);
            } finally {
                head += aligned;
                buffer.putLongOrdered(headIndex, head);
            }
        }
        return read;
    }

    private static int align(final int length) {
        return (length + ALIGNMENT - 1) & -ALIGNMENT;
    }
}
