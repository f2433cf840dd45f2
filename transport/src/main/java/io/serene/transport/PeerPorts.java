package io.serene.transport;

import java.util.Arrays;

/**
 * The port numbers a host gives its peers, written once for every link: a port is
 * (generation &lt;&lt; 16) | index, and an index given to a new peer after its old one left comes
 * back with the next generation (14 bits of it), so nothing still holding the old number reaches
 * the new peer. No port has {@link #LINK_BIT} set: a {@link UdpBridge} marks its peers' with it.
 */
final class PeerPorts {
    /** Peers a host can hold at once: indexes fit in 16 bits. */
    static final int MAX_PEERS = 1 << 16;
    /** Set in the ports of a bridged link's peers, never in a host's own. */
    static final int LINK_BIT = 1 << 30;

    private int[] generation = new int[16];

    /** The index a port names. */
    static int index(final int port) {
        return port & 0xFFFF;
    }

    /** The current port of the peer at {@code index}. */
    int port(final int index) {
        if (index >= generation.length) {
            generation = Arrays.copyOf(generation, Math.max(2 * generation.length, Integer.highestOneBit(index) << 1));
        }
        return (generation[index] << 16) | index;
    }

    /** Retires the port of the peer at {@code index} and returns the one its next peer gets. */
    int reuse(final int index) {
        port(index);
        generation[index] = (generation[index] + 1) & 0x3FFF;
        return port(index);
    }

    /** Whether {@code port} is the current number of one of the first {@code peers} indexes. */
    boolean current(final int port, final int peers) {
        final int index = index(port);
        return port >= 0 && index < peers && port >>> 16 == generation[index];
    }
}
