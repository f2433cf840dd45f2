package io.serene.transport;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The serving host's broadcast buffer: a multicast packet is written here once, and each
 * recipient gets a reference to it (its position and length) in its own one-to-one ring, then
 * parses the packet in place here, as a switch's multicast engine replicates a packet at the
 * egress instead of storing a copy per port.
 * <p>
 * Only the serving host writes; peers only read, following references. The buffer is an arena of
 * positions that only grow (a record's index is its position modulo the capacity; a record that
 * would cross the end starts the next lap instead). A record stays until every recipient has read
 * its reference: for each peer the writer keeps its <em>pins</em>, the records it referenced in
 * order with the position of the peer's ring just past the reference, and a pin is gone once the
 * ring's reader has passed that position. Space is reclaimed only when the buffer looks full. A
 * peer that stops reading (or has too many pins) holds its records, and multicasts then fall back
 * to a copy per recipient ({@link #allocate} returns -1): slower, never overwritten.
 */
final class BroadcastBuffer {
    /** Records start on a cache line of their own. */
    static final int ALIGNMENT = 64;
    /** Bytes of a reference in a peer's ring: the record's position (long) and length (int). */
    static final int REFERENCE_LENGTH = 12;
    /** References a peer may have outstanding before multicasts to it are copies (a power of two). */
    static final int MAX_PINS = 4096;

    private final UnsafeBuffer buffer;
    private final int capacity;
    private final int mask;
    /** The next free position (the writer's only). */
    private long tail;
    /** Every record before this position is free (refreshed by {@link #reclaim} when the buffer looks full). */
    private long free;

    /** A serving host's buffer over {@code capacity} bytes (a power of two) of a file it created. */
    BroadcastBuffer(final UnsafeBuffer buffer) {
        this.buffer = buffer;
        this.capacity = buffer.capacity();
        if (Integer.bitCount(capacity) != 1 || capacity < 64 * 1024) {
            throw new IllegalArgumentException("a broadcast buffer's capacity must be a power of two of at least 64 KiB, was "
                + capacity);
        }
        this.mask = capacity - 1;
    }

    int capacity() {
        return capacity;
    }

    /**
     * Copies {@code length} bytes into the buffer and returns their position, or -1 if there is
     * no room even after reclaiming what every peer has read ({@code peers}: the pins of each).
     */
    long write(final DirectBuffer src, final int offset, final int length, final Pins[] peers, final int peerCount) {
        long at = tail;
        final int index = (int) at & mask;
        if (index + length > capacity) {
            at += capacity - index;
        }
        final long end = at + align(length);
        if (end - free > capacity) {
            free = reclaim(peers, peerCount);
            if (end - free > capacity) {
                return -1;
            }
        }
        buffer.putBytes((int) at & mask, src, offset, length);
        tail = end;
        return at;
    }

    /** The oldest position some peer may still read: its oldest pin not yet passed by its ring's reader. */
    private long reclaim(final Pins[] peers, final int peerCount) {
        long oldest = tail;
        for (int i = 0; i < peerCount; i++) {
            final Pins pins = peers[i];
            if (pins != null) {
                pins.release();
                if (pins.size > 0) {
                    oldest = Math.min(oldest, pins.oldestRecord());
                }
            }
        }
        return oldest;
    }

    /** The index in the buffer of a reference's record, or -1 if it does not lie within the buffer. */
    static int indexOf(final long position, final int length, final int capacity) {
        final int index = (int) (position & (capacity - 1));
        return position >= 0 && length >= 0 && length <= capacity - index ? index : -1;
    }

    private static int align(final int length) {
        return (length + ALIGNMENT - 1) & -ALIGNMENT;
    }

    /**
     * The records one peer was given references to and has maybe not read yet, oldest first, each
     * with the position of the peer's ring just past its reference.
     */
    static final class Pins {
        private final SpscRing ring;
        private final long[] record = new long[MAX_PINS];
        private final long[] readPast = new long[MAX_PINS];
        private int head;
        private int size;

        /** The pins of the peer that reads {@code ring}. */
        Pins(final SpscRing ring) {
            this.ring = ring;
        }

        boolean full() {
            if (size == MAX_PINS) {
                release();
            }
            return size == MAX_PINS;
        }

        /** A reference to {@code position} was just written into the ring. */
        void add(final long position) {
            final int i = (head + size) & (MAX_PINS - 1);
            record[i] = position;
            readPast[i] = ring.writerPosition();
            size++;
        }

        int size() {
            return size;
        }

        /** Forgets the pins whose references the peer's reader has passed. */
        void release() {
            final long read = ring.readerPosition();
            while (size > 0 && readPast[head] <= read) {
                head = (head + 1) & (MAX_PINS - 1);
                size--;
            }
        }

        long oldestRecord() {
            return record[head];
        }
    }
}
