package io.serene.protocol;

import java.nio.ByteBuffer;

/**
 * A sans-IO protocol engine: packets and time go in, packets come out through an {@link Outbox}.
 * Transports (in-process, UDP, simulator) drive it from a single thread.
 */
public interface PacketEndpoint {
    /** Never-due deadline. */
    long NO_DEADLINE = Long.MAX_VALUE;

    /** Handles one received packet from the peer known as {@code port}. Must not throw. */
    void onPacket(int port, ByteBuffer buffer, int offset, int length, long nowNs, Outbox out);

    /** Does timer-driven and queued work; returns the next time it wants to be called, or NO_DEADLINE. */
    long onTimer(long nowNs, Outbox out);
}
