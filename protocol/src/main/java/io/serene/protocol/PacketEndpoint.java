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

    /**
     * Whether a packet from a source the transport does not know yet may have a peer entry (a port
     * number, a place in the transport's table) and reach {@link #onPacket}: asked before the
     * transport allocates one, so junk from many sources fills no table. The packet is the endpoint's
     * to count as it counts a drop. Default: every packet. Must not throw.
     */
    default boolean admits(final ByteBuffer buffer, final int offset, final int length) {
        return true;
    }

    /** Does timer-driven and queued work; returns the next time it wants to be called, or NO_DEADLINE. */
    long onTimer(long nowNs, Outbox out);
}
