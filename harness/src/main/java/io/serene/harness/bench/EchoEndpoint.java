package io.serene.harness.bench;

import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;

import java.nio.ByteBuffer;

/** The raw-UDP baseline's server: returns every packet to its sender unchanged. */
final class EchoEndpoint implements PacketEndpoint {
    private long echoed;

    @Override
    public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                         final long nowNs, final Outbox out) {
        out.send(port, buffer, offset, length);
        echoed++;
    }

    @Override
    public long onTimer(final long nowNs, final Outbox out) {
        return NO_DEADLINE;
    }

    long echoed() {
        return echoed;
    }
}
