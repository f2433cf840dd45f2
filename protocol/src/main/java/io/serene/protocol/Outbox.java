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
}
