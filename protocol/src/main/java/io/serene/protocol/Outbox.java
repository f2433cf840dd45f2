package io.serene.protocol;

import java.nio.ByteBuffer;

/**
 * Where a sans-IO engine puts the packets it emits; the transport behind it copies the bytes
 * before returning, so the engine may reuse its buffer at once.
 */
@FunctionalInterface
public interface Outbox {
    /** Sends {@code length} bytes at {@code offset} of {@code buffer} to the peer known as {@code port}. */
    void send(int port, ByteBuffer buffer, int offset, int length);

    /**
     * Sends the same packet to each of the first {@code count} ports of {@code ports} (a
     * multicast). A transport that can write the bytes once for all of them (shared memory's
     * broadcast buffer) does; by default each gets its own copy, in the order given.
     */
    default void multicast(final int[] ports, final int count, final ByteBuffer buffer, final int offset, final int length) {
        for (int i = 0; i < count; i++) {
            send(ports[i], buffer, offset, length);
        }
    }
}
